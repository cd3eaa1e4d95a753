"""Why a fresh process finds a problem again (session nov30i call 3: wav2vec2_base AMP's second process found two
backward-data problems its first process had found): for each problem key given, the candidates, the user FindDB's
records and failures, and what the DB answer makes of them (``find.db_answer``: settled, solutions, complete).

    python why_refind.py sqlite:////tmp/u.sqlite KEY...
"""
import json
import sys

from miofind import find
from miofind.db import FindDB
from miofind.device import current_device
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.trust import is_trusted

url, keys = sys.argv[1], sys.argv[2:]
dev = current_device()
db = FindDB(url)
for k in keys:
    p = ProblemDescription.from_key(k)
    cands, _ = find.candidates(p, None)
    recs = db.lookup(dev.db_name, k)
    fails = db.find_failures(dev.db_name, k)
    settled, (sols, complete, layer) = find.db_answer(url, dev, p, cands, True, None)
    print(json.dumps({
        "key": k, "candidates": [s.id for s in cands],
        "records": [(r.solver_id, r.config, r.time_ms, r.verified, is_trusted(r, get_solver(r.solver_id),
                                                                               dev.cuda_version)) for r in recs],
        "failures": [(f.solver_id, f.config, f.stage, f.reason[:300]) for f in fails],
        "missing": sorted({s.id for s in cands} - {r.solver_id for r in recs} - set(settled)),
        "settled": sorted(settled), "answer": [s.solver_id for s in sols], "complete": complete, "layer": layer},
        default=str))
