#!/usr/bin/env bash
# Session epi, call 9 (issue 19): backward data's find configs (the default, then the persistent ALTERNATE_TILES, now in
# solvers/implicit_gemm_hopper_base.py for F and B) on the non-ResNet (FP16, BF16) and ResNet-50 (FP16) B layers beside
# cuDNN; the shipped DB's 416 Hopper B records measured again with them; the B and find-config tests; then ResNet-50
# N=32's Hopper F re-tuned (FP16, BF16) with a larger search (call 5 found tuned F configs slower than the find's).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; tar czf $OUT/r.tgz -C $OUT r; }
D=bench/results/session-epi/call5
export MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
timeout 120 python3 $D/hop_find.py --dir B --set nonresnet --dtypes FP16,BF16 --json $R/b_find_nr.json > $R/b_find_nr.log 2>&1
echo "nr rc=$? $(( $(date +%s) - T0 )) s"; grep -E "geomean|precompiled" $R/b_find_nr.log; save
timeout 100 python3 $D/hop_find.py --dir B --set resnet50 --dtypes FP16 --json $R/b_find_r50.json > $R/b_find_r50.log 2>&1
echo "r50 rc=$? $(( $(date +%s) - T0 )) s"; grep -E "geomean|precompiled" $R/b_find_r50.log; save
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"delete from find_records where solver_id = 'ConvImplicitGemmHopperBwd'\").rowcount; db.commit(); print('deleted', n)
" | tee $R/db.log
timeout 150 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperBwd --seconds 130 \
  --json $R/add_records.json > $R/add_records.log 2>&1
echo "add rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/add_records.log | cut -c1-400; save
timeout 120 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  -k "find_configs or bwd or Bwd" > $R/tests_hopper.log 2>&1
echo "hopper tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests_hopper.log)"; grep -E "^(FAILED|ERROR)" $R/tests_hopper.log | cut -c1-300; save
left=$(( 580 - ($(date +%s) - T0) ))
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout $left python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction F --tune-solver ConvImplicitGemmHopperFwd --retune \
  --max-configs 64 --patience 24 --db sqlite:////tmp/db.sqlite --json-out $R/tune_F.json > $R/tune_F.log 2>&1
echo "tune rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/tune_F.log | cut -c1-300; save
