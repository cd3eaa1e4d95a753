#!/usr/bin/env bash
# Issue 18 (call 5): ResNet-50's first FP32 training step at batch 48 (find_breakdown, fresh processes, caches as
# `miofind warmup` left them) before and after session-warmfind's changes (ab.patch reversed, as in call 4),
# alternating, three each; AMP once each.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
D=bench/results/session-warmfind/call5
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < $D/ab.patch) || exit 1
python3 -m compileall -q -j 16 miofind solvers bench /tmp/before/miofind /tmp/before/solvers /tmp/before/bench > /dev/null 2>&1
R=$OUT/r5; mkdir -p $R
( PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 \
  python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -1 $R/warmup.log
run_fb() {  # name dir [find_breakdown args]
  local name=$1 dir=$2; shift 2
  rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc
  (cd $dir && PYTHONPATH=$dir:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc timeout 90 \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"{sys.argv[2]}: no result ({e})"))
s = d["summary"]; t = s["timing_totals_ms"]
print(f"{sys.argv[2]}: first step {s['step_s']:.2f} s; finds {s['find_wall_ms']/1e3:.2f} s: compile {t.get('compile_ms', 0)/1e3:.2f}, "
      f"reference {t.get('reference_ms', 0)/1e3:.2f}, setup {t.get('setup_ms', 0)/1e3:.2f}, verify {t.get('verify_ms', 0)/1e3:.2f}, "
      f"timing {t.get('timing_ms', 0)/1e3:.2f}, configs {t.get('configs_ms', 0)/1e3:.2f}, select {t.get('select_ms', 0)/1e3:.2f}")
PY
}
for i in 1 2 3; do
  run_fb fp32-after$i $PWD
  run_fb fp32-before$i /tmp/before
done
run_fb amp-after1 $PWD --amp
run_fb amp-before1 /tmp/before --amp
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
