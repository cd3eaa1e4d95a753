#!/usr/bin/env bash
# Session cw, call 3: the whole Hopper GPU suite on this session's final kernels (0acdb43: mends, W clusters with
# SPLITK, dense-pixel loads), with its slowest tests listed; then, on a copy of the shipped DB, the Hopper F, B and W
# records measured again (the three kernels changed): scripts/add-solver-records --keep-tuned, first GPU run of that
# option, resumable (call 4 goes on from this call's DB where time runs out here).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C $OUT r; }
timeout 400 python3 -m pytest -q -m gpu -n 16 -p no:cacheprovider -p no:benchmark --durations=25 tests/implicit_gemm_hopper > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(grep -E '[0-9]+ passed' $R/tests.log | tail -1)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-300 | head
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"delete from find_records where solver_id like 'ConvImplicitGemmHopper%'\").rowcount; db.commit(); print('deleted', n)
" | tee $R/db.log
save
for s in ConvImplicitGemmHopperFwd ConvImplicitGemmHopperBwd ConvImplicitGemmHopperWrw; do
  left=$(( 580 - ($(date +%s) - T0) )); [ $left -lt 40 ] && break
  timeout $left scripts/add-solver-records /tmp/db.sqlite --solver $s --keep-tuned --seconds $(( left - 25 )) \
    --json $R/add_$s.json > $R/add_$s.log 2>&1
  echo "add $s rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/add_$s.log | cut -c1-300; save
done
