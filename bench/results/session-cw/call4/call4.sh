#!/usr/bin/env bash
# Session cw, call 4: on call 3's DB (.pin/db3.sqlite.gz: F and B re-measured, W 295 of 416), the rest of the W
# records (add-solver-records --keep-tuned resumes), then ResNet-50 N=32 (FP16, BF16) re-tuned: W for the Hopper W
# solver (its space now has clusters with SPLITK), then F and B for the Hopper F and B solvers while time is left.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C $OUT r; }
gunzip -c .pin/db3.sqlite.gz > /tmp/db.sqlite
timeout 200 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperWrw --keep-tuned --seconds 170 \
  --json $R/add_wrw.json > $R/add_wrw.log 2>&1
echo "add W rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/add_wrw.log | cut -c1-300; save
tune() {   # tag direction... solver...
  local tag=$1; shift
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 60 ] && return
  MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout $left python3 -m miofind.cli tune --model resnet50 --batch 32 \
    --dtype fp16 --dtype bf16 --layout NHWC "$@" --retune --max-configs 64 --patience 24 --db sqlite:////tmp/db.sqlite \
    --json-out $R/tune_$tag.json > $R/tune_$tag.log 2>&1
  echo "tune $tag rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune_$tag.log | cut -c1-300; gzip -f $R/tune_$tag.log; save
}
tune W --direction W --tune-solver ConvImplicitGemmHopperWrw
tune FB --direction F --direction B --tune-solver ConvImplicitGemmHopperFwd --tune-solver ConvImplicitGemmHopperBwd
echo "done $(( $(date +%s) - T0 )) s"
