#!/usr/bin/env bash
# Session sk, call 6: two copy-engine changes in the Hopper W kernel: its copy thread prefetches both tensor maps into the
# descriptor cache at the start (prefetch.tensormap), and a 1x1 stride-1 unpadded filter reads x through a tiled map
# (a dense J x C matrix, as dy) instead of im2col boxes. The W copy-engine GPU tests; then sweep_configs.py on ResNet-50
# N=32 FP16 W (Hopper W at its find configs and the shipped DB's tuned config, cuDNN beside) in alternating processes on
# two trees: "before" = 335645f (.pin/head.tar.gz), "after" = this tree; then the shipped DB's Hopper W records measured
# again and ResNet-50 W re-tuned (seeded with the stored configs).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; tar czf $OUT/r.tgz -C $OUT r; }
W=ConvImplicitGemmHopperWrw
PYTHONPATH=$PWD:/tmp/site timeout 150 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark \
  tests/implicit_gemm_hopper/test_tma.py tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  -k "wrw_tma or maps_follow or test_hopper_wrw_find_configs or test_hopper_wrw_st16 or test_hopper_wrw_long" > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error" $R/tests.log | cut -c1-300 | head; save
B=/tmp/before; mkdir -p $B; tar xzf .pin/head.tar.gz -C $B; cp miofind/_native.abi3.so $B/miofind/
for side in before after; do
  if [ $side = before ]; then dir=$B; else dir=$PWD; fi
  (cd $dir && PYTHONPATH=$dir:/tmp/site timeout 100 python3 bench/sweep_configs.py --dir W --layers all --where "BM=999" --others $W \
    --db finddb/sm_90-132.sqlite --iters 30 --deadline 95 --json $R/ab_$side.json) > $R/ab_$side.log 2>&1
  echo "$side rc=$? $(( $(date +%s) - T0 )) s: $(grep -E '^geomean ConvImplicitGemmHopperWrw alone / cuDNN, isolated' $R/ab_$side.log)"; save
done
export PYTHONPATH=$PWD:/tmp/site
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"delete from find_records where solver_id = 'ConvImplicitGemmHopperWrw'\").rowcount; db.commit(); print('deleted', n)
" | tee $R/db.log
timeout 110 scripts/add-solver-records /tmp/db.sqlite --solver $W --seconds 90 --json $R/add_records.json > $R/add_records.log 2>&1
echo "add rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/add_records.log | cut -c1-300; save
left=$(( 585 - ($(date +%s) - T0) ))
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout $left python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction W --tune-solver $W --retune \
  --max-configs 64 --patience 24 --db sqlite:////tmp/db.sqlite --json-out $R/tune_W.json > $R/tune_W.log 2>&1
echo "tune rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune_W.log | cut -c1-300; save
