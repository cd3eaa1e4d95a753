"""A fresh process's first training step on an empty user DB (the shipped DB beneath), a find's cuDNN plans built as
NativePlans (new) or through the frontend's graph with the winner's native replay building its plan again (old:
MIOFIND_BENCH_NATIVE_FIND=0), alternating arms and order over rounds, after one discarded warm-up run.

    python3 first_ab.py OUT.json rounds model config [profile-dir]
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
from bench_models import first_iteration  # noqa: E402

out, rounds, model, config = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
prof_dir = sys.argv[5] if len(sys.argv) > 5 else None
rows = []


def run(arm: str, profile: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "MIOFIND_SYSTEM_DB"}
    env["MIOFIND_BENCH_NATIVE_FIND"] = "1" if arm == "new" else "0"
    with tempfile.TemporaryDirectory() as d:
        env["MIOFIND_DB"] = f"sqlite:///{os.path.join(d, 'finddb.sqlite')}"
        a = first_iteration(model, config, "miofind", env, profile)
    return {"arm": arm, "first_s": a["first_s"], "stats": a["stats"], "compile": a.get("compile")}


run("new")     # warm-up: the kernel cache and the process' files, discarded
for r in range(rounds):
    for arm in (("new", "old") if r % 2 == 0 else ("old", "new")):
        row = run(arm)
        row["round"] = r
        rows.append(row)
        print(f"round {r} {arm}: first {row['first_s']:.2f} s ({row['stats']['finds_run']} finds)", flush=True)
        with open(out, "w") as fh:
            json.dump(rows, fh, indent=1)
if prof_dir:
    os.makedirs(prof_dir, exist_ok=True)
    for arm in ("new", "old"):
        row = run(arm, os.path.join(prof_dir, f"{model}_{config}_{arm}.txt"))
        print(f"profiled {arm}: first {row['first_s']:.2f} s ({row['stats']['finds_run']} finds)", flush=True)
for arm in ("new", "old"):
    f = sorted(r["first_s"] for r in rows if r["arm"] == arm)
    print(f"{model} {config} {arm}: first {', '.join(f'{v:.2f}' for v in f)} s")
