#!/usr/bin/env bash
# Session dec03a, call 1 (issue 20, training data): 800 random CNN layers none of them a preset's
# (bench/results/session-dec03a/layers.txt: bench/sweep_problems.py layers --count 800 --seed 21), F/B/W each, found
# with device timing (the default since 765b8f1, as the shipped DB's records) into an empty user FindDB, the shipped DB
# as system DB, specialised builds, every applicable solver (tune --no-tune: default configs, nothing cut). Stopped by
# SIGINT at the time limit; a tune keeps every problem it finished. Session sweep's 1800 random-layer problems were
# wall-timed (before 765b8f1), which sets cuDNN's records about 2x too slow against the shipped DB's.
# Calls 2 and 3 are the same with other lists: bash call1.sh bench/results/session-dec03a/layers22.txt (seed 22),
# BUDGET=320 bash call1.sh bench/results/session-dec03a/layers23.txt (seed 23, 500 layers).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/c1-kc CUPY_CACHE_DIR=/tmp/c1-cupy
lim=$(( ${BUDGET:-540} - $(el) ))
MIOFIND_SPECIALIZE=sync MIOFIND_DB=/tmp/c1-sweep.sqlite timeout -k 20 -s INT $lim python3 -m miofind.cli tune \
  --file ${1:-bench/results/session-dec03a/layers.txt} --no-tune > $R/sweep.log 2>&1
echo "sweep rc=$? $(el) s"; tail -1 $R/sweep.log | cut -c1-200
python3 - /tmp/c1-sweep.sqlite <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
print(sys.argv[1], "records", c.execute("select count(*) from find_records").fetchone()[0],
      "problems", c.execute("select count(distinct problem_key) from find_records").fetchone()[0],
      "failures", c.execute("select count(*) from find_failures").fetchone()[0])
PY
cp /tmp/c1-sweep.sqlite $R/sweep.sqlite
gzip -f $R/*.log $R/*.sqlite; tar czf $OUT/r.tgz -C /tmp r
echo "all $(el) s"
