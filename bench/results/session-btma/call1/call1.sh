#!/usr/bin/env bash
# Issue 19 (call 1): Hopper backward data through the copy engine (TMA with B_MN: each stride phase's dy as im2col
# boxes, w's reversed taps as MN-major boxes; persistent or not). GPU tests of the Hopper family's B paths (the new
# TMA and persistent TMA configs, every case, and B's tests at the new default), then kernel time against every
# cuDNN plan on the same buffers: ResNet-50 N=32 B FP16 (ours = the shipped DB's cp.async configs, tma, ptma: the
# new default among them), then the non-ResNet set.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider -n 8 tests/implicit_gemm_hopper/test_tma.py \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py -k "bwd or Bwd or tma or claim" > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -3 $OUT/tests.log; grep -E "^FAILED|Error" $OUT/tests.log | head -20
timeout 210 python3 bench/bench_kernel_time.py --set resnet50 --dirs B --dtypes FP16 --tma --persist --iters 30 \
  --deadline 190 --json $OUT/kt_r50.json > $OUT/kt_r50.log 2>&1
echo "r50 rc=$?"; grep -A3 "geomean" $OUT/kt_r50.log
timeout 150 python3 bench/bench_kernel_time.py --set nonresnet --dirs B --dtypes FP16 --tma --persist --iters 30 \
  --deadline 130 --json $OUT/kt_nr.json > $OUT/kt_nr.log 2>&1
echo "nonresnet rc=$?"; grep -A3 "geomean" $OUT/kt_nr.log
