#!/usr/bin/env bash
# Issue 18: the float64 reference as GEMMs per filter tap. GPU tests of the reference and its users, the
# reference's cost per ResNet-50 layer (naive kernel against GEMMs, first use in a fresh process), then
# ResNet-50's first step at batch 48 (AMP and FP32) before (353ee95: the tree with ab.patch reversed) and
# after, each from fresh copies of the caches `miofind warmup --arch sm_90` filled.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < ab.patch)
R=$OUT/r1; mkdir -p $R
MIOFIND_DB=sqlite:////tmp/t-user.sqlite MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 170 python3 -m pytest -q -m gpu \
  -p no:cacheprovider -n 8 tests/core/test_reference_gpu.py tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py \
  tests/core/test_wrong_solver_gpu.py tests/core/test_verify_gpu.py > $R/tests.log 2>&1
tail -3 $R/tests.log
MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 110 python3 bench/bench_reference.py --first-use --deadline 70 --out $R/ref > $R/ref.log 2>&1
tail -12 $R/ref.log
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -1 $R/warmup.log
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {
  local side=$1 name=$2; shift 2; fresh
  local dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc PYTHONPATH=$dir:/tmp/site timeout 60 \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]; t = s["timing_totals_ms"]
print(f"{sys.argv[2]}: step {s['step_s']:.2f} s; finds {t.get('total_ms', 0)/1e3:.2f} s: compile {t.get('compile_ms', 0)/1e3:.2f}, "
      f"reference {t.get('reference_ms', 0)/1e3:.2f} (wait {t.get('reference_wait_ms', 0)/1e3:.2f}), verify {t.get('verify_ms', 0)/1e3:.2f}, "
      f"timing {t.get('timing_ms', 0)/1e3:.2f}, configs {t.get('configs_ms', 0)/1e3:.2f}, lookup {t.get('lookup_ms', 0)/1e3:.2f}, "
      f"store {t.get('store_ms', 0)/1e3:.2f}")
PY
}
run_fb before amp-before --amp
run_fb after amp-after --amp
run_fb before fp32-before
run_fb after fp32-after
run_fb after amp-after2 --amp
run_fb before amp-before2 --amp
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
