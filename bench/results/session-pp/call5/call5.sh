#!/usr/bin/env bash
# Session pp, call 5: call 2's re-measure of the Hopper F/B records measured each problem's default and alternates only,
# so Inception-v3's N=32 FP16 F/B records (tuned in session-sk/call8/) lost their tuned configs (their Hopper times
# 1.06x / 1.05x). Re-tune them for the two Hopper solvers on a copy of the shipped DB: the tuner's first batch holds every
# config stored for the problem before (session-sk), the ping-pong alternate among the rest.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C $OUT r; }
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
for d in F B; do
  s=ConvImplicitGemmHopper$([ $d = F ] && echo Fwd || echo Bwd)
  MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 85 python3 -m miofind.cli tune --model inception_v3 --batch 32 \
    --dtype fp16 --layout NHWC --direction $d --tune-solver $s --retune --max-configs 24 --patience 12 \
    --db sqlite:////tmp/db.sqlite --json-out $R/tune_$d.json > $R/tune_$d.log 2>&1
  echo "tune $d rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tune_$d.log | cut -c1-200)"; save
done
