"""Call 2's keys files, corrected once (CPU): the first version of bench/unseen_models.py keyed B and W by the F key
with its last character changed, so B/W keys were wrong and a grouped F key ("..-F_g116") lost its last digit
("..-F_g11F"). From the measured DB's keys: each F problem's model, by its own key or (grouped) by its key less the
last character, given to its B and W problems. Writes call2/keys.json ({problem key: model}), which
`bench/unseen_models.py score --keys` reads.

    python bench/results/session-nov27b/call2/rekey.py <call 2's DB, gunzipped>
"""
import json
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from miofind.problem import ProblemDescription  # noqa: E402

here = Path(__file__).parent
old = {}
for f in ("keys32.json", "keys1.json"):
    old.update(json.loads((here / "r" / f).read_text()))
stem = {k[:-1]: m for k, m in old.items()}
keys = {}
for (k,) in sqlite3.connect(sys.argv[1]).execute("select distinct problem_key from find_records"):
    p = ProblemDescription.from_key(k)
    if p.direction != "F":
        continue
    m = old.get(k) or stem.get(k[:-1])
    if m is None:
        raise SystemExit(f"{k}: no model")
    for d in "FBW":
        keys[p.with_direction(d).key()] = m
(here / "keys.json").write_text(json.dumps(keys, indent=0, sort_keys=True) + "\n")
print(len(keys), "keys")
