#!/usr/bin/env bash
# Call 2 again for FP32, whose runs there got a stray "--" argument and did not run: same host, A/B, "before" is
# this tree with ab.patch (`git diff 7c8fd6e 4834e76 -- miofind solvers`) reversed, "after" this tree. The timed
# cuDNN test that failed in call 2 under 8 parallel workers, alone; `miofind warmup`; ResNet-50's first step at
# batch 48 from fresh copies of the warmed caches, interleaved: FP32 before, after, before, after, before, after;
# AMP before, after; cuDNN's benchmark-mode FP32 first step.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
D=bench/results/session-step/call3
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < $D/ab.patch) || exit 1
python3 -m compileall -q -j 16 miofind solvers bench /tmp/before/miofind /tmp/before/solvers /tmp/before/bench > /dev/null 2>&1
R=$OUT/r3; mkdir -p $R
PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/t-user.sqlite MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 100 \
  python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/cudnn/test_cudnn_gpu.py -k fastest_plan_matches > $R/tests.log 2>&1
grep -E "^FP|passed|failed" $R/tests.log
( PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 \
  python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -2 $R/warmup.log
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {  # name side -- find_breakdown args
  local name=$1 side=$2 dir=$PWD; shift 2; [ $side = before ] && dir=/tmp/before
  fresh
  (cd $dir && PYTHONPATH=$dir:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc timeout 90 \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"{sys.argv[2]}: no result ({e})"))
s = d["summary"]; t = s["timing_totals_ms"]; f = d["finds"]
runs = [c["runs"] for r in f for c in r["timing"].get("candidates", [])]
print(f"{sys.argv[2]}: step {s['step_s']:.2f} s; finds {s['find_wall_ms']/1e3:.2f} s (first {f[0]['wall_ms'] if f else 0:.0f} ms): "
      f"compile {t.get('compile_ms', 0)/1e3:.2f}, reference {t.get('reference_ms', 0)/1e3:.2f}, verify {t.get('verify_ms', 0)/1e3:.2f}, "
      f"timing {t.get('timing_ms', 0)/1e3:.2f}, configs {t.get('configs_ms', 0)/1e3:.2f}, lookup {t.get('lookup_ms', 0)/1e3:.2f}, "
      f"store {t.get('store_ms', 0)/1e3:.2f}; {len(runs)} candidates, {t.get('predicted_deferred', 0):.0f} predicted losers deferred")
PY
}
run_fb fp32-before before
run_fb fp32-after after
run_fb fp32-before2 before
run_fb fp32-after2 after
run_fb fp32-before3 before
run_fb fp32-after3 after
run_fb amp-before before --amp
run_fb amp-after after --amp
run_fb cudnn-fp32 after --cudnn
python3 bench/results/session-ref/call7/winners.py $R fp32-before:fp32-before2 fp32-before2:fp32-before3 fp32-after:fp32-after2 \
  fp32-after2:fp32-after3 fp32-before:fp32-after fp32-before2:fp32-after2 fp32-before3:fp32-after3 amp-before:amp-after | tee $R/winners.txt
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
