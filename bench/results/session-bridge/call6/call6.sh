#!/usr/bin/env bash
# Session bridge, call 6 (the session's final code): the bridge's tests (with lt_bridge.settle's), the torch tests
# (CPU and GPU: the preload and the detached build), and bench_overhead (which now starts with lt_bridge.settle),
# tiny problem only.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
echo "setup $(( $(date +%s) - T0 )) s"
timeout 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/gemm/test_lt_bridge.py tests/torch > $R/tests.log 2>&1
echo "tests rc=$?: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | head
timeout 150 python3 bench/bench_overhead.py --out $R/overhead --skip-resnet --skip-cold --rounds 1 --calls 3000 \
  > $R/overhead.log 2>&1; echo "overhead rc=$?"; grep -E "implicit|Winograd|im2col|FFT|conv2d|RawKernel" $R/overhead/*.md | head -12
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
