#!/usr/bin/env bash
# Session nov27j, call 7, at the final code: a find measures the GEMM solvers' default algorithm only (their other
# places and W's splits are `miofind tune`'s; call 6's bench_cold, with every find listing 7 more places for the
# background, had FP32 warm finds 2-4x slower in 5 rows). (1) the GEMM GPU tests; (2) `miofind tune` of ResNet-50's N=32
# NHWC FP16/BF16 F and B problems, the four GEMM F/B solvers only, exhaustive over their 8 places, into a copy of the
# shipped DB (call 5's: its W tune in place); (3) every record of the 138 problems marked untrusted
# (session-cw/call6/stale_r50.py) and measured again on this host by scripts/add-solver-records --keys, all solvers but
# the naive ones, the GEMMs at their tuned configs; (4) `miofind warmup` and bench/bench_cold.py. Only r.tgz is left.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 120 python3 -m pytest -q -p no:cacheprovider -n 14 -m "gpu and not serial" \
  tests/gemm 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 150 python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction F --direction B --tune-solver GemmFwd1x1_0_1 --tune-solver GemmFwdRest \
  --tune-solver GemmBwd1x1_stride1 --tune-solver GemmBwdRest --retune --strategy exhaustive --max-configs 16 --patience 16 \
  --db sqlite:////tmp/db.sqlite --json-out $R/tune_FB.json > $R/tune_FB.log 2>&1
echo "tune FB rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune_FB.log | cut -c1-300; gzip -f $R/tune_FB.log; save
SOLVERS=$(python3 bench/results/session-cw/call6/stale_r50.py /tmp/db.sqlite 2> $R/stale.log | sed 's/--solver ConvDirectNaive[A-Za-z]*//g')
cat $R/stale.log
timeout 200 scripts/add-solver-records /tmp/db.sqlite $SOLVERS --keys bench/results/session-cw/call6/r50_keys.json \
  --seconds 180 --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/remeasure.log | cut -c1-300; save
unset MIOFIND_KERNEL_CACHE
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 220 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; save
left=$(( 592 - ($(date +%s) - T0) ))
[ $left -gt 90 ] && timeout $left python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc \
  --installed-cupy-cache /tmp/warm-cupy --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md 2>/dev/null | cut -c1-120
save
