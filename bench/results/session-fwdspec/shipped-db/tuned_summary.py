"""From the tune runs' JSON in this folder: tuned layers, how many picked WSPEC = 1, and the geomean of default
time over tuned time: python3 bench/results/session-fwdspec/shipped-db/tuned_summary.py"""
import glob
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
print("per tune run: tuned layers, how many picked WSPEC = 1, geomean default time / tuned time (from tune_*.json)")
for f in sorted(glob.glob(os.path.join(HERE, "tune_*.json"))):
    d = json.load(open(f))
    s = [v for x in d["outcomes"] for v in x["solvers"] if v.get("status") == "tuned"]
    ws = sum(1 for v in s if v["config"].get("WSPEC") == 1)
    g = math.exp(sum(math.log(v["default_time_ms"] / v["time_ms"]) for v in s) / len(s))
    print(f"{os.path.basename(f):20s} tuned {len(s):2d}  WSPEC {ws:2d}  default/tuned {g:.3f}  {d['seconds']:.0f} s")
