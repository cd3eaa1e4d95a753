#!/usr/bin/env bash
# Session pp, call 1: ping-pong consumer warpgroups for the persistent copy-engine forward kernel (F, and B through its
# stride phases). The GPU tests of the new configs (F, B, fused epilogue) and of the copy-engine F/B configs beside
# them, memcheck and racecheck on ping-pong F and B (in the background, meanwhile); then sweep_configs.py on
# ResNet-50 N=32 FP16 F and B: the ping-pong configs at 3, 4 and 6 stages beside the Hopper solver at its find
# configs and the shipped DB's config, and cuDNN's plans, all on the same buffers.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
CFG='{"BM": 64, "BN": 128, "WGS": 2, "STAGES": 4, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 1}'
(OUT=$R/san SANITIZE_TIMEOUT=150 scripts/sanitize --solvers ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperBwd --every \
   --config "$CFG" > $R/sanitize.log 2>&1) &
SAN=$!
timeout 200 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_tma.py \
  tests/implicit_gemm_hopper/test_fused_epilogue.py -k "pingpong or fwd_tma or bwd_tma or fused_epilogue" > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error" $R/tests.log | cut -c1-300 | head
wait $SAN; echo "sanitize rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $R/sanitize.log; grep -a "^FAIL" $R/san/driver.log | head -5; save
for d in F B; do
  [ $d = F ] && left=$(( (585 - ($(date +%s) - T0)) / 2 )) || left=$(( 585 - ($(date +%s) - T0) ))
  timeout $left python3 bench/sweep_configs.py --dir $d --layers all --where "PINGPONG=1,STAGES=3|4|6" \
    --others ConvImplicitGemmHopper$([ $d = F ] && echo Fwd || echo Bwd) --db finddb/sm_90-132.sqlite --iters 30 \
    --deadline $(( left - 45 )) --json $R/sweep_$d.json > $R/sweep_$d.log 2>&1
  echo "sweep $d rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^geomean|^precompiled|deadline" $R/sweep_$d.log; save
done
