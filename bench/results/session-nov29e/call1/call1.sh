#!/usr/bin/env bash
# Session nov29e, call 1 (any sm_90): issue 19, the forward's copy-engine stores (ConvImplicitGemmHopperFwdTmaStore).
# 1. its GPU tests (every config on two problems, the find configs of 7 cases in FP16 and BF16);
# 2. tstore_ab.py: its kernels against the forward's at the same tiles, beside cuDNN and the other own solvers,
#    ResNet-50 N=32 FP16 NHWC F, then the non-ResNet set;
# 3. the same-run side-by-side of ResNet-50 F (bench_convs --cudnn-harness: one benchmark-mode find per problem with
#    every own solver, the new one included, and every cuDNN engine config, on the same buffers).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
D=bench/results/session-nov29e/call1
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite
timeout 170 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/implicit_gemm_hopper/test_tma_store.py > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.txt; save
timeout 200 python3 $D/tstore_ab.py --set resnet50 --dtype FP16 --json $R/ab_resnet50.json > $R/ab_resnet50.txt 2>&1
echo "ab resnet50 rc=$? $(el) s"; grep -E "^(isolated|gpu):|precompiled" $R/ab_resnet50.txt; save
left=$(( 520 - $(el) ))
if [ $left -gt 60 ]; then
  t=$(( left < 110 ? left : 110 ))
  MIOFIND_SPECIALIZE=sync timeout $t python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs F \
    --set resnet50 --out $R/samerun > $R/samerun_F.txt 2>&1
  echo "samerun rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_F.txt; save
fi
left=$(( 570 - $(el) ))
if [ $left -gt 60 ]; then
  timeout $left python3 $D/tstore_ab.py --set nonresnet --dtype FP16 --json $R/ab_nonresnet.json > $R/ab_nonresnet.txt 2>&1
  echo "ab nonresnet rc=$? $(el) s"; grep -E "^(isolated|gpu):" $R/ab_nonresnet.txt
fi
save; echo "all $(el) s"
