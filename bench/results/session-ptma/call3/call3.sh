#!/usr/bin/env bash
# Issue 19 (call 3), with the shipped DB of call 2 (Hopper F records at the persistent default, ResNet-50 N=32 F
# re-tuned): the GPU tests the change touches (the whole Hopper family, miofind.torch, prepared and API paths), then
# kernel time against every cuDNN plan on the same buffers (bench_kernel_time --tma --persist: ours = the default and
# the shipped tuned config, with the other copy-engine configs beside them): ResNet-50 N=32 F in FP16 and BF16, the
# non-ResNet set in FP16, and the large layer.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -n 8 tests/implicit_gemm_hopper tests/torch \
  tests/core/test_prepared_gpu.py tests/core/test_api_gpu.py > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -2 $OUT/tests.log
timeout 40 python3 bench/bench_kernel_time.py --set large --dirs F --dtypes FP16 --tma --persist --iters 10 \
  --json $OUT/kt_large.json > $OUT/kt_large.log 2>&1
echo "large rc=$?"; grep -A1 "geomean best" $OUT/kt_large.log; grep large_ $OUT/kt_large.log
timeout 190 python3 bench/bench_kernel_time.py --set resnet50 --dirs F --dtypes FP16,BF16 --tma --persist --iters 30 \
  --deadline 170 --json $OUT/kt_r50.json > $OUT/kt_r50.log 2>&1
echo "r50 rc=$?"; grep -A3 "geomean" $OUT/kt_r50.log
timeout 130 python3 bench/bench_kernel_time.py --set nonresnet --dirs F --dtypes FP16 --tma --persist --iters 30 \
  --deadline 110 --json $OUT/kt_nr.json > $OUT/kt_nr.log 2>&1
echo "nonresnet rc=$?"; grep -A2 "geomean" $OUT/kt_nr.log
