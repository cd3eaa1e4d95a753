#!/usr/bin/env bash
# Session dec03f, call 1 (issue 20, training data): the size grid of random layers
# (bench/results/session-dec03f/sizes.txt: bench/sweep_problems.py sizes --seed 30; 1x1 and 3x3 filters, stride 1, every
# spatial size 1-40 and the common larger ones, each data type and layout), F/B/W each, found with device timing into
# an empty user FindDB, the shipped DB as system DB, specialised builds, every applicable solver (tune --no-tune:
# default configs, nothing cut), as session dec03a's call 1. Stopped by SIGINT at the time limit; a tune keeps every
# problem it finished.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/c1-kc CUPY_CACHE_DIR=/tmp/c1-cupy
lim=$(( ${BUDGET:-545} - $(el) ))
MIOFIND_SPECIALIZE=sync MIOFIND_DB=/tmp/c1-sweep.sqlite timeout -k 20 -s INT $lim python3 -m miofind.cli tune \
  --file ${1:-bench/results/session-dec03f/sizes.txt} --no-tune > $R/sweep.log 2>&1
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
