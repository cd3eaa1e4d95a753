#!/usr/bin/env bash
# Session dec02a, call 1 (an H200): an A/B of the deferral check moved into the preparation threads (find.prepare_all's
# may_defer, find._defer; and verify.random_array's FP32 inputs without a copy) on bench_cold's 15 FP32 rows' warm finds
# ("new": this code; "base": call1/base.tgz, find.py and verify.py before it) in alternating child processes, as
# session dec01e's call 1; two BENCH_COLD_TIMELINE children on the Inception 1x7 FP32 rows; then the GPU tests of the
# code it touches (deferral, isolation, first runs, finds, verification).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
mkdir -p /tmp/ab/base /tmp/ab/new/miofind $R/ab
tar xzf bench/results/session-dec02a/call1/base.tgz -C /tmp/ab/base
cp miofind/find.py miofind/verify.py /tmp/ab/new/miofind/
use() { cp /tmp/ab/$1/miofind/find.py /tmp/ab/$1/miofind/verify.py miofind/; }
ROWS=$(python3 -c "
import json
print(json.dumps([[s, 'fp32', d] for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24', 'r50_256_28_3x3s2_n16',
                                            'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
child() {  # folder, name, rows, then env assignments
  local dir=$1 name=$2 rows=$3; shift 3
  env MIOFIND_DB=sqlite:////tmp/$name.sqlite "$@" timeout 150 python3 bench/bench_cold.py --child miofind --rows "$rows" \
    --warmup > $dir/$name.jsonl 2> $dir/$name.err
  echo "$name rc=$? $(el) s"
}
use new; child $R/ab sync "$ROWS" MIOFIND_SPECIALIZE=sync; save
for i in 1 2 3 4 5 6; do
  [ $(el) -gt 250 ] && break
  if [ $((i % 2)) = 0 ]; then order="base new"; else order="new base"; fi
  for v in $order; do use $v; child $R/ab ${v}$i "$ROWS"; done; save
done
use new
python3 bench/results/session-dec01c/ab_summary.py $R/ab > $R/ab/summary.txt; cat $R/ab/summary.txt
python3 bench/results/session-dec01e/ab_parts.py $R/ab > $R/ab/parts.txt 2>&1; head -30 $R/ab/parts.txt
R2='[["inc_160_17_1x7_n16","fp32","F"],["inc_160_17_1x7_n16","fp32","B"],["inc_160_17_1x7_n16","fp32","W"]]'
mkdir -p $R/diag
child $R/diag tl1 "$R2" BENCH_COLD_TIMELINE=$R/diag/tl1
child $R/diag tl2 "$R2" BENCH_COLD_TIMELINE=$R/diag/tl2
gzip -f $R/ab/*.err $R/diag/*.err; save
export MIOFIND_KERNEL_CACHE=/tmp/kct CUPY_CACHE_DIR=/tmp/cupyt MIOFIND_DB=sqlite:////tmp/t-user.sqlite
timeout $(( 570 - $(el) )) python3 -m pytest -v -p no:cacheprovider -m gpu tests/core/test_tiered_gpu.py \
  tests/core/test_isolate_gpu.py tests/core/test_api_gpu.py tests/core/test_verify_gpu.py tests/gemm/test_first_run.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E " FAILED| ERROR|passed|failed" $R/tests.log | tail -12; gzip -f $R/tests.log; save
echo "all $(el) s"
