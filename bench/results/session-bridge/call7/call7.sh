#!/usr/bin/env bash
# Session bridge, call 7: _fast.cpp's refusals with a number in their message as std::runtime_error (call 6: three
# refusal tests crashed their worker); all of tests/torch/test_fast.py, CPU and GPU tests.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
timeout 220 python3 -m pytest -q -n 4 -p no:cacheprovider tests/torch/test_fast.py > $R/fast.log 2>&1
echo "test_fast rc=$?: $(tail -1 $R/fast.log)"; grep -E "^(FAILED|ERROR)|crashed" $R/fast.log | head
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
