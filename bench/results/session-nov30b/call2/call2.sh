#!/usr/bin/env bash
# Session nov30b, call 2 (any sm_90): the forward's find with the resident-B twins (PERSIST = 2) of its persistent
# copy-engine configs. GPU tests (test_resident_b.py in full, then the narrow-layer families' find configs: test_row64,
# test_bn32, test_tma_padded), then every find config of ConvImplicitGemmHopperFwd (--others; the own sweep reduced to
# the default) beside cuDNN's plans on PADDED_C, ResNet-50 and NON_RESNET's forward layers, FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite CUPY_CACHE_DIR=/tmp/cupy2
timeout 100 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_resident_b.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
save
timeout 200 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_row64.py \
  tests/implicit_gemm_hopper/test_bn32.py tests/implicit_gemm_hopper/test_tma_padded.py > $R/tests_narrow.log 2>&1
echo "narrow tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests_narrow.log; grep -E " FAILED| ERROR" $R/tests_narrow.log | head
tail -1 $R/tests_narrow.log; save
for set in padded resnet50 nonresnet; do
  left=$(( 570 - $(el) )); [ $left -lt 30 ] && break
  timeout $left python3 bench/sweep_configs.py --dir F --set $set --layers all --where "BM=999" \
    --others ConvImplicitGemmHopperFwd --iters 20 --deadline $(( left - 10 )) --json $R/find_$set.json > $R/find_$set.txt 2>&1
  echo "sweep $set rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/find_$set.txt; save
done
gzip -f $R/*.log; save; echo "all $(el) s"
