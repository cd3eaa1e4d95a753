#!/usr/bin/env bash
# Session epi, call 13: ResNet-50 N=32's Hopper F, B and W re-tuned (FP16, BF16) with the tuner that measures a find's
# alternatives first (f6e4746), on this tree's shipped DB: its tuned configs then never slower than what a find measures.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
save() { gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; tar czf $OUT/r.tgz -C $OUT r; }
for d in W B F; do
  s=ConvImplicitGemmHopperWrw; [ $d = B ] && s=ConvImplicitGemmHopperBwd; [ $d = F ] && s=ConvImplicitGemmHopperFwd
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { echo "skip $d"; continue; }
  MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout $left python3 -m miofind.cli tune --model resnet50 --batch 32 \
    --dtype fp16 --dtype bf16 --layout NHWC --direction $d --tune-solver $s --retune --max-configs 64 --patience 24 \
    --db sqlite:////tmp/db.sqlite --json-out $R/tune_$d.json > $R/tune_$d.log 2>&1
  echo "tune $d rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tune_$d.log | cut -c1-200)"; save
done
