#!/usr/bin/env bash
# Call 7: cuDNN-backed invokers inside AMP training steps against the same invokers alone (diag.py).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
D=bench/results/session-torchhost/call7
for m in inception_v3 mobilenet_v2; do
  timeout 200 python3 $D/diag.py $OUT/diag-$m.json $m > $OUT/diag-$m.log 2>&1; echo "$m rc=$?"; tail -1 $OUT/diag-$m.log
done
