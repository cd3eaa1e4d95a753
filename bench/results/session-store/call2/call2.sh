#!/usr/bin/env bash
# Issue 18: A/B of a find's writes through sqlite3 (miofind.db.fastwrite: no SQLAlchemy import beside the finds)
# and cuBLASLt's set-up started at a miss with a GEMM candidate (cublas.prefetch_lt). "before" is the tree with
# ab.patch (`git diff 1668488 <commit> -- miofind`) reversed. First the GPU tests of what the change touches; then
# `miofind warmup`; then bench_cold (fresh-install first finds, warm finds, torch's first calls) after and before;
# then ResNet-50's first training step at batch 48 (find_breakdown), FP32 and AMP, alternating after / before.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
D=bench/results/session-store/call2
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < $D/ab.patch) || exit 1
python3 -m compileall -q -j 16 miofind solvers bench /tmp/before/miofind /tmp/before/solvers /tmp/before/bench > /dev/null 2>&1
R=$OUT/r2; mkdir -p $R
PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/t-user.sqlite MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 170 \
  python3 -m pytest -q -m gpu -p no:cacheprovider -n 12 tests/gemm/test_cublaslt_setup_gpu.py tests/core/test_api_gpu.py \
  tests/core/test_tiered_gpu.py tests/core/test_wrong_solver_gpu.py tests/core/test_isolate_gpu.py tests/torch \
  tests/cli > $R/tests.log 2>&1
tail -2 $R/tests.log
( PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 \
  python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -1 $R/warmup.log
cold() {  # name dir
  (cd $2 && PYTHONPATH=$2:/tmp/site timeout 100 python3 bench/bench_cold.py --out $R/cold-$1 \
     --shapes r50_128_28_3x3_n16,inc_160_17_1x7_n16 --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
     --timeout 45) > $R/cold-$1.log 2>&1
  echo "cold-$1 rc=$?"; python3 - $R/cold-$1/bench_cold.json $1 <<'PY'
import json, sys
try:
    rows = json.load(open(sys.argv[1]))["layers"]
except Exception as e:
    sys.exit(print(f"{sys.argv[2]}: no result ({e})"))
for k in ("empty", "warm"):
    print(sys.argv[2], k, " ".join(f"{r['shape'][:3]}-{r['dtype']}-{r['direction']}={r[k]['find_ms']:.0f}" for r in rows if k in r))
print(sys.argv[2], "torch", " ".join(f"{r['shape'][:3]}-{r['dtype']}-{r['direction']}={r['torch_first_ms']:.0f}" for r in rows))
PY
}
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {  # name dir [find_breakdown args]
  local name=$1 dir=$2; shift 2
  fresh
  (cd $dir && PYTHONPATH=$dir:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc timeout 90 \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"{sys.argv[2]}: no result ({e})"))
s = d["summary"]; t = s["timing_totals_ms"]; f0 = d["finds"][0] if d.get("finds") else {"wall_ms": 0}
print(f"{sys.argv[2]}: first step {s['step_s']:.2f} s; first find {f0['wall_ms']:.0f} ms; finds {s['find_wall_ms']/1e3:.2f} s: compile {t.get('compile_ms', 0)/1e3:.2f}, "
      f"reference {t.get('reference_ms', 0)/1e3:.2f}, verify {t.get('verify_ms', 0)/1e3:.2f}, timing {t.get('timing_ms', 0)/1e3:.2f}, "
      f"configs {t.get('configs_ms', 0)/1e3:.2f}, lookup {t.get('lookup_ms', 0)/1e3:.2f}, store {t.get('store_ms', 0)/1e3:.2f}")
PY
}
cold after $PWD
cold before /tmp/before
run_fb cudnn-fp32 $PWD --cudnn
for i in 1 2; do
  run_fb fp32-after$i $PWD
  run_fb fp32-before$i /tmp/before
done
run_fb amp-after1 $PWD --amp
run_fb amp-before1 /tmp/before --amp
run_fb fp32-after3 $PWD
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
