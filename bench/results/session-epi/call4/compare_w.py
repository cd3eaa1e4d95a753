"""Session epi, call 4: the Hopper W records of the shipped DB before (git's finddb/sm_90-132.sqlite) and after
(call 4's DB): per problem the record's time, the fastest solver, and the fastest time of the problem; with a third
argument another solver of the same direction's problems (call 5: ConvImplicitGemmHopperFwd).
    python compare_w.py OLD.sqlite NEW.sqlite [SOLVER]"""
import collections
import math
import sqlite3
import sys

SID = sys.argv[3] if len(sys.argv) > 3 else "ConvImplicitGemmHopperWrw"


def load(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out = collections.defaultdict(dict)
    d = "F" if "Fwd" in SID else "B" if "Bwd" in SID else "W"
    for k, s, t in db.execute("select problem_key, solver_id, time_ms from find_records where problem_key like ?", (f"%-{d}",)):
        out[k][s] = t
    return out


old, new = load(sys.argv[1]), load(sys.argv[2])
keys = sorted(k for k in new if SID in new[k] and SID in old.get(k, {}))
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
r = [new[k][SID] / old[k][SID] for k in keys]
print(f"{len(keys)} problems with a {SID} record before and after; new / old record time: geomean {gm(r):.3f}, "
      f"median {sorted(r)[len(r) // 2]:.3f}, {sum(x < 0.95 for x in r)} faster by 5% or more, {sum(x > 1.05 for x in r)} slower by 5% or more")
for group, sel in (("all", lambda k: True), ("FP16", lambda k: "FP16" in k), ("BF16", lambda k: "BF16" in k),
                   ("batch 32", lambda k: k.split("-")[7] == "32"), ("batch 1", lambda k: k.split("-")[7] == "1")):
    ks = [k for k in keys if sel(k)]
    win_o = sum(min(old[k], key=old[k].get) == SID for k in ks)
    win_n = sum(min(new[k], key=new[k].get) == SID for k in ks)
    best = [min(new[k].values()) / min(old[k].values()) for k in ks]
    h = [new[k][SID] / min(t for s, t in new[k].items() if s != SID) for k in ks if len(new[k]) > 1]
    print(f"{group:8s} ({len(ks)}): {SID} fastest in {win_o} before, {win_n} after; the problem's fastest time "
          f"new / old geomean {gm(best):.3f} (min {min(best):.3f}); {SID} / the best other solver, after: geomean {gm(h):.3f}")
