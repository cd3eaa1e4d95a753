#!/usr/bin/env bash
# Session nov27j, call 5 (issue 19, W): backward weights' GEMM configs now also set the split of the pixels' reduction
# (call 4's search: split-K beyond the heuristic's list gained on ResNet-50's 1x1 W layers, 12.8 -> 10.6 us on one).
# (1) the GEMM GPU tests (the split configs verified); (2) `miofind tune` of ResNet-50's N=32 NHWC FP16/BF16 W problems,
# the two GEMM W solvers only, every config of their space (exhaustive: the default, 7 other places and 57 splits), into a copy of
# the shipped DB; (3) every record of those 46 problems marked untrusted (session-nov27/call8/stale_w.py) and measured
# again by scripts/add-solver-records --keys on this host, all solvers but the naive ones, the GEMMs at their tuned
# configs. Only r.tgz is left in $OUT.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
python3 -c "from miofind import cublas; print('cublasLt', cublas.lt_version())" >> $R/device.txt
save() { rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 150 python3 -m pytest -q -p no:cacheprovider -n 12 -m "gpu and not serial" \
  tests/gemm/test_gemm_gpu.py 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 300 python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction W --tune-solver GemmWrw1x1_stride1 --tune-solver GemmWrwUniversal \
  --retune --strategy exhaustive --max-configs 80 --patience 80 --db sqlite:////tmp/db.sqlite --json-out $R/tune_W.json \
  > $R/tune_W.log 2>&1
echo "tune W rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune_W.log | cut -c1-300; gzip -f $R/tune_W.log; save
SOLVERS=$(python3 bench/results/session-nov27/call8/stale_w.py /tmp/db.sqlite 2> $R/stale.log | sed 's/--solver ConvDirectNaive[A-Za-z]*//g')
cat $R/stale.log
left=$(( 570 - ($(date +%s) - T0) ))
timeout $left scripts/add-solver-records /tmp/db.sqlite $SOLVERS --keys bench/results/session-nov27/call8/r50_w_keys.json \
  --seconds $(( left - 20 )) --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/remeasure.log | cut -c1-300; save
