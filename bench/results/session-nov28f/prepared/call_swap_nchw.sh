#!/usr/bin/env bash
# Prepared (session nov28f, not run: no device time was left to the session). Issue 19: the swapped-operand solvers'
# NCHW wrappers (ConvImplicitGemmHopperFwdSwapNchw, ...BwdSwapNchw, registry rows 45-46), written and CPU-tested only.
# (1) their GPU tests (test_nchw.py: float64 at every find config, bit for bit the NHWC solver's output), the family's
# claims and the C++ path's NCHW tensor-map cases; (2) compute-sanitizer on their tiny problem; (3) the sweeps of U-Net and
# VGG-16 N=32 FP16 NCHW, F and B (their narrow layers), beside the NCHW wrappers of the plain forward and backward data and
# cuDNN; (4) the stress test (its pool holds two problems of each). Any sm_90 device (H100 or H200).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
export MIOFIND_HOPPER_SWAP_NCHW=1   # the swapped-operand NCHW wrappers, off by default until verified
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 170 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_nchw.py \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py tests/torch/test_fast.py -k "Nchw or nchw or tensor_map" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error|^E  " $R/tests.log | cut -c1-300 | head -20; save
OUT=$R/san timeout 100 scripts/sanitize --every --solvers ConvImplicitGemmHopperFwdSwapNchw,ConvImplicitGemmHopperBwdSwapNchw \
  > $R/sanitize.log 2>&1
echo "sanitize rc=$? $(el) s"; tail -n 5 $R/sanitize.log; save
for d in F B; do
  s=$(case $d in F) echo Fwd;; B) echo Bwd;; esac)
  o=$(case $d in F) echo ConvImplicitGemmFwd,GemmFwdRest;; B) echo ConvImplicitGemmBwd,GemmBwdRest;; esac)
  for set in unet vgg16; do
    timeout 60 python3 bench/sweep_configs.py --dir $d --set $set --layout NCHW --layers all --solver ConvImplicitGemmHopper${s}SwapNchw \
      --others ConvImplicitGemmHopper${s}Nchw,ConvImplicitGemmHopper${s}SwapNchw,$o --iters 20 --deadline 55 --json $R/${set}_$d.json \
      > $R/${set}_$d.log 2>&1
    echo "$set $d rc=$? $(el) s"; grep -E "^geomean|precompiled|deadline" $R/${set}_$d.log
  done
  save
done
left=$(( 585 - $(el) ))
[ $left -gt 40 ] && timeout $left python3 -m pytest -q -m gpu -p no:cacheprovider -p no:benchmark tests/core/test_stress_gpu.py > $R/stress.log 2>&1
echo "stress rc=$? $(el) s: $(tail -n 1 $R/stress.log)"
gzip -f $R/*.log; save
