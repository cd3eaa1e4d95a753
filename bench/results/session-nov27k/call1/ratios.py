"""Own best / cuDNN best (geomean over the problems of each preset, data type and direction) from the verified find
records of each FindDB given, over the keys of session-nov27j/prepared/other_keys.json (the five other FP16/BF16 NHWC
N=32 preset groups), and how often a GEMM solver is the own best.
python3 ratios.py DB [DB ...]"""
import json, math, os, sqlite3, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
from miofind.models import model_problems  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = set(json.load(open(os.path.join(HERE, "..", "..", "session-nov27j", "prepared", "other_keys.json"))))
MODELS = ("inception_v3", "mobilenet_v2", "vgg16", "resnet101", "unet")


def groups():
    for m in MODELS:
        for dt in ("FP16", "BF16"):
            seen = []
            for p in model_problems(m, batch=32, dtypes=(dt,), layouts=("NHWC",)):
                k = p.key()
                if k in KEYS and k not in seen:
                    seen.append(k)
            for d in "FBW":
                yield m, dt, d, [k for k in seen if k.endswith("-" + d)]


def ratio(c, k):
    rows = c.execute("select solver_id, time_ms from find_records where problem_key=? and verified=1", (k,)).fetchall()
    cud = [t for s, t in rows if s.startswith("ConvCudnn")]
    own = sorted((t, s) for s, t in rows if not s.startswith("ConvCudnn") and not s.startswith("ConvDirectNaive"))
    return (own[0][0] / min(cud), own[0][1].startswith("Gemm")) if cud and own else None


dbs = [sqlite3.connect(f"file:{f}?mode=ro", uri=True) for f in sys.argv[1:]]
print("preset        dtype dir  n  " + "  ".join(f"{os.path.basename(f)[:16]:>16} gemm" for f in sys.argv[1:]))
for m, dt, d, ks in groups():
    if not ks:
        continue
    cells = []
    for c in dbs:
        rs = [r for r in (ratio(c, k) for k in ks) if r]
        gm = math.exp(sum(math.log(r) for r, _ in rs) / len(rs)) if rs else float("nan")
        cells.append(f"{gm:16.4f} {sum(g for _, g in rs):4d}")
    print(f"{m:13s} {dt:5s} {d:3s} {len(ks):3d}  " + "  ".join(cells))
