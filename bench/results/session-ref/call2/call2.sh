#!/usr/bin/env bash
# Issue 18: the GEMM reference with its CuPy kernels warmed, background work after the finds, cuDNN's later
# plans in the background. GPU tests of the changed parts; `miofind warmup`; ResNet-50's first step at batch
# 48 before (353ee95: the tree with ab.patch reversed) and after, from fresh copies of the warmed caches, the
# after runs with a second step, the wait for the background work and 5 steady steps.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < ab.patch)
R=$OUT/r2; mkdir -p $R
MIOFIND_DB=sqlite:////tmp/t-user.sqlite MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 200 python3 -m pytest -q -m gpu \
  -p no:cacheprovider -n 8 tests/core/test_reference_gpu.py tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py \
  tests/core/test_wrong_solver_gpu.py tests/torch/test_torch_gpu.py tests/cudnn tests/tuning/test_tune_gpu.py > $R/tests.log 2>&1
tail -3 $R/tests.log
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -2 $R/warmup.log
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {
  local side=$1 name=$2 lim=$3; shift 3; fresh
  local dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc PYTHONPATH=$dir:/tmp/site timeout $lim \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]; t = s["timing_totals_ms"]
print(f"{sys.argv[2]}: step {s['step_s']:.2f} s; finds {t.get('total_ms', 0)/1e3:.2f} s: compile {t.get('compile_ms', 0)/1e3:.2f}, "
      f"reference {t.get('reference_ms', 0)/1e3:.2f}, verify {t.get('verify_ms', 0)/1e3:.2f}, timing {t.get('timing_ms', 0)/1e3:.2f}, "
      f"configs {t.get('configs_ms', 0)/1e3:.2f}, lookup {t.get('lookup_ms', 0)/1e3:.2f}, store {t.get('store_ms', 0)/1e3:.2f}, "
      f"deferred {t.get('deferred', 0):.0f}, later {t.get('configs_later', 0):.0f}; second {s.get('second_step_s', 0):.2f} s, "
      f"background {s.get('background_wait_s', 0):.1f} s, steady {s.get('steady_ms', 0):.1f} ms, replaced {s['stats'].get('replaced')}")
PY
}
run_fb before amp-before 40 --amp
run_fb after amp-after 90 --amp --steady 5
run_fb before fp32-before 40
run_fb after fp32-after 90 --steady 5
run_fb after amp-after2 40 --amp
run_fb before amp-before2 40 --amp
run_fb after fp32-after2 40
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
