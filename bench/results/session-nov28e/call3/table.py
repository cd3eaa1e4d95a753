"""Per layer and geomean, from call 3's sweeps (isolated kernel time over cuDNN's best NCHW plan, same harness and
buffers): the NCHW wrapper at its find configs, the other own solvers timed (the Ampere implicit GEMM, the GEMM
solvers: the own best before the wrappers), and the best own of all.  python3 table.py > table.txt"""
import json, math, os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "r")


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


for s in ("resnet50", "nonresnet"):
    for d in "FBW":
        J = json.load(open(os.path.join(HERE, f"{s}_{d}.json")))
        wr, prev, best = [], [], []
        print(f"\n{s} {d} ({J['device']})\n  layer                          cuDNN us  wrapper  before  own best")
        for row in J["rows"]:
            if not row["cudnn"]:
                continue
            cb = min(r["isolated_ms"] for r in row["cudnn"])
            w = min([r["isolated_ms"] for r in row["ours"]] + [r["isolated_ms"] for k, v in row["others"].items()
                                                                  if k.endswith("Nchw") for r in v])
            o = min((r["isolated_ms"] for k, v in row["others"].items() if not k.endswith("Nchw") for r in v),
                    default=float("inf"))
            wr.append(w / cb); prev.append(o / cb); best.append(min(w, o) / cb)
            print(f"  {row['layer']:30s} {cb * 1e3:8.1f}  {w / cb:7.3f}  {o / cb:6.3f}  {min(w, o) / cb:8.3f}")
        print(f"  geomean over {len(wr)} layers:           {gm(wr):7.3f}  {gm(prev):6.3f}  {gm(best):8.3f}")
