#!/usr/bin/env bash
# Call 6: the torch GPU tests at the final code (the float64-under-autocast case added).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
timeout 300 python3 -m pytest -m gpu tests/torch -q -p no:cacheprovider -rfEs -n 4 > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -4 $OUT/tests.log
