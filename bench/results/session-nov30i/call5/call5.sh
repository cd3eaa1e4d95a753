#!/usr/bin/env bash
# Session nov30i, call 5 (any sm_90; an H200): the fixes of calls 3-4's findings. (1) GPU tests: the Hopper
# backward-data family on its cases, the two new ones included (a filter as wide as its stride over an odd size,
# whose first phase has one pixel more than dy: NVRTC's static assertion before, as wav2vec2's 1x2/2 layers met it),
# the tiered find (the deferred mark's life), the find modes and API; compute-sanitizer memcheck on the new B cases;
# (2) wav2vec2_base AMP again: its second process must run no find (call 3: 2, the problems whose Hopper B build
# failed in the background unrecorded).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy5 MIOFIND_KERNEL_CACHE=/tmp/kc5
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  -k "bwd" tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.txt; save
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -q -p no:cacheprovider \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py -k "test_hopper_bwd and s2_odd and FP16" > $R/memcheck.txt 2>&1
echo "memcheck rc=$? $(el) s"; grep -E "ERROR SUMMARY|passed|failed" $R/memcheck.txt | tail -3; save
MIOFIND_DB=sqlite:////tmp/r/u_w2v.sqlite timeout 220 python3 bench/bench_models.py --out $R/w2v_amp \
  --models wav2vec2_base --configs train8-amp --iters 10 --rounds 3 --warmup 3 --steps 1 > $R/w2v_amp.log 2>&1
echo "w2v amp rc=$? $(el) s"; grep -E "^\| wav" $R/w2v_amp/bench_models.md; save
echo "all $(el) s"
