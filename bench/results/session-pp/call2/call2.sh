#!/usr/bin/env bash
# Session pp, call 2: the forward kernel changed (PINGPONG), so on a copy of the shipped DB the Hopper F and B records
# are measured again (scripts/add-solver-records: default and alternates, the ping-pong alternate among them), then
# ResNet-50 N=32 F and B (FP16, BF16) re-tuned for the two Hopper solvers, twice while time is left (the tuner's
# first batch holds every config stored before, so a re-tune never ends on a slower config than it had).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C $OUT r; }
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"delete from find_records where solver_id in ('ConvImplicitGemmHopperFwd', 'ConvImplicitGemmHopperBwd')\").rowcount; db.commit(); print('deleted', n)
" | tee $R/db.log
for s in ConvImplicitGemmHopperFwd ConvImplicitGemmHopperBwd; do
  timeout 200 scripts/add-solver-records /tmp/db.sqlite --solver $s --seconds 180 --json $R/add_$s.json > $R/add_$s.log 2>&1
  echo "add $s rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/add_$s.log | cut -c1-300
done
save
for round in 1 2; do
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout $left python3 -m miofind.cli tune --model resnet50 --batch 32 \
    --dtype fp16 --dtype bf16 --layout NHWC --direction F --direction B --tune-solver ConvImplicitGemmHopperFwd \
    --tune-solver ConvImplicitGemmHopperBwd --retune --max-configs 64 --patience 24 --db sqlite:////tmp/db.sqlite \
    --json-out $R/tune_$round.json > $R/tune_$round.log 2>&1
  echo "tune $round rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune_$round.log | cut -c1-300; gzip -f $R/tune_$round.log; save
done
