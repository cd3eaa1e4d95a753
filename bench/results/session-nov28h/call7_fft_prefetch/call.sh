#!/usr/bin/env bash
# Session nov28h, call 7: the FFT candidate's cuFFT plans made in a thread during a find's miss (MIOFIND_FFT_PREFETCH,
# solvers/fft_cufft.prefetch). The FFT GPU tests and the API finds, then a fill process (MIOFIND_SPECIALIZE=sync: the
# rows' kernels compiled, cuFFT's sizes in CUDA's JIT cache), then bench_cold's warm miofind child for the three FP32
# rows with an FFT candidate, one process per row, prefetch on and off alternating, three rounds.
# Any sm_90 device. Usage (repo root): bash bench/results/session-nov28h/call7_fft_prefetch/call.sh
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cupy CUDA_CACHE_PATH=/tmp/jit
timeout 100 python3 -m pytest -q -m "gpu and not serial" -n 14 -p no:cacheprovider -p no:benchmark -rfE \
  tests/fft tests/core/test_api_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-300 | head; save
ROWS='["r50_128_28_3x3_n16","fp32","B"] ["inc_160_17_1x7_n16","fp32","F"] ["inc_160_17_1x7_n16","fp32","B"]'
rm -f /tmp/fill.sqlite
MIOFIND_SPECIALIZE=sync MIOFIND_DB=sqlite:////tmp/fill.sqlite timeout 90 python3 bench/bench_cold.py --child miofind \
  --rows "[$(echo $ROWS | sed 's/\] \[/],[/g')]" --warmup > $R/fill.jsonl 2>$R/fill.err
echo "fill rc=$? $(el) s"
for round in 1 2 3; do
  arms="1 0"; [ $round = 2 ] && arms="0 1"
  for arm in $arms; do
    for row in $ROWS; do
      rm -f /tmp/ab.sqlite
      MIOFIND_FFT_PREFETCH=$arm MIOFIND_DB=sqlite:////tmp/ab.sqlite timeout 40 python3 bench/bench_cold.py --child miofind \
        --rows "[$row]" --warmup 2>>$R/ab.err | grep "^{" | sed "s/^/{\"arm\": $arm, \"round\": $round, \"row\": /; s/$/}/" >> $R/ab.jsonl
    done
  done
  echo "round $round $(el) s"
done
python3 - <<'PY' | tee $R/ab.txt
import json, statistics
rows = [json.loads(l) for l in open("/tmp/r/ab.jsonl")]
by = {}
for r in rows:
    x = r["row"]; t = x["timing"]
    fft = [c for c in t["candidates"] if c["solver_id"].startswith("ConvFFT")]
    by.setdefault((x["shape"], x["direction"], r["arm"]), []).append(
        (x["find_ms"], t.get("compile_ms", 0), fft[0]["compile_ms"] if fft else None, t.get("fft_prefetch")))
for k in sorted(by):
    v = by[k]
    print(k, "find ms", [round(a[0], 1) for a in v], "median", round(statistics.median(a[0] for a in v), 1),
          "| compile wall", [round(a[1], 1) for a in v], "| FFT prep", [None if a[2] is None else round(a[2], 1) for a in v],
          "| prefetched", [a[3] for a in v])
PY
gzip -f $R/*.log; save; echo "done $(el) s"
