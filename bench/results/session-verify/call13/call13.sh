#!/usr/bin/env bash
# Session verify, call 13 (issue 17): call13/yardstick.py, the logits of cuDNN's heuristic choice and of miofind.torch
# against cuDNN benchmark mode's in batch-1 inference (FP32, AMP), calibrated batch-norm statistics.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
ls miofind/_native*.so > /dev/null 2>&1 || gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
R=$OUT/r; mkdir -p $R
timeout 200 python3 bench/results/session-verify/call13/yardstick.py $R/yardstick.json > $R/yardstick.log 2>&1
echo "rc=$?"; grep -v Warn $R/yardstick.log | tail -6
cd $OUT && tar czf r.tgz r && rm -rf r
