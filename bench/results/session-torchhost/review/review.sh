#!/usr/bin/env bash
# After the review mends: the torch GPU tests, and the two touched benches run once (smoke, not figures).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
timeout 300 python3 -m pytest -m gpu tests/torch -q -p no:cacheprovider -rfEs -n 4 > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -3 $OUT/tests.log
timeout 60 python3 bench/lt_host_cost.py --bursts 20 --out $OUT/lt_host_cost.json > $OUT/lt_host_cost.log 2>&1; echo "lt rc=$?"
timeout 200 python3 bench/bench_torch_host.py --out $OUT/host --model-configs train32-amp --steps 10 > $OUT/host.log 2>&1
echo "host rc=$?"; grep -A4 "^## " $OUT/host/bench_torch_host.md | head -6
