#!/usr/bin/env bash
# Session nov28c, call 2 (issue 19): the swapped-operand Hopper solvers, forward and backward data (ConvImplicitGemmHopper
# FwdSwap, BwdSwap: dx at stride 1 as the forward of dy by the rewritten filter). (1) their GPU tests against the float64
# reference; (2) their every config on the narrow layers of VGG-16 and U-Net at N=32 NHWC FP16 (the presets where cuDNN
# still wins F and B by the shipped records), beside the Hopper F / B solvers at their find's configs and their shipped
# records' configs, and cuDNN's plans, same buffers; (3) ResNet-50's backward-data layers the same way.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_swap.py tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py::test_hopper_solver \
  > $R/tests_swap.log 2>&1
echo "swap tests rc=$? $(el) s: $(tail -n 1 $R/tests_swap.log)"; grep -E "^(FAILED|ERROR)|relative error|Error" $R/tests_swap.log | cut -c1-300 | head -20; save
for set in unet vgg16; do
  for d in F B; do
    S=ConvImplicitGemmHopperFwdSwap; O=ConvImplicitGemmHopperFwd
    [ $d = B ] && S=ConvImplicitGemmHopperBwdSwap && O=ConvImplicitGemmHopperBwd
    timeout 110 python3 bench/sweep_configs.py --dir $d --set $set --layers all --solver $S --others $O \
      --db finddb/sm_90-132.sqlite --iters 20 --deadline 100 --json $R/${set}_$d.json > $R/${set}_$d.log 2>&1
    echo "$set $d rc=$? $(el) s"; grep -E "^geomean" $R/${set}_$d.log | cut -c1-200; save
  done
done
left=$(( 580 - $(el) ))
[ $left -gt 40 ] && timeout $left python3 bench/sweep_configs.py --dir B --set resnet50 --layers all --solver ConvImplicitGemmHopperBwdSwap \
  --others ConvImplicitGemmHopperBwd --db finddb/sm_90-132.sqlite --iters 20 --deadline $(( left - 10 )) --json $R/r50_B.json > $R/r50_B.log 2>&1
echo "r50 B rc=$? $(el) s"; grep -E "^geomean" $R/r50_B.log | cut -c1-200
save
