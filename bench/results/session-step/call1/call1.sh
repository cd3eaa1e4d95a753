#!/usr/bin/env bash
# Diagnosis: where ResNet-50's first training step at batch 48 goes (fresh process, empty user DB, from fresh copies
# of `miofind warmup`'s caches), plain and under cProfile (`--profile`), FP32 and AMP; and cuDNN's benchmark-mode
# first step in the same set-up (`--cudnn`), for the baseline.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/r1; mkdir -p $R
( PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 \
  python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -2 $R/warmup.log
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {  # name -- find_breakdown args
  local name=$1; shift
  fresh
  PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc timeout 60 \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@" > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"{sys.argv[2]}: no result ({e})"))
s = d["summary"]; t = s["timing_totals_ms"]; f = d["finds"]
print(f"{sys.argv[2]}: step {s['step_s']:.2f} s; finds {s['find_wall_ms']/1e3:.2f} s (first {f[0]['wall_ms'] if f else 0:.0f} ms): "
      f"compile {t.get('compile_ms', 0)/1e3:.2f}, reference {t.get('reference_ms', 0)/1e3:.2f}, verify {t.get('verify_ms', 0)/1e3:.2f}, "
      f"timing {t.get('timing_ms', 0)/1e3:.2f}, configs {t.get('configs_ms', 0)/1e3:.2f}, lookup {t.get('lookup_ms', 0)/1e3:.2f}, "
      f"store {t.get('store_ms', 0)/1e3:.2f}")
PY
}
run_fb cudnn-fp32 --cudnn
run_fb fp32 
run_fb fp32-prof --profile
run_fb cudnn-amp --cudnn --amp
run_fb amp --amp
run_fb amp-prof --amp --profile
run_fb fp32-2
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
