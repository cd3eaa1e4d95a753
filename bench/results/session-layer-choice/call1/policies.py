"""Offline: which choice rule, given each candidate's GPU time (FindDB) and a host-time estimate from its C++ path
(kernels, library kernels, library calls, or the Python path), picks the layers' cheapest calls. Sums over a model's
layers (x count) of the picks' measured host, burst and GPU µs, per rule, from bench_layer_choice.py's rows."""
import json
import re
import sys
from pathlib import Path

# host µs of a call by its C++ path: a fit over call 1's 673 measured candidates (base, own kernel, library kernel,
# library call, Python path)
BASE, KERNEL, LIB, CALL, PY = 9.7, 3.7, 4.4, 5.2, 16.4


def host_est(path: str) -> float:
    if path == "python":
        return BASE + PY
    k = int(re.match(r"(\d+)k", path).group(1))
    calls = int(re.search(r"(\d+)call", path).group(1)) if "call" in path else 0
    lib = int(re.search(r"(\d+)lib", path).group(1)) if "lib" in path else 0
    return BASE + KERNEL * (k - calls - lib) + LIB * lib + CALL * calls


RULES = {
    "gpu": lambda g, h: g,
    "gpu+py30": lambda g, h: g + (30 if h >= BASE + PY else 0),
    "max(g,h)": lambda g, h: max(g, h),
    "g+h": lambda g, h: g + h,
    "g+h/2": lambda g, h: g + h / 2,
    "oracle-burst": None,
}
root = Path(sys.argv[1])
print(f"{'config':28s} " + " ".join(f"{k:>22s}" for k in RULES))
for f in sorted(root.glob("*/bench_layer_choice.json")):
    rows = json.loads(f.read_text())["rows"]
    out = {}
    for name, rule in RULES.items():
        h = b = g = 0.0
        for r in rows:
            cands = [c for c in r["candidates"] if "host_us" in c]
            if not cands:
                continue
            if rule is None:
                pick = min(cands, key=lambda c: c["burst_us"])
            else:
                pick = min(cands, key=lambda c: rule(c["gpu_us"], host_est(c["path"])))
            h += r["count"] * pick["host_us"]
            b += r["count"] * pick["burst_us"]
            g += r["count"] * pick["gpu_us"]
        out[name] = f"{h:6.0f}/{b:6.0f}/{g:5.0f}"
    print(f"{f.parent.name:28s} " + " ".join(f"{v:>22s}" for v in out.values()))
print("each: host / burst / GPU µs, summed over the layers x count")
