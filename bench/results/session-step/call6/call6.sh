#!/usr/bin/env bash
# Diagnosis of a fresh process's first find (issue 18: <= 500 ms on a fresh install): bench_cold on two unseen layers
# with every find under cProfile (BENCH_COLD_PROFILE); and the steady step after the background work, before and
# after 4834e76 (ab.patch reversed), FP32 and AMP (`find_breakdown.py --steady 5`).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < bench/results/session-step/call2/ab.patch) || exit 1
python3 -m compileall -q -j 16 miofind solvers bench /tmp/before/miofind /tmp/before/solvers /tmp/before/bench > /dev/null 2>&1
R=$OUT/r6; mkdir -p $R
( PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 \
  python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -2 $R/warmup.log
(BENCH_COLD_PROFILE=$R/prof PYTHONPATH=$PWD:/tmp/site timeout 100 python3 bench/bench_cold.py --out $R/cold-prof \
   --shapes r50_128_28_3x3_n16,inc_160_17_1x7_n16 --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
   --timeout 45) > $R/cold-prof.log 2>&1
echo "cold rc=$?"; sed -n '/^| layer/,/^$/p' $R/cold-prof/bench_cold.md 2>/dev/null | head -15
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {  # name side [find_breakdown args]
  local name=$1 side=$2 dir=$PWD; shift 2; [ $side = before ] && dir=/tmp/before
  fresh
  (cd $dir && PYTHONPATH=$dir:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc timeout 120 \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"{sys.argv[2]}: no result ({e})"))
s = d["summary"]
print(f"{sys.argv[2]}: first step {s['step_s']:.2f} s, second {s.get('second_step_s', 0):.2f} s, background {s.get('background_wait_s', 0):.1f} s, "
      f"steady {s.get('steady_ms', 0):.1f} ms ({', '.join(f'{t:.1f}' for t in s.get('steady_all_ms', []))}); replaced {s['stats'].get('replaced')}")
PY
}
run_fb amp-before before --amp --steady 7
run_fb amp-after after --amp --steady 7
run_fb fp32-before before --steady 7
run_fb fp32-after after --steady 7
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
