"""Call 2's sweep (out/sweep_gemm.json.gz): GemmWrw1x1_stride1 on ResNet-50's nine 1x1 stride-1 W layers (FP16 NHWC,
N=32, an H200), per layer its shipped-DB config (tuned on an H100), its default ({"LT": 0}, the heuristic's first) and
its best config, each over cuDNN's best plan, isolated times in our harness. Usage: python db_vs_default.py"""
import gzip, json, math, sqlite3
from pathlib import Path

HERE = Path(__file__).resolve().parent
d = json.load(gzip.open(HERE / "out/sweep_gemm.json.gz"))
db = sqlite3.connect(f"file:{HERE.parents[3] / 'finddb/sm_90-132.sqlite'}?mode=ro", uri=True)
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
cols = [[], [], []]
for r in d["rows"]:
    (cfg,), = db.execute("select config from perf_records where problem_key=? and solver_id='GemmWrw1x1_stride1'",
                         (r["key"],)).fetchall()
    cfg = json.loads(cfg)
    cud = min(c["isolated_ms"] for c in r["cudnn"])
    ours = {json.dumps(o["cfg"], sort_keys=True): o["isolated_ms"] for o in r["ours"]}
    row = (ours[json.dumps(cfg, sort_keys=True)] / cud, ours[json.dumps({"LT": 0})] / cud, min(ours.values()) / cud)
    for c, v in zip(cols, row):
        c.append(v)
    print(f"{r['layer']:24s} shipped {json.dumps(cfg):32s} {row[0]:.3f}  default {row[1]:.3f}  best {row[2]:.3f}")
print(f"geomean: shipped config {g(cols[0]):.3f}, default {g(cols[1]):.3f}, best {g(cols[2]):.3f} (9 layers)")
