#!/usr/bin/env bash
# Session dec02e, call 4 (issue 20, the noise ceiling within one session): session sweep's 240 resample problems
# (bench/results/session-sweep/resample.txt, stratified over the leave-one-preset-out test set) found twice, back to
# back on one GPU and one kernel cache, each pass into its own empty user FindDB, the shipped DB as system DB (its tuned
# configs), specialised builds (MIOFIND_SPECIALIZE=sync), as session sweep's call 1 found them once. Pass b reuses pass
# a's compiled kernels. bench/noise_ceiling.py then compares a with b (noise alone) and each with the shipped DB.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/c4-kc CUPY_CACHE_DIR=/tmp/c4-cupy
for pass in a b; do
  lim=$([ $pass = a ] && echo 190 || echo 130)
  MIOFIND_SPECIALIZE=sync MIOFIND_DB=/tmp/c4-$pass.sqlite timeout -k 20 -s INT $lim python3 -m miofind.cli tune \
    --file bench/results/session-sweep/resample.txt --no-tune > $R/$pass.log 2>&1
  echo "pass $pass rc=$? $(el) s"; tail -1 $R/$pass.log | cut -c1-200
  python3 - /tmp/c4-$pass.sqlite <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
print(sys.argv[1], "records", c.execute("select count(*) from find_records").fetchone()[0],
      "problems", c.execute("select count(distinct problem_key) from find_records").fetchone()[0])
PY
  cp /tmp/c4-$pass.sqlite $R/$pass.sqlite
done
python3 bench/noise_ceiling.py --db $R/a.sqlite --again $R/b.sqlite 2>&1 | grep -E "^pooled|^FP" | head -8
gzip -f $R/*.log $R/*.sqlite; tar czf $OUT/r.tgz -C /tmp r
echo "all $(el) s"
