"""Why the Hopper TF32 solvers are off by default (MIOFIND_HOPPER_TF32): the relative error against the float64
reference that each TF32 record of ResNet-50's N=32 NHWC problems carries (max_error, from the find's verification on
fresh random inputs), per solver; and the own best / cuDNN ratios with and without them. The records are the shipped DB's
after calls 3 and 4 (tf32_nhwc_records.json.gz: every column); the shipped file keeps those of the other solvers only
(with the switch off the Hopper ones are not applicable, and the DB check admits applicable records only).

    python bench/results/session-nov28b/truncation.py > bench/results/session-nov28b/truncation.txt
"""
import collections, gzip, json, math, os

HOPPER = ("ConvImplicitGemmHopperFwd", "ConvImplicitGemmHopperBwdTf32")
dump = json.load(gzip.open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf32_nhwc_records.json.gz"), "rt"))
col = {c: i for i, c in enumerate(dump["columns"])}
rows = [(r[col["problem_key"]], r[col["solver_id"]], r[col["time_ms"]], r[col["max_error"]]) for r in dump["rows"]
        if r[col["verified"]]]
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
