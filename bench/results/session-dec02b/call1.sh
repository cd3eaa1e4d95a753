#!/usr/bin/env bash
# Session dec02b, call 1: an A/B of find.measure_order ("new": the own candidates measured first while the cuDNN
# prefetch thread still runs its plans' first runs, cuDNN's candidates after the wait for it; "base": call1/base.tgz,
# find.py before it, which waits for the thread before anything is timed) on bench_cold's 30 rows' warm finds (FP32
# NCHW and FP16 NHWC, F/B/W), in alternating child processes over a kernel cache a sync child filled, as session
# dec02a's call 1; then the GPU tests of the cuDNN prefetch and of finds.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
rm -f /tmp/b2-*.sqlite
mkdir -p /tmp/ab/base /tmp/ab/new/miofind $R/ab
tar xzf bench/results/session-dec02b/call1/base.tgz -C /tmp/ab/base
cp miofind/find.py /tmp/ab/new/miofind/
use() { cp /tmp/ab/$1/miofind/find.py miofind/; }
ROWS=$(python3 -c "
import json
print(json.dumps([[s, t, d] for t in ('fp32', 'fp16') for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24',
                  'r50_256_28_3x3s2_n16', 'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
child() {  # folder, name, rows, then env assignments
  local dir=$1 name=$2 rows=$3; shift 3
  env MIOFIND_DB=sqlite:////tmp/b2-$name.sqlite "$@" timeout 200 python3 bench/bench_cold.py --child miofind \
    --rows "$rows" --warmup > $dir/$name.jsonl 2> $dir/$name.err
  echo "$name rc=$? $(el) s"
}
use new; child $R/ab sync "$ROWS" MIOFIND_SPECIALIZE=sync; save
for i in 1 2 3 4 5 6; do
  [ $(el) -gt 420 ] && break
  if [ $((i % 2)) = 0 ]; then order="base new"; else order="new base"; fi
  for v in $order; do use $v; child $R/ab ${v}$i "$ROWS"; done; save
done
use new
python3 bench/results/session-dec01c/ab_summary.py $R/ab > $R/ab/summary.txt; cat $R/ab/summary.txt
python3 bench/results/session-dec01e/ab_parts.py $R/ab > $R/ab/parts.txt 2>&1; head -30 $R/ab/parts.txt
python3 bench/results/session-dec02b/own_times.py $R/ab > $R/ab/own_times.txt; tail -3 $R/ab/own_times.txt
gzip -f $R/ab/*.err; save
export MIOFIND_KERNEL_CACHE=/tmp/kct CUPY_CACHE_DIR=/tmp/cupyt MIOFIND_DB=sqlite:////tmp/b2-t-user.sqlite
timeout $(( 585 - $(el) )) python3 -m pytest -v -p no:cacheprovider -m gpu -k "prefetch or test_api_gpu" tests/cudnn/test_cudnn_gpu.py \
  tests/core/test_api_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E " FAILED| ERROR|passed|failed" $R/tests.log | tail -12; gzip -f $R/tests.log; save
echo "all $(el) s"
