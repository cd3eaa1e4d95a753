#!/usr/bin/env bash
# Session nov30a, call 1 (any sm_90; an H200): issue 18's FP32 Inception 1x7 rows (F 3.35x, W 3.03x torch's first call
# in session nov29i's call 4). The FFT family's GPU tests with the cuFFT plan prefetch (MIOFIND_FFT_PREFETCH); then
# bench_cold.py on that layer (FP32, F/B/W; torch's first call beside), same run: prefetch on, prefetch off, and the
# finds' children at lower thread switch intervals (BENCH_COLD_SWITCH_INTERVAL: do background threads wait for the
# GIL?); then one profiled run (BENCH_COLD_PROFILE). No `miofind warmup`: the empty-cache rows here are not
# fresh-install figures.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite CUPY_CACHE_DIR=/tmp/cupy1
timeout 60 python3 -m pytest -v -m gpu -p no:cacheprovider tests/fft/test_fft_gpu.py -k prefetched > $R/tests1.log 2>&1
echo "prefetch tests rc=$? $(el) s"; grep -E " FAILED| ERROR|Error" $R/tests1.log | head; tail -1 $R/tests1.log
timeout 150 python3 -m pytest -v -m gpu -n 8 -p no:cacheprovider tests/fft > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
gzip $R/tests*.log; save
unset MIOFIND_DB
cold() {   # name, then env assignments
  local name=$1; shift
  env "$@" timeout 120 python3 bench/bench_cold.py --out $R/$name --shapes inc_160_17_1x7_n16 --dtypes fp32 \
    --timeout 100 > $R/$name.log 2>&1
  echo "$name rc=$? $(el) s"
  grep -E "^\| inc_160" $R/$name/bench_cold.md | head -3 | cut -d'|' -f4-9
}
cold on MIOFIND_FFT_PREFETCH=1; save
cold off MIOFIND_FFT_PREFETCH=0; save
cold swi500us BENCH_COLD_SWITCH_INTERVAL=0.0005; save
cold swi100us BENCH_COLD_SWITCH_INTERVAL=0.0001; save
cold on2 MIOFIND_FFT_PREFETCH=1; save
cold off2 MIOFIND_FFT_PREFETCH=0; save
cold swi100us2 BENCH_COLD_SWITCH_INTERVAL=0.0001; save
if [ $(el) -lt 480 ]; then cold prof BENCH_COLD_PROFILE=$R/prof; fi
gzip -f $R/*.log; save; echo "all $(el) s"
