#!/usr/bin/env bash
# Session dec04, calls 1-2 (issue 20, training data): the size grid of depthwise 3x3 (stride 1 and 2), 1x7 and 7x1
# layers (grid.txt), F/B/W each, found with device timing into a user FindDB, the shipped DB as system DB, specialised
# builds, every applicable solver (tune --no-tune: default configs, nothing cut), as session dec03f's calls.
# Usage: call.sh [PRIOR_DB.gz]. A prior call's DB seeds the user DB, and tune skips the problems it holds (resume).
# Stopped by SIGINT at the time limit; a tune keeps every problem it finished.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/c1-kc CUPY_CACHE_DIR=/tmp/c1-cupy
DB=/tmp/c1-sweep.sqlite
if [ -n "${1:-}" ] && [ ! -e $DB ]; then zcat "$1" > $DB; echo "seeded $DB from $1"; fi
lim=$(( ${BUDGET:-545} - $(el) ))
MIOFIND_SPECIALIZE=sync MIOFIND_DB=$DB timeout -k 20 -s INT $lim python3 -m miofind.cli tune \
  --file bench/results/session-dec04/grid.txt --no-tune > $R/sweep.log 2>&1
echo "sweep rc=$? $(el) s"; tail -1 $R/sweep.log | cut -c1-200
python3 - $DB <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
print(sys.argv[1], "records", c.execute("select count(*) from find_records").fetchone()[0],
      "problems", c.execute("select count(distinct problem_key) from find_records").fetchone()[0],
      "failures", c.execute("select count(*) from find_failures").fetchone()[0])
PY
cp $DB $R/sweep.sqlite
gzip -f $R/*.log $R/*.sqlite; tar czf $OUT/r.tgz -C /tmp r
echo "all $(el) s"
