#!/usr/bin/env bash
# Same host, A/B: "before" is this tree with ab.patch (`git diff 7c8fd6e 4834e76 -- miofind solvers`) reversed,
# "after" is this tree (predicted losers measured in the background, the reference padded without cupy.pad, the
# upsert statement built once, the cuDNN handle without cuda-python). GPU tests of the changed parts; `miofind
# warmup`; ResNet-50's first step at batch 48 from fresh copies of the warmed caches, interleaved: FP32 before,
# after, before, after; AMP the same; cuDNN's benchmark-mode first step; one profiled FP32 step after; then unseen
# layers' cold finds (bench_cold), after and before.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
D=bench/results/session-step/call2
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < $D/ab.patch) || exit 1
python3 -m compileall -q -j 16 miofind solvers bench /tmp/before/miofind /tmp/before/solvers /tmp/before/bench > /dev/null 2>&1
R=$OUT/r2; mkdir -p $R
PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/t-user.sqlite MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 200 \
  python3 -m pytest -q -m gpu -p no:cacheprovider -n 8 tests/core/test_reference_gpu.py tests/core/test_tiered_gpu.py \
  tests/cudnn tests/torch tests/core/test_api_gpu.py > $R/tests.log 2>&1
tail -2 $R/tests.log
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
run_fb fp32-before before --
run_fb fp32-after after --
run_fb fp32-before2 before --
run_fb fp32-after2 after --
run_fb amp-before before --amp
run_fb amp-after after --amp
run_fb amp-before2 before --amp
run_fb amp-after2 after --amp
run_fb cudnn-fp32 after --cudnn
run_fb cudnn-amp after --cudnn --amp
run_fb fp32-prof after --profile
grep -c "cuda/bindings" $R/fb-fp32-prof/profile.txt | sed 's/^/cuda.bindings lines in the profile: /'
python3 bench/results/session-ref/call7/winners.py $R fp32-before:fp32-before2 fp32-after:fp32-after2 fp32-before:fp32-after \
  fp32-before2:fp32-after2 amp-before:amp-before2 amp-after:amp-after2 amp-before:amp-after amp-before2:amp-after2 | tee $R/winners.txt
for side in after before; do
  dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && PYTHONPATH=$dir:/tmp/site timeout 80 python3 bench/bench_cold.py --out $R/cold-$side \
     --shapes r50_128_28_3x3_n16,inc_160_17_1x7_n16 --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
     --timeout 35) > $R/cold-$side.log 2>&1
  echo "cold $side rc=$?"; sed -n '/^| layer/,/^$/p' $R/cold-$side/bench_cold.md 2>/dev/null | head -15
done
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
