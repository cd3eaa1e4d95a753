#!/usr/bin/env bash
# Session nov30a, call 2 (any sm_90; an H200): call 1's bench runs had no `miofind warmup`, so the warm child's finds
# deferred every candidate whose kernels were not compiled (only cuDNN's were measured): not the figures of issue 18.
# Here as session nov29i's call 4: `miofind warmup --arch sm_90`, then the whole bench_cold.py table at this code (the
# cuFFT plan prefetch on); then the FP32 Inception 1x7 layer alone, same run, prefetch on / off and the children at a
# 100 us thread switch interval, twice each; the FFT prefetch GPU test (mended).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 250 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy"
timeout 300 python3 bench/bench_cold.py --out $R/cold $I --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-9; save
ab() {   # name, then env assignments
  local name=$1; shift
  env "$@" timeout 60 python3 bench/bench_cold.py --out $R/$name --shapes inc_160_17_1x7_n16 --dtypes fp32 $I \
    --timeout 50 > $R/$name.log 2>&1
  echo "$name rc=$? $(el) s"
  grep -E "^\| inc_160" $R/$name/bench_cold.md | head -3 | cut -d'|' -f4-9
}
for round in 1 2; do
  [ $(el) -lt 500 ] && { ab on$round MIOFIND_FFT_PREFETCH=1; save; }
  [ $(el) -lt 500 ] && { ab off$round MIOFIND_FFT_PREFETCH=0; save; }
  [ $(el) -lt 500 ] && { ab swi$round BENCH_COLD_SWITCH_INTERVAL=0.0001; save; }
done
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite CUPY_CACHE_DIR=/tmp/cupy2
timeout 50 python3 -m pytest -v -m gpu -p no:cacheprovider tests/fft/test_fft_gpu.py -k prefetched > $R/tests.log 2>&1
echo "prefetch tests rc=$? $(el) s"; grep -E " FAILED| ERROR|Error" $R/tests.log | head; tail -1 $R/tests.log
gzip -f $R/*.log; save; echo "all $(el) s"
