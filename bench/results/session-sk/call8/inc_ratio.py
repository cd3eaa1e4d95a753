"""Geomean own best / cuDNN and Hopper / cuDNN over Inception-v3's N=32 FP16 NHWC problems, per direction, per DB file."""
import math, sqlite3, sys
from miofind.models import model_layers
from miofind.problem import ProblemDescription as P
for db in sys.argv[1:]:
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    for d in "FBW":
        r, rh = [], []
        for la in model_layers("inception_v3"):
            p = P.make(d, n=32, c=la.c, k=la.k, in_size=la.in_size, filter_size=la.filter_size, pads=la.pads,
                       strides=la.strides, layout="NHWC", dtype="FP16")
            rows = c.execute("select solver_id, time_ms from find_records where problem_key=? and verified=1", (p.key(),)).fetchall()
            cud = [t for s, t in rows if s.startswith("ConvCudnn")]
            own = [t for s, t in rows if not s.startswith("ConvCudnn")]
            hop = [t for s, t in rows if "Hopper" in s]
            if cud and own:
                r.append(math.log(min(own) / min(cud)))
                if hop:
                    rh.append(math.log(min(hop) / min(cud)))
        print(f"{db.split('/')[-1]} FP16 {d}: {len(r)} problems, own best / cuDNN {math.exp(sum(r) / len(r)):.3f}, "
              f"Hopper / cuDNN {math.exp(sum(rh) / len(rh)):.3f} ({len(rh)})")
