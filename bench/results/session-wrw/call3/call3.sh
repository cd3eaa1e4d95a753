#!/usr/bin/env bash
# Issue 19 (session-wrw, call 3): the W cluster split as a reduce-scatter (each of the CLUSTER blocks sums 1 / CLUSTER
# of the tiles' rows through distributed shared memory), CLUSTER up to 8. GPU tests of W; memcheck and racecheck on
# cluster-8 configs; then every copy-engine config (STAGES 4 or 6, every CLUSTER) of ResNet-50 N=32's W layers beside
# cuDNN (bench/sweep_configs.py).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 150 python3 -m pytest -v -m gpu -p no:cacheprovider -n 8 tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  tests/implicit_gemm_hopper/test_tma.py -k "wrw or Wrw" > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -1 $OUT/tests.log; grep -E "FAILED|ERROR" $OUT/tests.log | head
for tool in memcheck racecheck; do
  for cfg in '{"BM":64,"BN":128,"WGS":1,"STAGES":4,"SPLITK":1,"CLUSTER":8,"WSPEC":1,"TMA":1}' \
             '{"BM":128,"BN":128,"WGS":2,"STAGES":4,"SPLITK":1,"CLUSTER":4,"WSPEC":0,"TMA":0}'; do
    timeout 60 compute-sanitizer --tool $tool python3 bench/hopper_wrw_profile.py 64 72 14 3 1 8 "$cfg" >> $OUT/sanitize.txt 2>&1
    echo "$tool rc=$?" | tee -a $OUT/sanitize.txt
  done
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|done" $OUT/sanitize.txt
L=$(python3 -c "import sys; sys.path.insert(0,'tests'); from shapes import _resnet50; print(','.join(n for n in _resnet50(32) if n != 'r50_3to64_224_7x7s2'))")
timeout 330 python3 bench/sweep_configs.py --dir W --layers $L --where "TMA=1,STAGES=4|6" --iters 20 --deadline 310 \
  --json $OUT/sweep_w.json > $OUT/sweep_w.log 2>&1
echo "sweep rc=$?"; grep -E "^r50|geomean|precompiled|deadline" $OUT/sweep_w.log
