#!/usr/bin/env bash
# Session nov28c, call 1 (issue 19): the swapped-operand Hopper forward (ConvImplicitGemmHopperFwdSwap: the filter as
# wgmma's A, 64 output channels a tile, BM pixels the N side). (1) its GPU tests against the float64 reference;
# (2) the large layer (N=120, 64 -> 64, 512 x 512, 3x3, FP16) over its every config, beside the Hopper forward at its
# find's configs and cuDNN's plans, same buffers; (3) ResNet-50 N=32 NHWC FP16 and BF16 layers it claims (K <= 128),
# beside the Hopper forward (find configs and the shipped record's config) and cuDNN; (4) the non-ResNet set, FP16.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_fwd_swap.py \
  > $R/tests_swap.log 2>&1
echo "swap tests rc=$? $(el) s: $(tail -n 1 $R/tests_swap.log)"; grep -E "^(FAILED|ERROR)|relative error|Error" $R/tests_swap.log | cut -c1-300 | head -20; save
timeout 120 python3 bench/sweep_configs.py --dir F --set large --layers all --solver ConvImplicitGemmHopperFwdSwap \
  --others ConvImplicitGemmHopperFwd --iters 20 --json $R/large.json > $R/large.log 2>&1
echo "large rc=$? $(el) s"; grep -v "^precompiled" $R/large.log | cut -c1-220 | head -20; save
for dt in FP16 BF16; do
  timeout 120 python3 bench/sweep_configs.py --dir F --dtype $dt --set resnet50 --layers all --solver ConvImplicitGemmHopperFwdSwap \
    --others ConvImplicitGemmHopperFwd --db finddb/sm_90-132.sqlite --iters 20 --deadline 110 --json $R/r50_$dt.json > $R/r50_$dt.log 2>&1
  echo "r50 $dt rc=$? $(el) s"; grep -E "^geomean|not applicable" $R/r50_$dt.log | cut -c1-200; save
done
left=$(( 580 - $(el) ))
[ $left -gt 40 ] && timeout $left python3 bench/sweep_configs.py --dir F --set nonresnet --layers all --solver ConvImplicitGemmHopperFwdSwap \
  --others ConvImplicitGemmHopperFwd --iters 20 --deadline $(( left - 10 )) --json $R/nonres.json > $R/nonres.log 2>&1
echo "nonresnet rc=$? $(el) s"; grep -E "^geomean" $R/nonres.log | cut -c1-200
save
