#!/usr/bin/env bash
# Session sweep, call 1. (a) Issue 14: the first find of a new process after nvlib.load stopped globbing the wheel
# and toolkit folders once the mapped libcufft loads (firstfind_probe stages/plain, bench_cold_import).
# (b) Issue 20, the noise ceiling: 240 problems of the leave-one-preset-out test set (session-sweep/resample.txt,
# stratified by preset x dtype x direction) found again into an empty user FindDB, the shipped DB as system DB (its
# tuned configs used, as when it was built), specialised builds (MIOFIND_SPECIALIZE=sync).
# (c) Issue 20, more training data: random layers (session-sweep/layers.txt: F/B/W each) found into another empty
# user FindDB in the time left, default configs (what an unseen problem runs), specialised builds.
set -uo pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
unset PYTHONDONTWRITEBYTECODE
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
echo "setup $(( $(date +%s) - T0 )) s"
timeout 60 python3 bench/firstfind_probe.py plain,stages,stages,stages,plain,plain > $OUT/probe.txt 2>&1
echo "probe rc=$?"; grep -E "import .* ms|stages" $OUT/probe.txt | head -12
timeout 90 python3 bench/bench_cold_import.py --runs 7 --gpu --json $OUT/cold_import.json > $OUT/cold_import.log 2>&1
echo "cold rc=$?"; tail -6 $OUT/cold_import.log
echo "before finds $(( $(date +%s) - T0 )) s"
t0=$(date +%s)
MIOFIND_SPECIALIZE=sync MIOFIND_DB=/tmp/resample.sqlite timeout -k 20 -s INT 170 python3 -m miofind.cli tune \
  --file bench/results/session-sweep/resample.txt --no-tune --json-out $OUT/resample.json > $OUT/resample.log 2>&1
echo "resample rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/resample.log | cut -c1-300
left=$(( 570 - ($(date +%s) - T0) ))
t0=$(date +%s)
MIOFIND_SPECIALIZE=sync MIOFIND_DB=/tmp/sweep.sqlite timeout -k 20 -s INT $left python3 -m miofind.cli tune \
  --file bench/results/session-sweep/layers.txt --no-tune --json-out $OUT/sweep.json > $OUT/sweep.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/sweep.log | cut -c1-300
for f in resample sweep; do
  python3 - /tmp/$f.sqlite <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
print(sys.argv[1], "records", c.execute("select count(*) from find_records").fetchone()[0],
      "problems", c.execute("select count(distinct problem_key) from find_records").fetchone()[0])
PY
  cp /tmp/$f.sqlite $OUT/ && gzip -f $OUT/$f.sqlite
done
echo "total $(( $(date +%s) - T0 )) s"
