#!/usr/bin/env bash
# Prepared in session nov27j (NOT RUN: its device time was spent), for the next session. (1) The GPU tests that ran
# only at this session's draft (every find listing the GEMMs' other places): miofind.torch's, the tiered finds', the
# tuner's. (2) The GEMM configs for the shipped DB's other FP16/BF16 NHWC N=32 preset groups (other_keys.json, 582
# problems, keys.py): `miofind tune` of the six GEMM solvers over their spaces (8 places, W also 57 splits) per model
# into a copy of the shipped DB, then every record of those problems marked untrusted (stale.py) and measured again on
# one host by scripts/add-solver-records --keys. On the CPU afterwards: call7/merge.py (shipped DB, this call's DB, OUT, keys),
# ratios, and the immediate-mode model retrained. Expect two calls: the re-measure of 582 problems may need its own.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
P=bench/results/session-nov27j/prepared
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
python3 -c "from miofind import cublas; print('cublasLt', cublas.lt_version())" >> $R/device.txt
save() { rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 200 python3 -m pytest -q -p no:cacheprovider -n 14 -m "gpu and not serial" \
  tests/torch tests/core/test_tiered_gpu.py tests/tuning 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
for m in inception_v3 mobilenet_v2 vgg16 resnet101 unet; do
  left=$(( 400 - ($(date +%s) - T0) )); [ $left -lt 30 ] && break
  MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout $left python3 -m miofind.cli tune --model $m --batch 32 \
    --dtype fp16 --dtype bf16 --layout NHWC --tune-solver GemmFwd1x1_0_1 --tune-solver GemmFwdRest \
    --tune-solver GemmBwd1x1_stride1 --tune-solver GemmBwdRest --tune-solver GemmWrw1x1_stride1 \
    --tune-solver GemmWrwUniversal --retune --strategy exhaustive --max-configs 80 --patience 80 \
    --db sqlite:////tmp/db.sqlite --json-out $R/tune_$m.json > $R/tune_$m.log 2>&1
  echo "tune $m rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune_$m.log | cut -c1-200; gzip -f $R/tune_$m.log; save
done
SOLVERS=$(python3 $P/stale.py $P/other_keys.json /tmp/db.sqlite 2> $R/stale.log | sed 's/--solver ConvDirectNaive[A-Za-z]*//g')
cat $R/stale.log
left=$(( 585 - ($(date +%s) - T0) ))
timeout $left scripts/add-solver-records /tmp/db.sqlite $SOLVERS --keys $P/other_keys.json --seconds $(( left - 15 )) \
  --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/remeasure.log | cut -c1-300; save
