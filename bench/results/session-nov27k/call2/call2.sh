#!/usr/bin/env bash
# Session nov27k, call 2: (1) GPU tests of the harness's re-timing of a disturbed set of runs and of the float64
# reference's forward (one tap loop, kernels_src/reference_fwd.cu), with tests/core and tests/direct; (2) the 18
# problems of the shipped DB (call 1's merge) holding a record whose timed runs spread over 1.2x (unstable.py, 7 of them
# 3-1300x: medians of 10-26 ms against q20s of 0.02-5 ms) marked untrusted and measured again, every solver including
# the naive ones, on one host (scripts/add-solver-records --keys), then unstable.py on the result.
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
SOLVERS=$(python3 bench/results/session-nov27j/prepared/stale.py $P/keys.json /tmp/db.sqlite 2> $R/stale.log)
cat $R/stale.log
timeout 200 scripts/add-solver-records /tmp/db.sqlite $SOLVERS --keys $P/keys.json --seconds 180 \
  --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/remeasure.log | cut -c1-300
python3 $P/unstable.py /tmp/db.sqlite > $R/unstable_after.txt; head -1 $R/unstable_after.txt; save
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 300 python3 -m pytest -q -p no:cacheprovider -n 14 -m "gpu and not serial" \
  tests/core tests/direct 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log
MIOFIND_DB=sqlite:////tmp/t-user2.sqlite timeout 120 python3 -m pytest -q -p no:cacheprovider -m "gpu and serial" \
  tests/core/test_timing_gpu.py 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests_serial.log
echo "serial tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests_serial.log | tail -8
save
