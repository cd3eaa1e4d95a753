"""Session epi, call 4: how much of the new / old Hopper W record times is the host rather than the configs: the
problems whose record ran the same config before and after (new / old there is the host and the run), against those
whose record is now an alternate (or a new tuned config).
    python host_check.py OLD.sqlite NEW.sqlite [SOLVER]  (default ConvImplicitGemmHopperWrw)"""
import json
import math
import sqlite3
import sys

SID = sys.argv[3] if len(sys.argv) > 3 else "ConvImplicitGemmHopperWrw"


def load(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    return {k: (t, json.loads(c) if c else None) for k, t, c in
            db.execute("select problem_key, time_ms, config from find_records where solver_id = ?", (SID,))}


old, new = load(sys.argv[1]), load(sys.argv[2])
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")  # noqa: E731
same = [new[k][0] / old[k][0] for k in new if k in old and new[k][1] == old[k][1]]
diff = [new[k][0] / old[k][0] for k in new if k in old and new[k][1] != old[k][1]]
print(f"same config before and after: {len(same)} problems, new / old geomean {gm(same):.3f} (the host and the run)")
print(f"another config now: {len(diff)} problems, new / old geomean {gm(diff):.3f}; "
      f"over the same-config ratio {gm(diff) / gm(same):.3f} (the configs)")
