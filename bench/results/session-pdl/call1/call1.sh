#!/usr/bin/env bash
# Session pdl, call 1: programmatic dependent launches in the Hopper family (a split's reduce, backward data's later
# stride phases). GPU tests of the family's B/W/split cases and test_pdl.py; the C++ path's recipe tests; then
# kernel time with dependent launches against the same configs launched plainly (bench_kernel_time --pdl-ab), ResNet-50
# N=32 FP16 B, W, F and the non-ResNet set's B and W, each beside cuDNN's best plan on the same buffers.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c1; mkdir -p $R
save() { (cd $OUT && tar czf c1.tgz c1); }
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1 &
BUILD=$!
timeout 190 python3 -m pytest -q -m gpu -n 8 tests/implicit_gemm_hopper/test_pdl.py tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  -k "pdl or bwd or wrw or split or persist" -p no:cacheprovider > $R/htests.log 2>&1; echo "hopper tests rc=$?"
tail -1 $R/htests.log; grep -E "^FAILED|^ERROR" $R/htests.log | head -8 | cut -c1-300; save
wait $BUILD; tail -1 $R/build.log
timeout 100 python3 -m pytest -q -m gpu -n 8 tests/torch/test_fast.py -p no:cacheprovider > $R/fast.log 2>&1; echo "fast rc=$?"
tail -1 $R/fast.log; grep -E "^FAILED|^ERROR" $R/fast.log | head -5 | cut -c1-300; save
timeout 170 python3 bench/bench_kernel_time.py --dirs B,W --dtypes FP16 --pdl-ab --iters 30 --deadline 160 \
  --json $R/kt_r50.json > $R/kt_r50.log 2>&1; echo "kt r50 rc=$?"; sed -n '/^geomean/,$p' $R/kt_r50.log; save
timeout 90 python3 bench/bench_kernel_time.py --set nonresnet --dirs B,W --dtypes FP16 --pdl-ab --iters 30 --deadline 80 \
  --json $R/kt_nonresnet.json > $R/kt_nonresnet.log 2>&1; echo "kt nonresnet rc=$?"; sed -n '/^geomean/,$p' $R/kt_nonresnet.log; save
