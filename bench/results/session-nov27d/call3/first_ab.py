"""A fresh process's first MobileNetV3-Large AMP training step, then a second process on the user DB the first
filled, with stored cuDNN plans prepared as NativePlans (new) and through the frontend's graph (old:
MIOFIND_BENCH_NATIVE_FIRST=0), alternating arms and order over rounds, after one discarded warm-up pair.

    python3 first_ab.py OUT.json [rounds] [model] [config]
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
from bench_models import first_iteration  # noqa: E402

out, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
model = sys.argv[3] if len(sys.argv) > 3 else "mobilenet_v3_large"
config = sys.argv[4] if len(sys.argv) > 4 else "train32-amp"
rows = []


def pair(arm: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "MIOFIND_SYSTEM_DB"}
    env["MIOFIND_BENCH_NATIVE_FIRST"] = "1" if arm == "new" else "0"
    with tempfile.TemporaryDirectory() as d:
        env["MIOFIND_DB"] = f"sqlite:///{os.path.join(d, 'finddb.sqlite')}"
        a = first_iteration(model, config, "miofind", env)
        b = first_iteration(model, config, "miofind", env)
    return {"arm": arm, "first_s": a["first_s"], "second_s": b["first_s"], "first_stats": a["stats"],
            "second_stats": b["stats"], "first_compile": a.get("compile"), "second_compile": b.get("compile")}


pair("new")     # warm-up: the kernel cache and the process' files, discarded
for r in range(rounds):
    for arm in (("new", "old") if r % 2 == 0 else ("old", "new")):
        row = pair(arm)
        row["round"] = r
        rows.append(row)
        print(f"round {r} {arm}: first {row['first_s']:.2f} s ({row['first_stats']['finds_run']} finds), "
              f"second {row['second_s']:.2f} s ({row['second_stats']['finds_run']} finds)", flush=True)
        with open(out, "w") as fh:
            json.dump(rows, fh, indent=1)
for arm in ("new", "old"):
    f = sorted(r["first_s"] for r in rows if r["arm"] == arm)
    s = sorted(r["second_s"] for r in rows if r["arm"] == arm)
    print(f"{arm}: first {', '.join(f'{v:.2f}' for v in f)} s; second {', '.join(f'{v:.2f}' for v in s)} s")
