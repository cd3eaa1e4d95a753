#!/usr/bin/env bash
# Issue 19 (call 1): the persistent copy-engine forward (PERSIST = 1 with TMA = 1: blocks walk output tiles, the
# producer streams A and B boxes without draining between tiles). GPU tests of the TMA forward (the new persistent
# configs and the many-tiles case), then kernel time against cuDNN's plans on the large layer and ResNet-50 N=32 F.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -n 8 tests/implicit_gemm_hopper/test_tma.py -k "fwd_tma" > $OUT/tma-tests.log 2>&1
echo "tests rc=$?"; tail -3 $OUT/tma-tests.log
timeout 110 python3 bench/bench_kernel_time.py --set large --dirs F --dtypes FP16 --tma --persist --iters 10 \
  --json $OUT/kt_large.json > $OUT/kt_large.log 2>&1
echo "large rc=$?"; tail -8 $OUT/kt_large.log
timeout 230 python3 bench/bench_kernel_time.py --set resnet50 --dirs F --dtypes FP16 --tma --persist --iters 30 \
  --deadline 200 --json $OUT/kt_r50.json > $OUT/kt_r50.log 2>&1
echo "r50 rc=$?"; tail -22 $OUT/kt_r50.log
