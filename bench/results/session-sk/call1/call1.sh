#!/usr/bin/env bash
# Session sk, call 1: the stream-K Hopper W solver (ConvImplicitGemmHopperWrwStreamK). Its GPU tests; memcheck on the
# sanitizer's tiny copy-engine problem; sweep_configs.py over its 4-stage space on ResNet-50's N=32 FP16 W layers beside
# cuDNN's plans and ConvImplicitGemmHopperWrw at its find configs and the shipped DB's (tuned) config, same buffers;
# then its records added to a copy of the shipped DB (scripts/add-solver-records).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; tar czf $OUT/r.tgz -C $OUT r; }
SK=ConvImplicitGemmHopperWrwStreamK
timeout 150 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_hopper/test_wrw_stream_k.py > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error|Error" $R/tests.log | cut -c1-300 | head; save
timeout 90 compute-sanitizer --tool memcheck python3 bench/sanitize_driver.py --solvers $SK --every > $R/memcheck.txt 2>&1
echo "memcheck rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/memcheck.txt | cut -c1-300; save
timeout 240 python3 bench/sweep_configs.py --dir W --solver $SK --layers all --where "STAGES=4" \
  --others ConvImplicitGemmHopperWrw --db finddb/sm_90-132.sqlite --iters 30 --deadline 225 --json $R/sweep_w.json > $R/sweep_w.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^r50|^  Conv|^geomean|not applicable" $R/sweep_w.log | cut -c1-200; save
left=$(( 585 - ($(date +%s) - T0) ))
if [ $left -gt 60 ]; then
  cp finddb/sm_90-132.sqlite /tmp/db.sqlite
  timeout $left scripts/add-solver-records /tmp/db.sqlite --solver $SK --seconds $(( left - 25 )) --json $R/add_records.json > $R/add_records.log 2>&1
  echo "add rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/add_records.log | cut -c1-400; save
fi
