#!/usr/bin/env bash
# Issue 17 (call 2): the cuDNN-backed Entries of ResNet-50 steps (their execute path and host us, fixed and
# alternating pointers, round-robin) and the Hopper tensor-map encodes per training step (diag.py).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
D=bench/results/session-torchhost/call2
timeout 400 python3 $D/diag.py $OUT/diag.json infer1-fp32,train32-fp32,train32-amp > $OUT/diag.log 2>&1; echo "diag rc=$?"
grep -v '"key"' $OUT/diag.log | tail -20
python3 - $OUT/diag.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c, r in d["configs"].items():
    for e in r["cudnn_entries"]:
        print(c, e["solver"], e["plan"], e["path"][:40], f"{e['fixed_us']:.1f} {e['alternating_us']:.1f}", e["key"])
PY
