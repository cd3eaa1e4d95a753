"""ResNet-50 N=32 NHWC FP32 problems with TF32 math in a FindDB file (call 3 adds them to the shipped DB): per direction,
our best solver's time over cuDNN's best plan and the Hopper TF32 solver's (forward; backward data from call 4 on)
over cuDNN's, both measured by the same find on
the same buffers (verified records only), geomean; the find's picks.

    python bench/results/session-nov28b/call3/tf32_nhwc_ratios.py DB
"""
import collections, math, sqlite3, sys

from miofind.models import model_problems


def main(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")  # noqa: E731
    for d in "FBW":
        own, hop, picks, n = [], [], collections.Counter(), 0
        for p in model_problems("resnet50", batch=32, layouts=("NHWC",), directions=d, tf32=True):
            rec = dict(c.execute("select solver_id, time_ms from find_records where problem_key=? and verified=1",
                                 (p.key(),)).fetchall())
            if not rec:
                continue
            n += 1
            picks[min(rec, key=rec.get)] += 1
            cud = [t for s, t in rec.items() if s.startswith("ConvCudnn")]
            mine = [t for s, t in rec.items() if not s.startswith("ConvCudnn")]
            if cud and mine:
                own.append(min(mine) / min(cud))
            hs = {"F": "ConvImplicitGemmHopperFwd", "B": "ConvImplicitGemmHopperBwdTf32"}.get(d)
            if cud and hs in rec:
                hop.append(rec[hs] / min(cud))
        print(f"{d}: {n} problems with records; own best / cuDNN {gm(own):.3f} ({len(own)}), own faster in "
              f"{sum(r < 1 for r in own)}; Hopper TF32 / cuDNN {gm(hop):.3f} ({len(hop)}); picks: "
              + ", ".join(f"{s} {k}" for s, k in picks.most_common(5)))


if __name__ == "__main__":
    main(sys.argv[1])
