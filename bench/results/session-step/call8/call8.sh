#!/usr/bin/env bash
# At the final code: ResNet-50's first step at batch 48 from fresh copies of the warmed caches, FP32 three times and
# AMP once, after cuDNN's benchmark-mode FP32 first step in the same call (no before side: calls 2-3 compared).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
R=$OUT/r8; mkdir -p $R
( PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 \
  python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -1 $R/warmup.log
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
t = s["timing_totals_ms"]
print(f"{sys.argv[2]}: first step {s['step_s']:.2f} s; finds {s['find_wall_ms']/1e3:.2f} s: compile {t.get('compile_ms', 0)/1e3:.2f}, "
      f"reference {t.get('reference_ms', 0)/1e3:.2f}, verify {t.get('verify_ms', 0)/1e3:.2f}, timing {t.get('timing_ms', 0)/1e3:.2f}, "
      f"configs {t.get('configs_ms', 0)/1e3:.2f}, lookup {t.get('lookup_ms', 0)/1e3:.2f}, store {t.get('store_ms', 0)/1e3:.2f}")
PY
}
run_fb cudnn-fp32 after --cudnn
run_fb fp32-a after
run_fb fp32-b after
run_fb fp32-c after
run_fb amp-a after --amp
cd $OUT && tar czf r8.tgz r8 && rm -rf r8
