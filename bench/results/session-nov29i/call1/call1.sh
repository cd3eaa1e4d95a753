#!/usr/bin/env bash
# Session nov29i, call 1 (any sm_90; an H200): a tap's last padded K tile multiplies its live k16 steps only
# (implicit_gemm_hopper_fwd.cu's mma_tile_live, under TMA with C % 64 != 0).
# 1. GPU tests: test_tma_padded.py (F, B, W against the float64 reference), test_nchw.py's padded cases (c96_k160: padded
#    F, B and W through the NCHW wrappers; 1x1_s2: a padded F), test_tma_store.py.
# 2. padded_ab.py: every padded copy-engine config of 16 (layer, direction) cases of PADDED_C built from the source before
#    the change (call1/fwd_before.cu) and after, timed alternately in one process; anchors: the cp.async default tile and
#    cuDNN's fastest plan.
# 3. compute-sanitizer racecheck and memcheck on the padded tiny problems, F, its copy-engine store, and B.
# call1/fwd_before.cu was `git show 944e799b:kernels_src/implicit_gemm_hopper_fwd.cu` (byte-identical; the device
# copy has no git history). It is not kept in the tree: recreate it with that command before running this again.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite CUPY_CACHE_DIR=/tmp/cupy1
timeout 190 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_tma_padded.py \
  tests/implicit_gemm_hopper/test_tma_store.py tests/implicit_gemm_hopper/test_nchw.py -k "not test_nchw or c96_k160 or 1x1_s2" \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head; tail -1 $R/tests.log; save
L=inc_32to32_149_3x3,inc_32to64_147_3x3,inc_80to192_73_3x3,inc_48to64_35_5x5,inc_96to96_35_3x3,inc_160to160_17_1x7
L=$L,inc_288to384_35_3x3s2,mb2_24to144_56_1x1,mb2_16to96_112_1x1,mb2_96to576_14_1x1,dense_224to128_56_1x1
L=$L,dense_160to128_28_1x1
left=$(( 480 - $(el) ))
timeout $left python3 bench/results/session-nov29i/padded_ab.py bench/results/session-nov29i/call1/fwd_before.cu \
  $R/padded_ab.json --layers $L --deadline $(( left - 20 )) > $R/padded_ab.txt 2>&1
echo "ab rc=$? $(el) s"; tail -4 $R/padded_ab.txt; save
left=$(( 585 - $(el) )); [ $left -lt 40 ] && { echo "skip sanitize: $left s left"; exit 0; }
OUT_SAVE=$OUT; OUT=$R/sanitize SANITIZE_TIMEOUT=60 timeout $left scripts/sanitize \
  --solvers ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperFwdTmaStore,ConvImplicitGemmHopperBwd --every \
  --problems nhwc_pad_walk,nhwc_pad_1x1 > $R/sanitize.txt 2>&1; echo "sanitize rc=$? $(el) s"; tail -3 $R/sanitize.txt
OUT=$OUT_SAVE; save
