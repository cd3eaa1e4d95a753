#!/usr/bin/env bash
# Issue 19 (session-mcast, call 1): W multicast clusters (MC_M x MC_N blocks share operand boxes through TMA multicast).
# GPU tests of the multicast configs (and the other W copy-engine tests); memcheck and racecheck on two multicast
# configs; then every copy-engine config at 4 stages (every MC shape, cluster split and split) of ResNet-50 N=32's
# W layers, the ones that lose to cuDNN first, beside cuDNN (bench/sweep_configs.py).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
timeout 170 python3 -m pytest -v -m gpu -p no:cacheprovider -n 10 tests/implicit_gemm_hopper/test_tma.py \
  -k "multicast or wrw" > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -1 $OUT/tests.log; grep -E "FAILED|ERROR" $OUT/tests.log | head
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool python3 bench/hopper_wrw_profile.py 64 72 14 3 1 8 \
    '{"BM":64,"BN":128,"WGS":1,"STAGES":4,"SPLITK":1,"CLUSTER":1,"WSPEC":1,"TMA":1,"MC_M":2,"MC_N":1}' >> $OUT/sanitize.txt 2>&1
  echo "$tool 2x1 rc=$?" | tee -a $OUT/sanitize.txt
  timeout 60 compute-sanitizer --tool $tool python3 bench/hopper_wrw_profile.py 256 256 14 3 1 8 \
    '{"BM":128,"BN":128,"WGS":2,"STAGES":4,"SPLITK":3,"CLUSTER":1,"WSPEC":1,"TMA":1,"MC_M":2,"MC_N":2}' >> $OUT/sanitize.txt 2>&1
  echo "$tool 2x2 split rc=$?" | tee -a $OUT/sanitize.txt
done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|done" $OUT/sanitize.txt
L=r50_2048to512_7_1x1s1,r50_1024to512_14_1x1s1,r50_512to128_28_1x1s1,r50_512to256_28_1x1s1,r50_512to512_7_3x3s1
L=$L,r50_512to512_14_3x3s2,r50_256to256_14_3x3s1,r50_512to1024_28_1x1s2,r50_256to256_28_3x3s2,r50_512to2048_7_1x1s1
L=$L,r50_1024to256_14_1x1s1,r50_1024to2048_14_1x1s2,r50_256to128_56_1x1s1,r50_128to512_28_1x1s1
timeout 330 python3 bench/sweep_configs.py --dir W --layers $L --where "TMA=1,STAGES=4" --iters 20 --deadline 310 \
  --json $OUT/sweep_w.json > $OUT/sweep_w.log 2>&1
echo "sweep rc=$?"; grep -E "^r50|geomean|precompiled|deadline" $OUT/sweep_w.log
python3 bench/results/session-mcast/mc_summary.py $OUT/sweep_w.json | tee $OUT/mc_summary.txt
