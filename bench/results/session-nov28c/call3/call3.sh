#!/usr/bin/env bash
# Session nov28c, call 3 (issue 19): the swapped-operand solvers with cooperative 128-channel tiles (COOP: both consumer
# warpgroups on each tile, sharing its im2col box). (1) their GPU tests (every config kind, backward data, the native
# replay of their recipes against the invoker's launches) and the family's claims; (2) U-Net and VGG-16 N=32 FP16 F and
# B, ResNet-50 N=32 F and B: every swap config beside the Hopper F/B solvers (find and shipped configs) and cuDNN;
# (3) `miofind find` of the large layer, F and B, benchmark mode, empty user DB: what a user's find picks.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_swap.py \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py::test_hopper_solver > $R/tests_swap.log 2>&1
echo "swap tests rc=$? $(el) s: $(tail -n 1 $R/tests_swap.log)"; grep -E "^(FAILED|ERROR)|relative error|Error" $R/tests_swap.log | cut -c1-300 | head -20; save
for set in unet vgg16 resnet50; do
  for d in F B; do
    S=ConvImplicitGemmHopperFwdSwap; O=ConvImplicitGemmHopperFwd
    [ $d = B ] && S=ConvImplicitGemmHopperBwdSwap && O=ConvImplicitGemmHopperBwd
    timeout 100 python3 bench/sweep_configs.py --dir $d --set $set --layers all --solver $S --others $O \
      --db finddb/sm_90-132.sqlite --iters 20 --deadline 90 --json $R/${set}_$d.json > $R/${set}_$d.log 2>&1
    echo "$set $d rc=$? $(el) s"; grep -E "^geomean" $R/${set}_$d.log | cut -c1-200; save
  done
done
for F in 1 2; do
  MIOFIND_DB=sqlite:////tmp/find-large.sqlite timeout 100 python3 -m miofind.cli find --mode benchmark --no-verify convfp16 \
    -n 120 -c 64 -H 512 -W 512 -k 64 -y 3 -x 3 -p 1 -q 1 --in_layout NHWC --out_layout NHWC --fil_layout NHWC -F $F \
    > $R/find_large_F$F.txt 2>&1
  echo "find large -F $F rc=$? $(el) s"; head -12 $R/find_large_F$F.txt | cut -c1-200
done
save
