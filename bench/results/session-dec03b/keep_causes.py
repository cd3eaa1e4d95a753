"""Session dec03b, call 1's keep check (bench/keep_check.py, call1/keep.jsonl): why a first answer was not the final
fastest. Each deferred solver is put to its cause, as `find.predicted_deferrals` gives it with the shipped model
(the one the device's finds used): a predicted loser (MIOFIND_PREDICT_DEFER=2, the solver's own factor where lower),
the surplus beyond MIOFIND_PREDICT_KEEP=3, or neither, which is a solver with no generic build in the installed cache
(deferred until compiled). Then the first answer as it would be with one cause alone, against the final answer; and
the final times against session dec03a's call 3, which timed every solver of these problems (sync builds).

    python bench/results/session-dec03b/keep_causes.py > bench/results/session-dec03b/keep_causes.txt
"""
import collections
import gzip
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from miofind import costmodel as cm  # noqa: E402
from miofind.device import DeviceInfo  # noqa: E402
from miofind.find import predicted_deferrals  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

HERE = Path(__file__).resolve().parent
DEV = DeviceInfo("NVIDIA H200", "sm_90", 132)
rows = [json.loads(line) for line in open(HERE / "call1/keep.jsonl")]
dbs = SimpleNamespace(system=SimpleNamespace(path=ROOT / "finddb/sm_90-132.sqlite"))
model = cm.model_for_db(dbs.system.path)
print(f"{len(rows)} problems of call 1's keep check; model {model.version}")

with tempfile.TemporaryDirectory() as tmp:
    db = Path(tmp) / "sweep23.sqlite"
    with gzip.open(ROOT / "bench/results/session-dec03a/call3/sweep23.sqlite.gz") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(db)
    truth = collections.defaultdict(dict)
    for key, sid, ms in con.execute("select problem_key, solver_id, time_ms from find_records"):
        truth[key][sid] = ms
    con.close()

causes = collections.Counter()
fastest_cause = collections.Counter()
mismatch = 0
alone = {c: [] for c in ("actual", "model only (loser + surplus)", "compile only", "loser only", "none")}
agree = []
model_caused = []   # a line for each problem whose final fastest the model deferred
for r in rows:
    if not (r["first"] and r["final"]):
        continue
    p = cm.parse_problem_key(r["key"])
    final = dict(map(tuple, r["final"]))
    measured = {s for s, _ in r["first"]}
    cands = [get_solver(s) for s in sorted(measured | set(r["deferred"]))]
    losers, surplus = predicted_deferrals(p, dbs, DEV, cands, 2.0, 3, {})
    compile_ = set(r["deferred"]) - losers.keys() - surplus.keys()
    if (len(set(r["deferred"]) & losers.keys()), len(set(r["deferred"]) & surplus.keys())) != (
            r["predicted_deferred"], r["surplus_deferred"]):
        mismatch += 1
    for s in r["deferred"]:
        causes["loser" if s in losers else "surplus" if s in surplus else "compile"] += 1
    best_sid = min(final, key=final.get)
    best = final[best_sid]
    if best_sid in r["deferred"]:
        fastest_cause["loser" if best_sid in losers else "surplus" if best_sid in surplus else "compile"] += 1
    if best_sid in losers or best_sid in surplus:
        kept = min((s for s in final if s not in losers and s not in surplus), key=final.get)
        if best_sid in losers:
            why = f"loser, predicted {losers[best_sid]:.2f}x"
        else:
            place, ranked, ratio = surplus[best_sid]
            why = f"surplus, place {place + 1} of {ranked}, predicted {ratio:.2f}x"
        model_caused.append(f"- {r['key']}: {best_sid} {final[best_sid]:.4f} ms ({why}); without it {kept} "
                            f"{final[kept]:.4f} ms ({final[kept] / final[best_sid]:.2f}x)")

    def first_with(out):
        left = [final[s] for s in final if s not in out]
        return min(left) / best if left else float("nan")

    alone["actual"].append(first_with(set(r["deferred"])))
    alone["model only (loser + surplus)"].append(first_with(set(losers) | set(surplus)))
    alone["compile only"].append(first_with(compile_))
    alone["loser only"].append(first_with(set(losers)))
    alone["none"].append(1.0)
    t = truth.get(r["key"])
    if t and set(t) >= set(final):
        agree.append((min(final, key=final.get) == min(t, key=t.get),
                      sorted(final[s] / t[s] for s in final)[len(final) // 2]))

print(f"deferred solvers by cause: {dict(causes)}; rows whose counts differ from the find's own: {mismatch}")
print(f"the final fastest was deferred in {sum(fastest_cause.values())} problems, by cause: {dict(fastest_cause)}")
print("\n| first answer measured without | problems | fastest postponed | first answer's mean slowdown | worst |")
print("| --- | ---: | ---: | ---: | ---: |")
for name, v in alone.items():
    v = [x for x in v if x == x]
    print(f"| {name} | {len(v)} | {sum(x > 1 for x in v)} ({100 * sum(x > 1 for x in v) / len(v):.1f}%) | "
          f"{100 * (sum(v) / len(v) - 1):.2f}% | {max(v):.2f}x |")
same = sum(a for a, _ in agree)
print(f"\nagainst call 3 (every solver timed, sync builds): {len(agree)} problems with every final solver; same "
      f"fastest in {same} ({100 * same / max(len(agree), 1):.1f}%); median over problems of the median final / "
      f"call-3 time {sorted(m for _, m in agree)[len(agree) // 2]:.3f}")

print("\nThe problems whose final fastest the model deferred (solver: final ms, the model's ratio to its fastest):")
print("\n".join(model_caused))
