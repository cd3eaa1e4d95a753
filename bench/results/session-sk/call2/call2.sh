#!/usr/bin/env bash
# Session sk, call 2: ST16 in the Hopper W kernel (an unsplit dw tile staged in shared memory and stored 16 bytes at a
# time). The W GPU tests; memcheck and racecheck on the sanitizer's problems; sweep_configs.py on ResNet-50 N=32 FP16 W:
# Hopper W at its find configs and the shipped DB's (tuned) config, each also with ST16=1, plus its unsplit 4-stage
# ST16 configs, beside cuDNN's plans on the same buffers; then, on a copy of the shipped DB, the Hopper W records
# measured again (the kernel changed, so they lost their trust) and ResNet-50 N=32's W problems re-tuned.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; tar czf $OUT/r.tgz -C $OUT r; }
W=ConvImplicitGemmHopperWrw
timeout 130 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py -k "wrw" > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error" $R/tests.log | cut -c1-300 | head; save
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool python3 bench/sanitize_driver.py --solvers $W --every > $R/$tool.txt 2>&1
  echo "$tool rc=$? $(( $(date +%s) - T0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|solutions ok' $R/$tool.txt | tr '\n' ' ')"
done; save
timeout 170 python3 bench/sweep_configs.py --dir W --layers all --where "STAGES=4,ST16=1" --others $W --vary ST16=1 \
  --db finddb/sm_90-132.sqlite --iters 30 --deadline 160 --json $R/sweep_w.json > $R/sweep_w.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^geomean" $R/sweep_w.log; save
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/db.sqlite')
n = db.execute(\"delete from find_records where solver_id = 'ConvImplicitGemmHopperWrw'\").rowcount; db.commit(); print('deleted', n)
" | tee $R/db.log
timeout 150 scripts/add-solver-records /tmp/db.sqlite --solver $W --seconds 130 --json $R/add_records.json > $R/add_records.log 2>&1
echo "add rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/add_records.log | cut -c1-300; save
left=$(( 585 - ($(date +%s) - T0) ))
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout $left python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction W --tune-solver $W --retune \
  --max-configs 64 --patience 24 --db sqlite:////tmp/db.sqlite --json-out $R/tune_W.json > $R/tune_W.log 2>&1
echo "tune rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $R/tune_W.log | cut -c1-300; save
