"""A fresh process's first training step, the steps after it, the background work drained and ten steady steps, on an empty user DB (the shipped DB beneath), with
this tree's defaults (new) against one environment setting (old), alternating arms and order over rounds, after one
discarded warm-up run.

    python3 first_env_ab.py OUT.json rounds model config after_steps NAME=VALUE
"""
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
from bench_models import first_iteration  # noqa: E402

out, rounds, model, config, after = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
name, value = sys.argv[6].split("=", 1)
rows = []


def run(arm: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MIOFIND_SYSTEM_DB", name)}
    env["MIOFIND_BENCH_AFTER_STEPS"] = after
    env["MIOFIND_BENCH_DRAIN"] = "1"
    if arm == "old":
        env[name] = value
    with tempfile.TemporaryDirectory() as d:
        env["MIOFIND_DB"] = f"sqlite:///{os.path.join(d, 'finddb.sqlite')}"
        a = first_iteration(model, config, "miofind", env)
    return {"arm": arm, **a}


run("new")     # warm-up: the kernel cache and the process' files, discarded
for r in range(rounds):
    for arm in (("new", "old") if r % 2 == 0 else ("old", "new")):
        row = run(arm)
        row["round"] = r
        rows.append(row)
        a = row.get("after_ms") or [0.0]
        st = row.get("steady_ms") or [0.0]
        print(f"round {r} {arm}: first {row['first_s']:.2f} s ({row['stats']['finds_run']} finds, "
              f"{row['stats'].get('replaced')} replaced), next {len(a)} steps {sum(a) / 1e3:.2f} s "
              f"(last 5 median {statistics.median(a[-5:]):.1f} ms), background drained in {row.get('drain_s', 0):.2f} s, "
              f"then steady median {statistics.median(st):.1f} ms", flush=True)
        with open(out, "w") as fh:
            json.dump(rows, fh, indent=1)
for arm in ("new", "old"):
    f = sorted(r["first_s"] for r in rows if r["arm"] == arm)
    t = sorted(r["first_s"] + sum(r.get("after_ms") or []) / 1e3 for r in rows if r["arm"] == arm)
    d = sorted(r["first_s"] + sum(r.get("after_ms") or []) / 1e3 + r.get("drain_s", 0) for r in rows if r["arm"] == arm)
    st = sorted(statistics.median(r.get("steady_ms") or [0.0]) for r in rows if r["arm"] == arm)
    print(f"{model} {config} {arm}: first {', '.join(f'{v:.2f}' for v in f)} s; first + {after} steps "
          f"{', '.join(f'{v:.2f}' for v in t)} s; + the drain {', '.join(f'{v:.2f}' for v in d)} s; "
          f"steady median {', '.join(f'{v:.1f}' for v in st)} ms")
