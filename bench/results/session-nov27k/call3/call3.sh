#!/usr/bin/env bash
# Session nov27k, call 3 (the final code): (1) the 7 records call 2's merge dropped (unstable records of candidates
# the re-measure cut: 6 naive, 1 FFT) measured again alone (scripts/add-solver-records --keys call2/naive_keys.json),
# so every problem keeps a record of every applicable solver; (2) the GPU tests of tuning, miofind.torch, the GEMM
# solvers, the DB and the CLI at the final code (the harness's re-timing touches every find and tune); (3) `miofind
# warmup` and bench/bench_cold.py (issue 18's figures at the final code).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
P=bench/results/session-nov27k/call2
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C /tmp r; }
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
timeout 120 scripts/add-solver-records /tmp/db.sqlite --solver ConvFFTFwd --solver ConvDirectNaiveConvFwd \
  --solver ConvDirectNaiveConvBwd --keys $P/naive_keys.json --seconds 100 --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "records rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/remeasure.log | cut -c1-200
python3 $P/unstable.py /tmp/db.sqlite > $R/unstable_after.txt; head -1 $R/unstable_after.txt; save
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 230 python3 -m pytest -q -p no:cacheprovider -n 14 -m "gpu and not serial" \
  tests/tuning tests/torch tests/gemm tests/db tests/cli 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log; save
unset MIOFIND_KERNEL_CACHE
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 220 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; save
left=$(( 592 - ($(date +%s) - T0) ))
[ $left -gt 90 ] && timeout $left python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc \
  --installed-cupy-cache /tmp/warm-cupy --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md 2>/dev/null | cut -c1-120
save
