#!/usr/bin/env bash
# Session epi, call 5 (issue 19): the Hopper forward's find configs (the default, then the persistent ALTERNATE_TILES,
# solvers/implicit_gemm_hopper_fwd.py) on the non-ResNet (FP16, BF16) and ResNet-50 (FP16) layers beside cuDNN; the
# shipped DB's 416 Hopper F records measured again with them (on call 4's DB, this tree's finddb/); the tests of the
# find configs; the torch GPU tests on the new DB.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1 &
save() { tar czf $OUT/r.tgz -C $OUT r; }
D=bench/results/session-epi/call5
export MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
timeout 120 python3 $D/hop_find.py --dir F --set nonresnet --dtypes FP16,BF16 --json $R/f_find_nr.json > $R/f_find_nr.log 2>&1
echo "nr rc=$? $(( $(date +%s) - T0 )) s"; grep -E "geomean|precompiled" $R/f_find_nr.log; save
timeout 100 python3 $D/hop_find.py --dir F --set resnet50 --dtypes FP16 --json $R/f_find_r50.json > $R/f_find_r50.log 2>&1
echo "r50 rc=$? $(( $(date +%s) - T0 )) s"; grep -E "geomean|precompiled" $R/f_find_r50.log; save
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"delete from find_records where solver_id = 'ConvImplicitGemmHopperFwd'\").rowcount; db.commit(); print('deleted', n)
" | tee $R/db.log
timeout 200 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperFwd --seconds 180 \
  --json $R/add_records.json > $R/add_records.log 2>&1
echo "add rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/add_records.log | cut -c1-400; gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; save
wait
timeout 150 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  -k "find_configs or fwd" > $R/tests_hopper.log 2>&1
echo "hopper tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests_hopper.log)"; grep -E "^(FAILED|ERROR)" $R/tests_hopper.log | cut -c1-300; save
left=$(( 585 - ($(date +%s) - T0) ))
cp /tmp/db.sqlite finddb/sm_90-132.sqlite
timeout $left python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/torch > $R/tests_torch.log 2>&1
echo "torch tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests_torch.log)"; grep -E "^(FAILED|ERROR)" $R/tests_torch.log | cut -c1-300; save
