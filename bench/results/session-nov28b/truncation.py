"""Why the Hopper TF32 solvers are off by default (MIOFIND_HOPPER_TF32): the relative error against the float64
reference that each TF32 record of the shipped DB's ResNet-50 N=32 NHWC problems carries (max_error, from the find's
verification on fresh random inputs), per solver; and the own best / cuDNN ratios with and without them.

    python bench/results/session-nov28b/truncation.py > bench/results/session-nov28b/truncation.txt
"""
import collections, math, sqlite3

HOPPER = ("ConvImplicitGemmHopperFwd", "ConvImplicitGemmHopperBwdTf32")
c = sqlite3.connect("file:finddb/sm_90-132.sqlite?mode=ro", uri=True)
rows = c.execute("select problem_key, solver_id, time_ms, max_error from find_records "
                 "where problem_key like '%NHWC-NHWC-NHWC-FP32-%\\_tf32' escape '\\' and verified=1").fetchall()
err = collections.defaultdict(list)
for k, s, t, e in rows:
    if e is not None:
        err[s].append(e)
print("relative error against float64, per solver (TF32 NHWC records):")
for s, v in sorted(err.items()):
    v = sorted(v)
    print(f"  {s:34s} {len(v):3d} records, median {v[len(v) // 2]:.2e}, max {v[-1]:.2e}")
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
for d in "FBW":
    recs = collections.defaultdict(dict)
    for k, s, t, e in rows:
        if k.endswith(f"-{d}_tf32"):
            recs[k][s] = t
    for label, drop in (("with the Hopper TF32 solvers", ()), ("without (the default)", HOPPER)):
        r = [min(t for s, t in x.items() if not s.startswith("ConvCudnn") and s not in drop) /
             min(t for s, t in x.items() if s.startswith("ConvCudnn")) for x in recs.values()]
        print(f"{d}: own best / cuDNN {label}: {gm(r):.3f} over {len(r)} problems, own faster in {sum(v < 1 for v in r)}")
