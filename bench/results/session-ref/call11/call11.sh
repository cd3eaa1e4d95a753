#!/usr/bin/env bash
# Same host, A/B of cuDNN's configs_now 3 -> 2: before is this tree with ab.patch (`git diff 74e1c9a~1 74e1c9a --
# solvers`) reversed, after is this tree. The tiered and cuDNN GPU tests; `miofind warmup`; ResNet-50's first step
# at batch 48 from fresh copies of the warmed caches, interleaved: FP32 before, after, before, after; AMP before, after.
# Result: tests 308 passed. FP32 first step before 6.96 / 5.85 s, after 5.98 / 5.50 s (timing 1.04-1.13 -> 0.89-0.94 s,
# verify 0.60-0.61 -> 0.50-0.53 s; 382 -> 314 candidates); AMP 5.69 -> 5.54 s. Winners (`winners.txt`, by
# `../call7/winners.py`): before against after the same in 61-64 of 68, where same-code pairs agree in 61 and 62.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
D=bench/results/session-ref/call11
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < $D/ab.patch) || exit 1
R=$OUT/r11; mkdir -p $R
PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/t-user.sqlite MIOFIND_KERNEL_CACHE=/tmp/t-kc timeout 150 \
  python3 -m pytest -q -m gpu -p no:cacheprovider -n 8 tests/core/test_tiered_gpu.py tests/cudnn > $R/tests.log 2>&1
tail -2 $R/tests.log
( PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 \
  python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -2 $R/warmup.log
fresh() { rm -rf /tmp/kc /tmp/cc && cp -r /tmp/warm-kc /tmp/kc && cp -r /tmp/warm-cupy /tmp/cc; }
run_fb() {  # name side [env...] -- find_breakdown args
  local name=$1 side=$2 dir=$PWD; shift 2; [ $side = before ] && dir=/tmp/before
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  fresh
  (cd $dir && env "${envs[@]}" PYTHONPATH=$dir:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc timeout 60 \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"{sys.argv[2]}: no result ({e})"))
s = d["summary"]; t = s["timing_totals_ms"]
runs = [c["runs"] for r in d["finds"] for c in r["timing"].get("candidates", [])]
print(f"{sys.argv[2]}: step {s['step_s']:.2f} s; finds {t.get('total_ms', 0)/1e3:.2f} s: compile {t.get('compile_ms', 0)/1e3:.2f}, "
      f"reference {t.get('reference_ms', 0)/1e3:.2f}, verify {t.get('verify_ms', 0)/1e3:.2f}, timing {t.get('timing_ms', 0)/1e3:.2f}, "
      f"configs {t.get('configs_ms', 0)/1e3:.2f}, lookup {t.get('lookup_ms', 0)/1e3:.2f}, store {t.get('store_ms', 0)/1e3:.2f}; "
      f"timed runs {sum(runs)} over {len(runs)} candidates")
PY
}
run_fb fp32-before before MIOFIND_X=0 --
run_fb fp32-after after MIOFIND_X=0 --
run_fb fp32-before2 before MIOFIND_X=0 --
run_fb fp32-after2 after MIOFIND_X=0 --
run_fb amp-before before MIOFIND_X=0 -- --amp
run_fb amp-after after MIOFIND_X=0 -- --amp
cd $OUT && tar czf r11.tgz r11 && rm -rf r11
