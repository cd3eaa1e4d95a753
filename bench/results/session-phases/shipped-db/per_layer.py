"""Per ResNet-50 N=32 NHWC layer, from the verified records of two FindDB files: the best own solver over
cuDNN's best plan, with the own winner, before and after (the keys of ../../shipped-db-hopper-tuned/).

    python bench/results/session-phases/shipped-db/per_layer.py BEFORE.sqlite AFTER.sqlite [FP16|BF16] [B|F|W]
"""
import importlib.util
import math
import os
import sqlite3
import sys

_spec = importlib.util.spec_from_file_location(
    "ratio", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shipped-db-hopper-tuned", "ratio.py"))
_ratio = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ratio)
keys = _ratio.keys           # the ResNet-50 N=32 keys of ../../shipped-db-hopper-tuned/tune_*.json


def best(c, k):
    rows = c.execute("select solver_id, time_ms from find_records where problem_key=? and verified=1", (k,)).fetchall()
    cud = min((t for s, t in rows if s.startswith("ConvCudnn")), default=None)
    own = min(((t, s) for s, t in rows if not s.startswith("ConvCudnn")), default=None)
    return (own[0] / cud, own[1]) if cud and own else None


before, after = (sqlite3.connect(f"file:{f}?mode=ro", uri=True) for f in sys.argv[1:3])
dtype = sys.argv[3] if len(sys.argv) > 3 else "FP16"
d = sys.argv[4] if len(sys.argv) > 4 else "B"
lb, la = [], []
print(f"{dtype} {d}: own best / cuDNN best per layer, before -> after (own winner after)")
for k in keys(dtype, d):
    b, a = best(before, k), best(after, k)
    if b and a:
        lb.append(math.log(b[0])); la.append(math.log(a[0]))
        print(f"  {k.split('-NHWC')[0]:48s} {b[0]:5.2f} -> {a[0]:5.2f}  {a[1]}")
print(f"geomean over {len(la)} layers: {math.exp(sum(lb) / len(lb)):.3f} -> {math.exp(sum(la) / len(la)):.3f}")
