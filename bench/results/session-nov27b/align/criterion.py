"""The nested criterion of session-nov27 (declared there before any outer figure was read): the ranking pick's mean
slowdown (and top-1) on the out-of-fold rows of each outer split's training presets, averaged over the five outer
splits. Usage: python criterion.py VARIANT.pkl ... (costmodel_nested.py's pickles)."""
import pickle
import statistics
import sys


def pick_stats(problems):
    slow = []
    for p in problems:
        rows = p["rows"]
        best = min(r[1] for r in rows)
        slow.append(max(rows, key=lambda r: r[3])[1] / best)   # the highest ranking score (fallback: -log10 today)
    return sum(s <= 1 + 1e-12 for s in slow) / len(slow), statistics.fmean(slow) - 1, max(slow)


for path in sys.argv[1:]:
    d = {k: v for k, v in pickle.load(open(path, "rb")).items() if not k.startswith("_")}
    per = {o: pick_stats(v["oof"]) for o, v in d.items()}
    test = {o: pick_stats(v["test"]) for o, v in d.items()}
    print(f"{path}: oof mean slowdown (mean of {len(per)}) {statistics.fmean(v[1] for v in per.values()):.2%}, "
          f"oof top-1 {statistics.fmean(v[0] for v in per.values()):.1%}")
    print("   per outer split, oof top-1 / mean slowdown / worst: " + "; ".join(
        f"{o}: {v[0]:.1%} / {v[1]:.2%} / {v[2]:.2f}x" for o, v in per.items()))
    print("   outer test (unweighted per split) top-1 / mean slowdown / worst: " + "; ".join(
        f"{o}: {v[0]:.1%} / {v[1]:.2%} / {v[2]:.2f}x" for o, v in test.items()))
