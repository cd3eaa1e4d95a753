#!/usr/bin/env bash
# After the fixes: the tiered and miofind.torch GPU tests; `miofind warmup`; unseen layers' cold finds
# (bench_cold) before (a14c42f: the tree with ab.patch reversed) and after; a second round of ResNet-50's first
# AMP step at batch 48 before and after (as ../call2).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < ab.patch)
R=$OUT/r6; mkdir -p $R
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -n 8 \
  tests/core/test_tiered_gpu.py tests/torch/test_torch_gpu.py > $R/tests.log 2>&1
tail -1 $R/tests.log
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 160 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -1 $R/warmup.log
for side in before after; do
  dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && PYTHONPATH=$dir:/tmp/site timeout 100 python3 $PWD/bench/bench_cold.py --out $R/cold-$side \
     --shapes r50_128_28_3x3_n16,inc_160_17_1x7_n16 --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
     --timeout 45) > $R/cold-$side.log 2>&1
  echo "cold $side rc=$?"
done
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {
  local side=$1 name=$2; shift 2; fresh
  local dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc PYTHONPATH=$dir:/tmp/site timeout 75 \
     python3 bench/find_breakdown.py --steady 5 --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]; t = s["timing_totals_ms"]
print(f"{sys.argv[2]}: step {s['step_s']:.2f} s, second {s.get('second_step_s', 0):.2f} s, background wait "
      f"{s.get('background_wait_s', 0):.1f} s, steady {s.get('steady_ms', 0):.1f} ms; compile {t.get('compile_ms', 0)/1e3:.1f} s, "
      f"deferred {t.get('deferred', 0):.0f}, replaced {s['stats'].get('replaced')}")
PY
}
cp bench/find_breakdown.py /tmp/before/bench/find_breakdown.py
run_fb after amp-after --amp
run_fb before amp-before --amp
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
