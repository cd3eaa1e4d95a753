#!/usr/bin/env bash
# Session dec01c, call 1: PART=ab of session dec01b's prepared script, as it was written.
# Prepared by session dec01b (not run: device time spent). PLAN_next items 1-2: the C++ autograd kernels' gain on whole
# compiled steps, same process and machine: bench_compile_step.py --ab-autograd times miofind's compiled step a second
# time in each round with ops_autograd_set_on(False) (custom_op's Python autograd kernel). PART=ab (about 360 s): the
# custom-op GPU tests, then MobileNetV2 and ResNet-50 AMP train32 under mode="default". PART=inception, its own call:
# Inception-v3 AMP with nine rounds (on a cold kernel cache it needs over 240 s: call 3). One kernel cache path, so a
# warm machine reuses it.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd MIOFIND_DB=sqlite:////tmp/r/u.sqlite
if [ "${PART:-ab}" = ab ]; then     # the new GPU test of the recording path (not run in session dec01b)
  timeout 120 python3 -m pytest -q -p no:cacheprovider -n 0 tests/torch/test_fast.py -k "custom_ops" \
    > $R/tests.log 2>&1
  echo "tests rc=$? $(el) s"; tail -2 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head; save
fi
[ "${PART:-ab}" = ab ] && for M in mobilenet_v2 resnet50; do
  timeout 200 python3 bench/bench_compile_step.py --out $R/${M}_ab --models $M --configs train32-amp --mode default \
    --iters 20 --rounds 5 --ab-autograd > $R/${M}_ab.log 2>&1
  echo "$M rc=$? $(el) s"; grep "^| $M" $R/${M}_ab/bench_compile_step.md; save
done
if [ "${PART:-ab}" = inception ]; then
  timeout 540 python3 bench/bench_compile_step.py --out $R/inc_amp_default --models inception_v3 \
    --configs train32-amp --mode default --iters 20 --rounds 9 --ab-autograd > $R/inc_amp_default.log 2>&1
  echo "inception rc=$? $(el) s"; grep "^| inception_v3" $R/inc_amp_default/bench_compile_step.md; save
fi

# Session dec01c addition: a baseline of issue 18's Inception 1x7 FP32 warm finds on this machine (session nov30a's
# call 3 way: a MIOFIND_SPECIALIZE=sync child fills the kernel cache, then plain children on fresh user DBs), and
# torch's benchmark-mode first calls of the same rows, a child per row as bench_cold runs them.
ROWS='[["inc_160_17_1x7_n16","fp32","F"],["inc_160_17_1x7_n16","fp32","B"],["inc_160_17_1x7_n16","fp32","W"]]'
child() {  # name, then env assignments
  local name=$1; shift
  env MIOFIND_DB=sqlite:////tmp/$name.sqlite "$@" timeout 120 python3 bench/bench_cold.py --child miofind --rows "$ROWS" \
    --warmup > $R/$name.jsonl 2> $R/$name.err
  echo "$name rc=$? $(el) s"
  python3 -c "
import json,sys
for ln in open('$R/$name.jsonl'):
    r=json.loads(ln); t=r['timing'] or {}
    print(r['direction'], round(r['find_ms'],1), {k: round(t[k],1) for k in ('lookup_ms','select_ms','setup_ms','configs_ms','compile_ms','prefetch_wait_ms','measure_ms','verify_ms','timing_ms','store_ms') if k in t}, r['failures'])"
}
if [ "${PART:-ab}" = ab ]; then
  child sync MIOFIND_SPECIALIZE=sync; save
  for i in 1 2 3; do
    child plain$i; save
    for row in F B W; do
      timeout 60 python3 bench/bench_cold.py --child torch --rows "[[\"inc_160_17_1x7_n16\",\"fp32\",\"$row\"]]" \
        >> $R/torch.jsonl 2>> $R/torch.err
    done
  done
  python3 -c "
import json
for ln in open('$R/torch.jsonl'):
    if ln.startswith('{'): r=json.loads(ln); print('torch', r.get('direction'), {k: v for k, v in r.items() if k.endswith('_ms')})"
  gzip -f $R/*.err; save
fi
echo "all $(el) s"
