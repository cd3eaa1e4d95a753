#!/usr/bin/env bash
# Issue 18: why the steady AMP step was slower after deferral (call2: 30.0 vs 22.4 ms): --rechoose re-prepares every
# problem from the FindDB after the steady steps and times them again.
# GPU tests of the changed parts, `miofind warmup`, then ResNet-50's first step at batch 48 (AMP and FP32),
# before (this session's start, a14c42f: the tree with ab.patch reversed) and after, each on fresh copies of
# the installed caches, with a second step, the wait for the background work and 5 steady steps.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < ab.patch)
R=$OUT/r3; mkdir -p $R
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -n 8 \
  tests/core/test_tiered_gpu.py tests/torch/test_torch_gpu.py -k "not resnet50" > $R/tests.log 2>&1
tail -3 $R/tests.log
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 160 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -1 $R/warmup.log
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {
  local side=$1 name=$2; shift 2; fresh
  local dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc PYTHONPATH=$dir:/tmp/site timeout 100 \
     python3 bench/find_breakdown.py --steady 5 --rechoose --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]; t = s["timing_totals_ms"]
print(f"{sys.argv[2]}: step {s['step_s']:.2f} s, second {s.get('second_step_s', 0):.2f} s, background wait "
      f"{s.get('background_wait_s', 0):.1f} s, steady {s.get('steady_ms', 0):.1f} ms, rechosen {s.get('rechosen_ms', 0):.1f} ms; compile {t.get('compile_ms', 0)/1e3:.1f} s, "
      f"deferred {t.get('deferred', 0):.0f}, replaced {s['stats'].get('replaced')}")
PY
}
cp bench/find_breakdown.py /tmp/before/bench/find_breakdown.py
run_fb before amp-before --amp
run_fb after amp-after --amp
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
