#!/usr/bin/env bash
# Session nov27, call 8 (issue 19, W): call 7's re-tune wrote 11 Hopper W records on its host beside cuDNN's from
# session-cw's call 6 host. So every record of ResNet-50's 46 N=32 NHWC FP16/BF16 W problems is marked untrusted
# (stale_w.py) on call 7's DB (.pin/db7.sqlite.gz) and measured again here by scripts/add-solver-records --keys, all
# solvers but the naive one, cuDNN's plans beside ours, on one host (as session-cw's call 6 did for all 138 problems).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C $OUT r; }
gunzip -c .pin/db7.sqlite.gz > /tmp/db.sqlite
python3 bench/results/session-nov27/call8/stale_w.py /tmp/db.sqlite > /dev/null 2> $R/stale.log; cat $R/stale.log
timeout 400 scripts/add-solver-records /tmp/db.sqlite --solver ConvCudnnWrw --solver ConvImplicitGemmHopperWrw \
  --solver ConvImplicitGemmSmallCWrw --solver ConvImplicitGemmWrw --solver GemmWrw1x1_stride1 --solver GemmWrwUniversal \
  --keys bench/results/session-nov27/call8/r50_w_keys.json --seconds 380 --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/remeasure.log | cut -c1-300; save
