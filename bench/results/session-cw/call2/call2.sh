#!/usr/bin/env bash
# Session cw, call 2: dense-pixel loads. For a 1x1 stride-1 unpadded problem the copy engine reads x (F, W; dy for a
# backward-data phase of that form) through a tiled map of the dense pixels x channels matrix instead of the im2col
# map (A_DENSE, B_DENSE). The whole Hopper GPU suite (call 1's run stopped at its time limit after 294 passed), then
# before (7ff9462, call 1's kernels, .pin/before.tar.gz) and after on ResNet-50's 1x1 layers, same host: the Hopper
# solver at its find and DB configs and a ping-pong config (F, B), at its find/DB configs (W), beside cuDNN and
# cuBLAS's GEMM (W).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
OLD=/tmp/old; mkdir -p $OLD; tar xzf .pin/before.tar.gz -C $OLD; cp miofind/_native.abi3.so $OLD/miofind/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 290 python3 -m pytest -q -m gpu -n 16 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-300 | head; save
L1="r50_64to64_56_1x1s1,r50_64to256_56_1x1s1,r50_256to64_56_1x1s1,r50_256to128_56_1x1s1,r50_128to512_28_1x1s1,r50_512to128_28_1x1s1,r50_512to256_28_1x1s1,r50_256to1024_14_1x1s1,r50_1024to256_14_1x1s1,r50_1024to512_14_1x1s1,r50_512to2048_7_1x1s1,r50_2048to512_7_1x1s1"
L2="$L1,r50_256to512_56_1x1s2,r50_512to1024_28_1x1s2,r50_1024to2048_14_1x1s2"
sweep() {   # tree dir layers where tag deadline_s
  (cd $1 && PYTHONPATH=$1:/tmp/site timeout $6 python3 bench/sweep_configs.py --dir $2 --layers $3 --where "$4" \
     --others $([ $2 = W ] && echo ConvImplicitGemmHopperWrw,GemmWrw1x1_stride1 || echo ConvImplicitGemmHopper$([ $2 = F ] && echo Fwd || echo Bwd)) \
     --db finddb/sm_90-132.sqlite --iters 30 --deadline $(( $6 - 15 )) --json $R/sweep_$5.json > $R/sweep_$5.log 2>&1)
  echo "sweep $5 rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^geomean|^precompiled|deadline" $R/sweep_$5.log; save
}
PPW="PINGPONG=1,BM=128,BN=128,STAGES=4"
sweep $OLD F $L1 "$PPW" F_old 35; sweep $PWD F $L1 "$PPW" F_new 35
sweep $OLD B $L2 "$PPW" B_old 40; sweep $PWD B $L2 "$PPW" B_new 40
sweep $OLD W $L1 "BM=999" W_old 35; sweep $PWD W $L1 "BM=999" W_new 35
echo "done $(( $(date +%s) - T0 )) s"
