#!/usr/bin/env bash
# Session nov29e, call 9 (any sm_90): ConvImplicitGemmHopperFwdTmaStore's output staging by stmatrix.x4 (STMATRIX = 1).
# 1. its GPU tests (every config on two problems, the find configs of 7 cases, FP16 and BF16) at STMATRIX = 1;
# 2. stmatrix_ab.py: STMATRIX 1 against 0 at the same configs (find configs and call 7's tuned ones), ResNet-50 FP16 F;
# 3. compute-sanitizer on its tiny problem (ping-pong, two output tiles);
# 4. the same-run side-by-side of ResNet-50 FP16 F (its find configs: an empty user DB).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
D=bench/results/session-nov29e/call9
export MIOFIND_KERNEL_CACHE=/tmp/kc9 MIOFIND_DB=sqlite:////tmp/u9.sqlite
timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/implicit_gemm_hopper/test_tma_store.py > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -2 $R/tests.txt; save
timeout 120 python3 $D/stmatrix_ab.py --tuned bench/results/session-nov29e/call7/out/perf.txt --json $R/ab.json > $R/ab.txt 2>&1
echo "ab rc=$? $(el) s"; grep -E "^(isolated|gpu):|precompiled" $R/ab.txt; save
PP='{"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 1, "OBUF": 2}'
OUT=$R/sanitize_pp TOOLS="memcheck racecheck synccheck" SANITIZE_TIMEOUT=50 timeout 80 scripts/sanitize \
  --solvers ConvImplicitGemmHopperFwdTmaStore --every --config "$PP" > $R/sanitize_pp.txt 2>&1
echo "sanitize rc=$? $(el) s"; tail -3 $R/sanitize_pp.txt; save
left=$(( 400 - $(el) ))
if [ $left -gt 40 ]; then
  MIOFIND_SPECIALIZE=sync timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs F \
    --set resnet50 --out $R/samerun > $R/samerun_F.txt 2>&1
  echo "samerun rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_F.txt
fi
save; echo "all $(el) s"
