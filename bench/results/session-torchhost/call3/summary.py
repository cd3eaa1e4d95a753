"""Per process of call 3: each config's cuDNN ms / miofind ms = speedup, from the rows bench_models printed in its log.

    python summary.py DIR
"""
import json
import os
import sys

d = sys.argv[1]
for name in sorted(f for f in os.listdir(d) if f.endswith(".log") and f != "tests.log"):
    rows = [json.loads(line) for line in open(os.path.join(d, name)) if line.startswith("{") and '"speedup"' in line]
    print(name[:-4], "  ".join(f"{r['config']}: {r['cudnn_ms']:.2f}/{r['miofind_ms']:.2f}={r['speedup']:.3f}x" for r in rows))
