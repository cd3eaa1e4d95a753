#!/usr/bin/env bash
# Session bridge, call 2 (issue 14's first run of a cuBLASLt-backed answer): the bridge GEMM's GPU tests and the
# suites it touches, then bench_cold_import with MIOFIND_LT_BRIDGE=0 and 1 in alternating fresh processes.
# Everything lands in $OUT/r (returned as r.tgz plus the summary, since only 8 files come back).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
unset PYTHONDONTWRITEBYTECODE
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
echo "setup $(( $(date +%s) - T0 )) s"
timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/gemm/test_lt_bridge.py \
  tests/gemm/test_cublaslt_setup_gpu.py tests/core/test_prepared_gpu.py tests/torch/test_fast.py > $R/tests.log 2>&1
echo "tests rc=$?: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20
timeout 120 python3 bench/bench_cold_import.py --runs 7 --gpu --bridge-ab --json $R/cold_bridge.json > $R/cold_bridge.log 2>&1
echo "cold rc=$?"; cat $R/cold_bridge.log
timeout 240 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/gemm tests/winograd > $R/gemm-wino.log 2>&1
echo "gemm+winograd rc=$?: $(tail -1 $R/gemm-wino.log)"; grep -E "^(FAILED|ERROR)" $R/gemm-wino.log | head -20
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
