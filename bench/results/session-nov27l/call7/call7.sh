#!/usr/bin/env bash
# Session nov27l, call 7: compute-sanitizer (memcheck, racecheck) on the three-warpgroup tiles: scripts/sanitize over the
# Hopper W solver's tiny problems with a WGS = 3 cluster config (valid on nhwc_tma_walk, the others run their default),
# then the F and B solvers' with the WGS = 3 persistent copy-engine config (valid on nhwc_tma_walk for F, nhwc_tma_b_s2
# for B).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site SANITIZE_TIMEOUT=60
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C /tmp r; }
OUT=$R/w scripts/sanitize --solvers ConvImplicitGemmHopperWrw --every \
  --config '{"BM":192,"BN":128,"WGS":3,"STAGES":4,"SPLITK":1,"CLUSTER":2,"WSPEC":1,"TMA":1,"ST16":0}' 2>&1 | tail -4
echo "W $(( $(date +%s) - T0 )) s"; save
OUT=$R/fb scripts/sanitize --solvers ConvImplicitGemmHopperFwd,ConvImplicitGemmHopperBwd --every \
  --config '{"BM":192,"BN":128,"WGS":3,"STAGES":4,"PERSIST":1,"SPLITK":1,"WSPEC":1,"TMA":1,"PINGPONG":0}' 2>&1 | tail -4
echo "FB $(( $(date +%s) - T0 )) s"; save
