#!/usr/bin/env bash
# Session refresh: every find record of the shipped DB measured again under device timing (MIOFIND_FIND_TIMING=device),
# over several device calls. The copy `.refresh/refresh.sqlite` (carried) was made on the CPU machine by
#   python bench/refresh_records.py prepare --all-solvers --tf32 --older-than 1795665600 \
#     --db finddb/sm_90-132.sqlite --out .refresh/refresh.sqlite --lines .refresh/refresh.txt
# (4032 problems: all but the 288 FP16 NHWC N=32 ones session-check call 4 re-measured; the naive records kept), and
# each call resumes the copy the call before returned (`miofind tune --no-tune` finds only the solvers a problem
# lacks a record of: Tuner.stale). TESTS=1: the timing hold's tests first; RESAMPLE=1: the 240 problems of
# session-sweep's resample list found again into an empty user DB over the shipped one (a second, independent
# device-timed measurement for bench/noise_ceiling.py). LIMIT: seconds for the whole call.
set -uo pipefail
T0=$(date +%s); LIMIT=${LIMIT:-560}
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
git log -1 --format=%H > $R/commit.txt 2>/dev/null
echo "setup $(( $(date +%s) - T0 )) s"
if [ "${TESTS:-0}" = 1 ]; then
  timeout 150 python3 -m pytest -q -m gpu -n 8 tests/core/test_timing_gpu.py tests/core/test_harness.py \
    tests/core/test_api_gpu.py > $R/tests.log 2>&1
  echo "tests rc=$?"; tail -1 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head
fi
if [ "${RESAMPLE:-0}" = 1 ]; then
  t0=$(date +%s); rm -f /tmp/resample.sqlite*
  MIOFIND_SPECIALIZE=sync MIOFIND_DB=/tmp/resample.sqlite timeout -k 20 -s INT 200 python3 -m miofind.cli tune \
    --file bench/results/session-sweep/resample.txt --no-tune --json-out $R/resample.json > $R/resample.log 2>&1
  echo "resample rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $R/resample.log | cut -c1-300
  python3 -c "
import sqlite3; c = sqlite3.connect('/tmp/resample.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)')
c.execute('PRAGMA journal_mode=DELETE'); print('resample records', c.execute('select count(*) from find_records').fetchone()[0])"
  cp /tmp/resample.sqlite $R/ && gzip -f $R/resample.sqlite
fi
cp .refresh/refresh.sqlite /tmp/refresh.sqlite
left=$(( LIMIT - 45 - ($(date +%s) - T0) ))
t0=$(date +%s)
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none MIOFIND_DB=/tmp/refresh.sqlite timeout -k 20 -s INT $left \
  python3 -m miofind.cli tune --file .refresh/refresh.txt --no-tune --json-out $R/refresh.json > $R/refresh.log 2>&1
echo "refresh rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $R/refresh.log | cut -c1-300
python3 - /tmp/refresh.sqlite <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.execute("PRAGMA journal_mode=DELETE")
print("records", c.execute("select count(*) from find_records").fetchone()[0], "problems",
      c.execute("select count(distinct problem_key) from find_records where solver_id not like 'ConvDirectNaive%'").fetchone()[0],
      c.execute("PRAGMA integrity_check").fetchone()[0])
PY
cp /tmp/refresh.sqlite $R/refresh.sqlite && gzip -f $R/refresh.sqlite
gzip -f $R/refresh.log $R/refresh.json 2>/dev/null
[ -f $R/tests.log ] && gzip -f $R/tests.log
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
