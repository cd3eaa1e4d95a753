#!/usr/bin/env bash
# Session nov28d, call 5 (issue 19): the rounding TF32 kernel with CW = 1 configs (one consumer warpgroup, 64-pixel tiles,
# 256-thread blocks two to an SM: for the layers of few pixels, where two blocks' tiles interleave as call 4's two
# consumers of one tile did, with more tiles). (1) the rounding solvers' GPU tests; (2) the F and B
# sweeps with every config; (3) compute-sanitizer memcheck and racecheck.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 150 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_tf32_rn.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error|^E  " $R/tests.log | cut -c1-300 | head -20; save
MIOFIND_HOPPER_TF32=1 timeout 170 python3 bench/sweep_configs.py --dir F --dtype FP32 --math tf32 --layers all \
  --solver ConvImplicitGemmHopperFwdTf32Rn --others ConvImplicitGemmHopperFwd --iters 20 --deadline 160 \
  --json $R/sweep_f.json > $R/sweep_f.log 2>&1
echo "sweep F rc=$? $(el) s"; grep -E "^geomean|precompiled" $R/sweep_f.log; save
MIOFIND_HOPPER_TF32=1 timeout 130 python3 bench/sweep_configs.py --dir B --dtype FP32 --math tf32 --layers all \
  --solver ConvImplicitGemmHopperBwdTf32Rn --others ConvImplicitGemmHopperBwdTf32 --iters 20 --deadline 120 \
  --json $R/sweep_b.json > $R/sweep_b.log 2>&1
echo "sweep B rc=$? $(el) s"; grep -E "^geomean|precompiled" $R/sweep_b.log; save
left=$(( 580 - $(el) ))
[ $left -gt 30 ] && OUT=$R/san timeout $left scripts/sanitize --solvers ConvImplicitGemmHopperFwdTf32Rn,ConvImplicitGemmHopperBwdTf32Rn --every \
  --config '{"WG_M":1,"BN":128,"WN":1,"CW":1,"STAGES":4}' > $R/sanitize.log 2>&1
echo "sanitize rc=$? $(el) s"; tail -n 6 $R/sanitize.log
gzip -f $R/*.log; save
