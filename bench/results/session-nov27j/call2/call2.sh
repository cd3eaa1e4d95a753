#!/usr/bin/env bash
# Session nov27j, call 2 (issue 19): the GEMM solvers now take a config naming one of the cuBLASLt heuristic's first 8
# algorithms (call 1: the heuristic's first against the best of its list, ResNet-50's 1x1 layers at N=32 FP16 NHWC,
# GEMM / cuDNN 1.01 -> 0.96 F, 1.00 -> 0.94 B, 1.02 -> 0.96 W). Every record of ResNet-50's 138 N=32 NHWC FP16/BF16
# problems in a copy of the shipped DB is marked untrusted (session-cw/call6/stale_r50.py) and measured again on this
# host by scripts/add-solver-records --keys, every solver that had a record but the naive ones, cuDNN's plans beside
# ours; a benchmark find of a GEMM solver without a tuned config measures all of its listed algorithms.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
python3 -c "from miofind import cublas; print('cublasLt', cublas.lt_version())" >> $R/device.txt
save() { rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C $OUT r; }
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
SOLVERS=$(python3 bench/results/session-cw/call6/stale_r50.py /tmp/db.sqlite 2> $R/stale.log | sed 's/--solver ConvDirectNaive[A-Za-z]*//g')
cat $R/stale.log; echo "solvers: $SOLVERS"
timeout 500 scripts/add-solver-records /tmp/db.sqlite $SOLVERS --keys bench/results/session-cw/call6/r50_keys.json \
  --seconds 470 --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/remeasure.log | cut -c1-400; save
