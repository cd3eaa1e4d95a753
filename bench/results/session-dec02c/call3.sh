#!/usr/bin/env bash
# Session dec02c, call 3 (an H200): an A/B/C of the find's preparation started as each candidate is listed
# ("new": the working tree's find.py, Deferral and prepare_all over the listing generator; "newp": the same with the
# listing and preparation under harness.prompt_gil; "base": find.py before it; call3/variants.tgz) on bench_cold's
# 30 rows' warm finds in alternating child processes over a kernel cache a sync child filled, as session dec02b's
# call 1; then bench_cold's whole table and the find's GPU tests at the working tree's code.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/c3-cupyd MIOFIND_KERNEL_CACHE=/tmp/c3-kcd
rm -f /tmp/c3b-*.sqlite
mkdir -p /tmp/c3v/new/miofind $R/ab $R/abp
tar xzf bench/results/session-dec02c/call3/variants.tgz -C /tmp/c3v
cp miofind/find.py /tmp/c3v/new/miofind/
use() { cp /tmp/c3v/$1/miofind/find.py miofind/; }
ROWS=$(python3 -c "
import json
print(json.dumps([[s, t, d] for t in ('fp32', 'fp16') for s in ('r50_128_28_3x3_n16', 'r50_256to64_56_1x1_n24',
                  'r50_256_28_3x3s2_n16', 'inc_48to64_35_5x5_n16', 'inc_160_17_1x7_n16') for d in 'FBW']))")
child() {  # folder, name, variant, then env assignments
  local dir=$1 name=$2 v=$3; shift 3
  use $v
  env MIOFIND_DB=sqlite:////tmp/c3b-$v-$name.sqlite "$@" timeout 60 python3 bench/bench_cold.py --child miofind \
    --rows "$ROWS" --warmup > $dir/$name.jsonl 2> $dir/$name.err
  echo "$v $name rc=$? $(el) s"
}
child $R/ab sync new MIOFIND_SPECIALIZE=sync; save
for i in 1 2 3 4 5 6; do
  [ $(el) -gt 150 ] && break
  case $((i % 3)) in
    1) order="new newp base";; 2) order="base new newp";; 0) order="newp base new";;
  esac
  for v in $order; do
    case $v in new) child $R/ab new$i new;; newp) child $R/abp new$i newp;; base) child $R/ab base$i base;; esac
  done; save
done
use new
cp $R/ab/base*.jsonl $R/abp/
for d in ab abp; do
  python3 bench/results/session-dec01c/ab_summary.py $R/$d > $R/$d/summary.txt 2>&1; tail -1 $R/$d/summary.txt
  python3 bench/results/session-dec01e/ab_parts.py $R/$d > $R/$d/parts.txt 2>&1; head -16 $R/$d/parts.txt
  python3 bench/results/session-dec02b/own_times.py $R/$d > $R/$d/own_times.txt 2>&1; tail -1 $R/$d/own_times.txt
done
gzip -f $R/ab*/*.err; save
# the whole table at the working tree's code
MIOFIND_KERNEL_CACHE=/tmp/c3-kc CUPY_CACHE_DIR=/tmp/c3-cupy timeout 250 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
I="--installed-cache /tmp/c3-kc --installed-cupy-cache /tmp/c3-cupy"
timeout $(( 520 - $(el) )) python3 bench/bench_cold.py --out $R/cold $I --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(el) s"
sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md | cut -d'|' -f2-8
gzip -f $R/*.log; save
export MIOFIND_KERNEL_CACHE=/tmp/c3-kct CUPY_CACHE_DIR=/tmp/c3-cupyt MIOFIND_DB=sqlite:////tmp/c3-t-user.sqlite
timeout $(( 585 - $(el) )) python3 -m pytest -q -p no:cacheprovider -m gpu tests/core/test_tiered_gpu.py \
  tests/core/test_api_gpu.py tests/core/test_isolate_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E " FAILED| ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log; save
echo "all $(el) s"
