#!/usr/bin/env bash
# Session sk, call 4: ResNet-50 N=32 W re-tuned once more for Hopper W, now seeded with every config stored for it before
# (the tuner's new first batch: the find's alternates, this DB's tuned config and, through MIOFIND_SYSTEM_DB, the one
# tuned before this session: .pin/db_before_st16.sqlite, carried); then the GPU tests of the tuner, miofind.torch and the
# find paths on the new DB; then sweep_configs.py on the non-ResNet set (N=32 FP16 W): the new cluster sizes beside
# Hopper W's find configs and cuDNN.
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
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=$PWD/.pin/db_before_st16.sqlite timeout 200 python3 -m miofind.cli tune --model resnet50 \
  --batch 32 --dtype fp16 --dtype bf16 --layout NHWC --direction W --tune-solver $W --retune \
  --max-configs 64 --patience 24 --db sqlite:////tmp/db.sqlite --json-out $R/tune_W.json > $R/tune_W.log 2>&1
echo "tune rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune_W.log | cut -c1-300; save
cp /tmp/db.sqlite finddb/sm_90-132.sqlite
timeout 200 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/tuning tests/torch \
  tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-300 | head; save
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 bench/sweep_configs.py --dir W --set nonresnet --layers all --where "STAGES=4,CLUSTER=3|5|6|7" \
  --others $W --iters 30 --deadline $(( left - 15 )) --json $R/sweep_nr.json > $R/sweep_nr.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^geomean" $R/sweep_nr.log; save
