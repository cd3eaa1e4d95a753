"""A disturbed measurement that spread little (every run slowed) escapes the q80/q20 check; its FP16/BF16 twin (the
same NHWC layer, the same solver) would show it. Prints the distribution of BF16 / FP16 time over the verified
find records of a FindDB with both twins (naive solvers left out) and the extremes, marking whether both records hold
the same config (cuDNN plans, tuned configs).
python3 twins.py DB"""
import sqlite3, statistics, sys

c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
R = {(k, s): (t, cfg) for k, s, t, cfg in
     c.execute("select problem_key, solver_id, time_ms, config from find_records where verified = 1")}
rat = []
for (k, s), (t, cfg) in R.items():
    if "-FP16-" in k and "NHWC" in k and not s.startswith("ConvDirectNaive"):
        twin = R.get((k.replace("-FP16-", "-BF16-"), s))
        if twin:
            rat.append((twin[0] / t, k, s, t, twin[0], cfg == twin[1]))
rat.sort()
print(f"{len(rat)} twin pairs; BF16 / FP16 median {statistics.median(r[0] for r in rat):.3f}")
for thr in (1.5, 2, 3):
    both = [r for r in rat if r[0] > thr or r[0] < 1 / thr]
    print(f"  beyond {thr}x either way: {len(both)} ({sum(r[5] for r in both)} with the same config in both)")
print("extremes (ratio, FP16 key, solver, FP16 us, BF16 us, configs):")
for r in rat[:8] + rat[-8:]:
    print(f"  {r[0]:.2f} {r[1]} {r[2]} {r[3] * 1e3:.1f} {r[4] * 1e3:.1f} {'same' if r[5] else 'different'}")
