#!/usr/bin/env bash
# Session nov28d, call 2 (issue 19): the rounding TF32 kernel reworked after call 1 (each consumer warpgroup issued one
# k8 step a group and the two took tiles in turn, so the registers' loads and roundings were not hidden: 1.24 of cuDNN's
# time on ResNet-50 F): both consumer warpgroups now work on every tile, each issuing a whole K tile a group, and the
# kernel is the programmatic dependent of the filter's rounding. (1) the GPU tests of the rounding solvers and of the
# other users of the shared filter rewrite (the truncating TF32 and the swapped-operand backward data); (2) the F and B
# sweeps of call 1; (3) the accuracy table (bench/tf32_rounding.py); (4) compute-sanitizer memcheck and racecheck.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 150 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_tf32_rn.py \
  tests/implicit_gemm_hopper/test_tf32.py tests/implicit_gemm_hopper/test_swap.py -k "rn or bwd or Bwd or tf32" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error|^E  " $R/tests.log | cut -c1-300 | head -20; save
MIOFIND_HOPPER_TF32=1 timeout 150 python3 bench/sweep_configs.py --dir F --dtype FP32 --math tf32 --layers all \
  --solver ConvImplicitGemmHopperFwdTf32Rn --others ConvImplicitGemmHopperFwd,ConvImplicitGemmFwd --iters 20 --deadline 140 \
  --json $R/sweep_f.json > $R/sweep_f.log 2>&1
echo "sweep F rc=$? $(el) s"; grep -E "^geomean|precompiled" $R/sweep_f.log; save
MIOFIND_HOPPER_TF32=1 timeout 110 python3 bench/sweep_configs.py --dir B --dtype FP32 --math tf32 --layers all \
  --solver ConvImplicitGemmHopperBwdTf32Rn --others ConvImplicitGemmHopperBwdTf32,ConvImplicitGemmBwd --iters 20 --deadline 100 \
  --json $R/sweep_b.json > $R/sweep_b.log 2>&1
echo "sweep B rc=$? $(el) s"; grep -E "^geomean|precompiled" $R/sweep_b.log; save
timeout 100 python3 bench/tf32_rounding.py --n 32 --dirs F,B --json $R/rounding.json > $R/rounding.log 2>&1
echo "rounding rc=$? $(el) s"; tail -n 9 $R/rounding.log; save
left=$(( 580 - $(el) ))
[ $left -gt 30 ] && OUT=$R/san timeout $left scripts/sanitize --solvers ConvImplicitGemmHopperFwdTf32Rn,ConvImplicitGemmHopperBwdTf32Rn --every \
  > $R/sanitize.log 2>&1
echo "sanitize rc=$? $(el) s"; tail -n 6 $R/sanitize.log
gzip -f $R/*.log; save
