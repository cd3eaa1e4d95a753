#!/usr/bin/env bash
# Session epi, call 12: the tuner with the find's alternatives as its first batch (f6e4746) on the GPU: the tuning GPU
# tests, then `miofind tune` of two non-ResNet W layers for the Hopper W solver into an empty DB (a small search),
# its log showing each config measured.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 200 python3 -m pytest -q -m gpu -n 4 -p no:cacheprovider tests/tuning > $R/tests_tuning.log 2>&1
echo "tuning tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests_tuning.log)"; grep -E "^(FAILED|ERROR)" $R/tests_tuning.log | cut -c1-300; save
MIOFIND_LOG_LEVEL=5 MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/t.sqlite timeout 200 python3 -m miofind.cli tune \
  --file bench/results/session-epi/call12/problems.txt --tune-solver ConvImplicitGemmHopperWrw --max-configs 10 \
  --db sqlite:////tmp/t.sqlite --json-out $R/tune.json > $R/tune.log 2>&1
echo "tune rc=$? $(( $(date +%s) - T0 )) s"; grep -E "tuned|ConvImplicitGemmHopperWrw.*ms" $R/tune.log | cut -c1-400 | tail -8; save
python3 -c "
import sqlite3; db = sqlite3.connect('/tmp/t.sqlite')
for r in db.execute('select problem_key, config, time_ms, default_time_ms, configs_tried from perf_records'): print(r)
" > $R/perf.txt 2>&1; cat $R/perf.txt; save
