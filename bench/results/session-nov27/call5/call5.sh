#!/usr/bin/env bash
# Session nov27, call 5 (issues 18, 20): cold finds of unseen layers (bench/bench_cold.py, layers only) with the shipped
# cost model before this session's retrain (.pin/old.model.npz = 4e48556's finddb/sm_90-132.model.npz) and after it
# (this tree's), in turn, from the same `miofind warmup` caches: a find defers the candidates the model predicts >= 2x
# slower than its predicted fastest, so the model can change what a first find measures and answers.
set -uo pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 -m miofind warmup --arch sm_90 ) \
  > $R/warmup.log 2>&1
echo "warmup $(( $(date +%s) - T0 )) s"; tail -1 $R/warmup.log
cp finddb/sm_90-132.model.npz /tmp/new.model.npz
for side in old new; do
  if [ $side = old ]; then cp .pin/old.model.npz finddb/sm_90-132.model.npz; else cp /tmp/new.model.npz finddb/sm_90-132.model.npz; fi
  left=$(( 570 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  timeout $left python3 bench/bench_cold.py --out $R/cold_$side --installed-cache /tmp/warm-kc \
    --installed-cupy-cache /tmp/warm-cupy --timeout 90 > $R/cold_$side.log 2>&1
  echo "cold $side rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold_$side/bench_cold.md | cut -c1-160
  tar czf $OUT/r.tgz -C $OUT r
done
cp /tmp/new.model.npz finddb/sm_90-132.model.npz
