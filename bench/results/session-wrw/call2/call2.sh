#!/usr/bin/env bash
# Issue 19 (session-wrw, call 2): X_DENSE, x of 1x1 stride-1 unpadded problems copied by tiled boxes (F and W copy-engine
# configs). GPU tests of the dense case, then every copy-engine config (STAGES 4 or 6; W: CLUSTER 1 or 2) of ResNet-50
# N=32's twelve 1x1 stride-1 layers, F and W, beside cuDNN: before (this call's ab.patch reversed, in a copy of the
# tree) and after, alternating.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
ROOT=$PWD
rm -rf /tmp/before && mkdir /tmp/before && cp -r . /tmp/before/ && (cd /tmp/before && patch -s -R -p1 < $ROOT/bench/results/session-wrw/call2/ab.patch) && echo "before tree ok"
PYTHONPATH=$ROOT:/tmp/site timeout 120 python3 -m pytest -v -m gpu -p no:cacheprovider -n 8 tests/implicit_gemm_hopper/test_tma.py \
  -k "dense or maps_follow" > $OUT/tests.log 2>&1
echo "tests rc=$?"; tail -1 $OUT/tests.log; grep -E "FAILED|ERROR" $OUT/tests.log | head
L=r50_64to64_56_1x1s1,r50_64to256_56_1x1s1,r50_256to64_56_1x1s1,r50_256to128_56_1x1s1,r50_128to512_28_1x1s1,r50_512to128_28_1x1s1,r50_512to256_28_1x1s1,r50_256to1024_14_1x1s1,r50_1024to256_14_1x1s1,r50_1024to512_14_1x1s1,r50_512to2048_7_1x1s1,r50_2048to512_7_1x1s1
for side in before after; do
  dir=$ROOT; [ $side = before ] && dir=/tmp/before
  for d in W F; do
    w="TMA=1,STAGES=4|6"; dl=70; [ $d = W ] && w="TMA=1,STAGES=4|6,CLUSTER=1|2" && dl=140
    (cd $dir && PYTHONPATH=$dir:/tmp/site timeout $((dl + 20)) python3 bench/sweep_configs.py --dir $d --layers $L --where "$w" \
      --iters 20 --deadline $dl --json $OUT/sweep_${d}_$side.json > $OUT/sweep_${d}_$side.log 2>&1)
    echo "$side $d rc=$?"; grep -E "geomean|precompiled|deadline" $OUT/sweep_${d}_$side.log
  done
done
