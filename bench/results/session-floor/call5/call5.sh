#!/usr/bin/env bash
# Session floor, call 5 (no library change since call 4): the GPU suite's part 2 (fft, gemm, implicit_gemm,
# implicit_gemm_hopper, winograd), as scripts/gpu-check runs it.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
save() { tar czf $OUT/r.tgz -C $OUT r; }
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
OUT=$R/part2 BENCH=0 XDIST=14 STRESS=1 timeout 585 scripts/gpu-check tests/fft tests/gemm tests/implicit_gemm \
  tests/implicit_gemm_hopper tests/winograd > $R/part2.log 2>&1
echo "part2 rc=$? $(( $(date +%s) - T0 )) s"; tail -5 $R/part2.log | cut -c1-300
grep -E "^(FAILED|ERROR)" $R/part2/gpu-tests.log | head -10 | cut -c1-300
gzip -f $R/part2/gpu-tests.log 2>/dev/null
save
echo "total $(( $(date +%s) - T0 )) s"
