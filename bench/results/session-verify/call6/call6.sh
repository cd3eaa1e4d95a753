#!/usr/bin/env bash
# Session verify, call 6: the predicted-deferral factor 2 -> 1.6 (DEFAULT_PREDICT_DEFER; held-out presets in
# session-verify/defer/). GPU tests of the find's deferral and the torch policy; `miofind warmup`; bench_cold's warm
# child on its 30 rows with MIOFIND_PREDICT_DEFER=2 and unset (1.6), one process per variant and round, fresh copies
# of the installed caches, three alternating rounds; ResNet-50's first FP32 step at batch 48 (find_breakdown) 2 / 1.6
# alternating twice; then bench_cold side by side with torch at 1.6.
set -uo pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 -m miofind warmup --arch sm_90 ) \
  > $R/warmup.log 2>&1 &
WPID=$!
MIOFIND_DB=sqlite:////tmp/t-user.sqlite MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 200 python3 -m pytest -q -m gpu \
  -p no:cacheprovider -n 8 -rfE tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py tests/torch/test_torch_gpu.py \
  > $R/tests.log 2>&1
echo "tests rc=$?"; tail -1 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head
wait $WPID; tail -1 $R/warmup.log
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,t,d] for t in ('fp32','fp16') for s in b.SHAPES for d in 'FBW']))")
for round in 1 2 3; do
  for v in k2 k16; do
    rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab
    k=1.6; [ $v = k2 ] && k=2
    MIOFIND_PREDICT_DEFER=$k MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
      timeout 100 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS" > $R/ab-$v-$round.jsonl 2> $R/ab-$v-$round.err
    echo "ab $v round $round rc=$? rows=$(grep -c '^{' $R/ab-$v-$round.jsonl)"
  done
done
python3 bench/results/session-verify/call3/ab_summary.py $R k2 k16 > $R/ab_summary.md; head -34 $R/ab_summary.md
python3 bench/results/session-verify/call6/ab_best.py $R k2 k16 > $R/ab_best.md; tail -2 $R/ab_best.md
run_fb() {  # name factor [args]
  local name=$1 k=$2; shift 2
  rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc
  MIOFIND_PREDICT_DEFER=$k MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc timeout 90 \
    python3 bench/find_breakdown.py --out $R/fb-$name "$@" > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"{sys.argv[2]}: no result ({e})"))
s = d["summary"]; t = s["timing_totals_ms"]
print(f"{sys.argv[2]}: first step {s['step_s']:.2f} s; finds {s['find_wall_ms']/1e3:.2f} s: configs {t.get('configs_ms', 0)/1e3:.2f}, "
      f"compile {t.get('compile_ms', 0)/1e3:.2f}, verify {t.get('verify_ms', 0)/1e3:.2f}, timing {t.get('timing_ms', 0)/1e3:.2f}, "
      f"predicted_deferred {t.get('predicted_deferred', 0)}")
PY
}
for i in 1 2; do run_fb k2-$i 2; run_fb k16-$i 1.6; done
run_fb amp-k2 2 --amp; run_fb amp-k16 1.6 --amp
timeout 300 python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$?"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
gzip -f $R/tests.log
cd $OUT && tar czf r.tgz r && rm -rf r
echo "total $(( $(date +%s) - T0 )) s"
