#!/usr/bin/env bash
# Session nov27b, call 4, on the shipped DB with ResNeXt-101 (call 3) and the retrained models (alignment features):
# (a) the GPU tests that read the shipped DB and its cost model (torch, tuning, the API's, tiered), as session-nov27's
# call 9; (b) ResNeXt-101 32x8d end to end against cuDNN (bench_models.py: AMP channels_last training at batch 32,
# steady step, first step of a fresh process and a second process's finds); (c) the same first step with the DB
# before call 3 (session-nov27's final, carried as .pin/old/) as the system DB.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
BENCH=0 XDIST=16 OUT=$R/tests timeout 300 scripts/gpu-check tests/torch tests/tuning tests/core/test_api_gpu.py \
  tests/core/test_tiered_gpu.py > $R/gpu-check.log 2>&1
echo "gpu-check rc=$? $(( $(date +%s) - T0 )) s"; grep -E "passed|failed" $R/gpu-check.log | tail -3
tar czf $OUT/r.tgz -C $OUT r
timeout 330 python3 bench/bench_models.py --models resnext101_32x8d --configs train32-amp --iters 20 --rounds 3 \
  --steps 10 --out $R/models > $R/models.log 2>&1
echo "bench_models rc=$? $(( $(date +%s) - T0 )) s"; tail -c 1500 $R/models/bench_models.md
tar czf $OUT/r.tgz -C $OUT r
left=$(( 585 - ($(date +%s) - T0) ))
for i in 1 2; do
  rm -f /tmp/old-user.sqlite
  MIOFIND_SYSTEM_DB=$PWD/.pin/old/sm_90-132.sqlite MIOFIND_DB=sqlite:////tmp/old-user.sqlite timeout $left \
    python3 bench/bench_models.py --first resnext101_32x8d train32-amp miofind > $R/first_olddb_$i.json 2> $R/first_olddb_$i.err
  echo "old-DB first step $i rc=$? $(( $(date +%s) - T0 )) s: $(cut -c1-400 $R/first_olddb_$i.json)"
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
done
tar czf $OUT/r.tgz -C $OUT r
