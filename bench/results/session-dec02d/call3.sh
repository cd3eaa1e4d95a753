#!/usr/bin/env bash
# Session dec02d, call 3 (issue 18): call 2's A/B again with a third arm, after the background jobs of miofind.tiered
# wait for no find to run before their module loads and reference (call 2: their loads landed in later finds of the
# same process). Arms, alternating child processes over bench_cold's 30 rows (warm finds, a kernel cache a sync child
# filled): "new" (this tree: the waits, MIOFIND_PREDICT_KEEP=3), "base" (the waits, MIOFIND_PREDICT_KEEP=0) and
# "old" (tiered.py before the waits, tiered_old.py in call3/tiered_old.tgz, and MIOFIND_PREDICT_KEEP=0: the find
# before this session; as run, the file lay in call3/ unpacked).
# ab/ compares new with base, abo/ new with old. Then the GPU tests of the find and of tiered.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/c3-cupyd MIOFIND_KERNEL_CACHE=/tmp/c3-kcd
rm -f /tmp/c3b-*.sqlite
mkdir -p $R/ab $R/abo /tmp/c3v/new /tmp/c3v/old
cp miofind/tiered.py /tmp/c3v/new/; tar xzf bench/results/session-dec02d/call3/tiered_old.tgz -O > /tmp/c3v/old/tiered.py
ROWS=$(python3 -c "
import json
print(json.dumps([[s, t, d] for t in ('fp32', 'fp16') for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24',
                  'r50_256_28_3x3s2_n16', 'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
child() {  # folder, name, arm, then env assignments
  local dir=$1 name=$2 v=$3; shift 3
  local keep=(); [ $v != new ] && keep=(MIOFIND_PREDICT_KEEP=0)
  if [ $v = old ]; then cp /tmp/c3v/old/tiered.py miofind/; else cp /tmp/c3v/new/tiered.py miofind/; fi
  env MIOFIND_DB=sqlite:////tmp/c3b-$v-$name.sqlite ${keep[@]+"${keep[@]}"} "$@" timeout 60 python3 bench/bench_cold.py \
    --child miofind --rows "$ROWS" --warmup > $dir/$name.jsonl 2> $dir/$name.err
  echo "$v $name rc=$? $(el) s"
}
child $R/ab sync new MIOFIND_SPECIALIZE=sync; save
for i in $(seq 1 14); do
  [ $(el) -gt 230 ] && break
  case $((i % 3)) in 1) order="new base old";; 2) order="base old new";; 0) order="old new base";; esac
  for v in $order; do
    case $v in new) child $R/ab new$i new;; base) child $R/ab base$i base;; old) child $R/abo base$i old;; esac
  done; save
done
cp /tmp/c3v/new/tiered.py miofind/
cp $R/ab/new*.jsonl $R/abo/
for d in ab abo; do
  python3 bench/results/session-dec01c/ab_summary.py $R/$d > $R/$d/summary.txt 2>&1; tail -1 $R/$d/summary.txt
  python3 bench/results/session-dec01e/ab_parts.py $R/$d > $R/$d/parts.txt 2>&1; head -16 $R/$d/parts.txt
done
gzip -f $R/ab*/*.err; save
export MIOFIND_KERNEL_CACHE=/tmp/c3-kct CUPY_CACHE_DIR=/tmp/c3-cupyt MIOFIND_DB=sqlite:////tmp/c3-t-user.sqlite
timeout $(( 560 - $(el) )) python3 -m pytest -q -p no:cacheprovider -m gpu tests/core/test_tiered_gpu.py \
  tests/core/test_api_gpu.py tests/core/test_isolate_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E " FAILED| ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log; save
echo "all $(el) s"
