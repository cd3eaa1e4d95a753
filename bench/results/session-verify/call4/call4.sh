#!/usr/bin/env bash
# Session verify, call 4 (call 3 again after the fix it showed: a find asked every candidate's workspace, and cuDNN's
# listed the heuristics' plans, so hints never applied; now only under a workspace limit): cuDNN plan hints at a find of an unseen problem (MIOFIND_CUDNN_HINTS, miofind.plan_hints).
# GPU tests of what the change touches (tests/cudnn with the two new hint tests, the find's API and tiered tests) and
# tests/gemm/test_gemm_gpu.py (the GEMM 1x1 time check now the best of 5 interleaved bursts); `miofind warmup`;
# then bench_cold's warm child on its 15 FP32 and 15 FP16 rows, hints on (unset) and off (MIOFIND_CUDNN_HINTS=0),
# one process per variant and round, fresh copies of the installed caches, three alternating rounds; then ResNet-50's
# first FP32 training step at batch 48 (find_breakdown), on / off alternating, twice.
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
MIOFIND_DB=sqlite:////tmp/t-user.sqlite MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 220 python3 -m pytest -q -m gpu \
  -p no:cacheprovider -n 10 -rfE tests/cudnn tests/gemm/test_gemm_gpu.py tests/core/test_api_gpu.py \
  tests/core/test_tiered_gpu.py > $R/tests.log 2>&1
echo "tests rc=$?"; tail -1 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head
wait $WPID; tail -1 $R/warmup.log
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,t,d] for t in ('fp32','fp16') for s in b.SHAPES for d in 'FBW']))")
for round in 1 2 3; do
  for v in on off; do
    rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab
    hints=1; [ $v = off ] && hints=0
    MIOFIND_CUDNN_HINTS=$hints MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
      timeout 100 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS" > $R/ab-$v-$round.jsonl 2> $R/ab-$v-$round.err
    echo "ab $v round $round rc=$? rows=$(grep -c '^{' $R/ab-$v-$round.jsonl)"
  done
done
python3 bench/results/session-verify/call3/ab_summary.py $R on off > $R/ab_summary.md; head -34 $R/ab_summary.md
run_fb() {  # name hints
  rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc
  MIOFIND_CUDNN_HINTS=$2 MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc timeout 90 \
    python3 bench/find_breakdown.py --out $R/fb-$1 > $R/fb-$1.log 2>&1
  python3 - $R/fb-$1/find_breakdown.json $1 <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"{sys.argv[2]}: no result ({e})"))
s = d["summary"]; t = s["timing_totals_ms"]
print(f"{sys.argv[2]}: first step {s['step_s']:.2f} s; finds {s['find_wall_ms']/1e3:.2f} s: configs {t.get('configs_ms', 0)/1e3:.2f}, "
      f"compile {t.get('compile_ms', 0)/1e3:.2f}, verify {t.get('verify_ms', 0)/1e3:.2f}, timing {t.get('timing_ms', 0)/1e3:.2f}, "
      f"hinted {t.get('hinted', 0)}")
PY
}
for i in 1 2; do run_fb on$i 1; run_fb off$i 0; done
gzip -f $R/tests.log
cd $OUT && tar czf r.tgz r && rm -rf r
echo "total $(( $(date +%s) - T0 )) s"
