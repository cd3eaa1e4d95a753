"""Summarise bench_layer_choice.py's rows: per model and config, the sums over the model's layers (each layer
times its count) of host and burst µs for miofind.torch's policy pick, the fastest record (GPU), the candidate
with the least burst time, and cuDNN; then the per-layer rows where the policy's pick costs more than another's."""
import json
import sys
from pathlib import Path

root = Path(sys.argv[1])
for f in sorted(root.glob("*/bench_layer_choice.json")):
    rows = json.loads(f.read_text())["rows"]
    tot = {k: [0.0, 0.0] for k in ("policy", "fastest", "least-burst", "least-host", "cudnn")}
    lines = []
    for r in rows:
        n = r["count"]
        cands = [c for c in r["candidates"] if "error" not in c]
        pol = r["policy"]
        picks = {"policy": pol, "fastest": cands[0] if cands else pol,
                 "least-burst": min(cands, key=lambda c: c["burst_us"]) if cands else pol,
                 "least-host": min(cands, key=lambda c: c["host_us"]) if cands else pol, "cudnn": r["cudnn"]}
        for k, c in picks.items():
            tot[k][0] += n * c.get("host_us", 0)
            tot[k][1] += n * c.get("burst_us", 0)
        lb = picks["least-burst"]
        if pol.get("burst_us", 0) > lb["burst_us"] + 1.0:
            lines.append(f"  {r['problem'][:80]:80s} x{n} policy {pol['solver']} {pol.get('path')} "
                         f"h{pol.get('host_us')} b{pol.get('burst_us')} g{pol.get('gpu_us')} | best {lb['solver']} "
                         f"{lb['path']} h{lb['host_us']} b{lb['burst_us']} g{lb['gpu_us']}")
    print(f"{f.parent.name}: {len(rows)} layers; sums over layers x count, host / burst us:")
    for k, (h, b) in tot.items():
        print(f"  {k:12s} {h:8.1f} {b:8.1f}")
    print("\n".join(lines))
