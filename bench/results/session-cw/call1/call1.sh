#!/usr/bin/env bash
# Session cw, call 1. Two kernel changes, checked before the shipped records are measured again:
#  - F/B (implicit_gemm_hopper_fwd.cu): the ping-pong named barriers take immediate IDs (ptxas had counted all 16
#    barriers as the block's with register IDs), one consumer K-loop helper; W: one store_pair helper.
#  - W (implicit_gemm_hopper_wrw.cu): the cluster split's distributed-shared-memory reduce reads 16-byte pieces of
#    every rank at once (before: 8-byte pieces, one rank's set at a time), and clusters combine with SPLITK.
# The whole Hopper GPU suite; memcheck on ping-pong F/B and a W cluster-and-split config (background); the driver's
# blocks per SM for ping-pong configs, before (HEAD 9649cb0, .pin/before.tar.gz) and after; then sweep_configs.py,
# before and after on the same host: F and B at the find configs, DB configs and two ping-pong 64 x 64 configs, and
# W at every 4-stage copy-engine config in clusters of 2, 4 and 8 beside the find/DB configs and cuBLAS's GEMM.
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
PP='{"BM": 64, "BN": 64, "WGS": 2, "STAGES": 4, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 1}'
WC='{"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4, "SPLITK": 4, "CLUSTER": 4, "WSPEC": 1, "TMA": 1, "ST16": 0}'
( OUT=$R/san SANITIZE_TIMEOUT=120 scripts/sanitize --solvers ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperBwd --every \
    --config "$PP" > $R/sanitize_fb.log 2>&1
  OUT=$R/san_w SANITIZE_TIMEOUT=120 scripts/sanitize --solvers ConvImplicitGemmHopperWrw --every --config "$WC" \
    > $R/sanitize_w.log 2>&1 ) &
SAN=$!
timeout 230 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-300 | head
wait $SAN; echo "sanitize rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/sanitize_fb.log $R/sanitize_w.log
grep -a "^FAIL" $R/san/driver.log $R/san_w/driver.log 2>/dev/null | head -5
(cd $OLD && python3 $OLDPWD/.pin/occ.py $OLD) > $R/occupancy.txt 2>&1; python3 .pin/occ.py $PWD >> $R/occupancy.txt 2>&1
cat $R/occupancy.txt; save
sweep() {   # tree dir where tag deadline_s
  (cd $1 && PYTHONPATH=$1:/tmp/site timeout $5 python3 bench/sweep_configs.py --dir $2 --layers all --where "$3" \
     --others $([ $2 = W ] && echo ConvImplicitGemmHopperWrw,GemmWrw1x1_stride1 || echo ConvImplicitGemmHopper$([ $2 = F ] && echo Fwd || echo Bwd)) \
     --db finddb/sm_90-132.sqlite --iters 30 --deadline $(( $5 - 20 )) --json $R/sweep_$4.json > $R/sweep_$4.log 2>&1)
  echo "sweep $4 rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^geomean|^precompiled|deadline" $R/sweep_$4.log; save
}
PPW="PINGPONG=1,BM=64,BN=64,STAGES=4|5"
sweep $OLD F "$PPW" F_old 40; sweep $PWD F "$PPW" F_new 40; sweep $OLD B "$PPW" B_old 40; sweep $PWD B "$PPW" B_new 40
left=$(( 570 - ($(date +%s) - T0) ))
sweep $PWD W "TMA=1,STAGES=4,CLUSTER=2|4|8" W_new $(( left * 2 / 3 ))
left=$(( 580 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && sweep $OLD W "TMA=1,STAGES=4,CLUSTER=2|4|8" W_old $left
echo "done $(( $(date +%s) - T0 )) s"
