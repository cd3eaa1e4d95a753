#!/usr/bin/env bash
# Session epi, call 3 (issue 19): the Hopper W solver's find configs (the default, then ALTERNATES configs of the least
# estimated time, solvers/implicit_gemm_hopper_wrw.py), on the GPU: the W tests (every find config of four problems
# against the float64 reference included) and the find's tests; then w_find.py on the non-ResNet layers (FP16, BF16)
# and ResNet-50's (FP16), beside cuDNN's plans.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
D=bench/results/session-epi/call3
timeout 200 python3 $D/w_find.py --set nonresnet --dtypes FP16,BF16 --json $R/w_find_nr.json > $R/w_find_nr.log 2>&1
echo "nr rc=$? $(( $(date +%s) - T0 )) s"; grep -v "^ " $R/w_find_nr.log | tail -36; save
timeout 150 python3 $D/w_find.py --set resnet50 --dtypes FP16 --json $R/w_find_r50.json > $R/w_find_r50.log 2>&1
echo "r50 rc=$? $(( $(date +%s) - T0 )) s"; grep -E "geomean|precompiled" $R/w_find_r50.log; save
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  -k "wrw" > $R/tests_wrw.log 2>&1
echo "wrw tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests_wrw.log)"; grep -E "^(FAILED|ERROR)" $R/tests_wrw.log | cut -c1-300; save
left=$(( 585 - ($(date +%s) - T0) ))
timeout $left python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py \
  > $R/tests_find.log 2>&1
echo "find tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests_find.log)"; grep -E "^(FAILED|ERROR)" $R/tests_find.log | cut -c1-300; save
