#!/usr/bin/env bash
# Same host, A/B: "before" is 81643a2 (this tree with ab.patch reversed: the 30 ms / 2 ms reference rule, every
# find candidate 10 timed runs), "after" is this tree (the ski-rental reference rule, the settle stop), "gemm" is
# this tree with MIOFIND_REFERENCE=gemm. ResNet-50's first step at batch 48 from fresh copies of `miofind warmup`'s
# caches, interleaved: FP32 before, after, gemm, before, after; AMP before, after. Then unseen layers' cold finds
# (bench_cold), after and before.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
D=bench/results/session-ref/call7
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < $D/ab.patch) || exit 1
R=$OUT/r7; mkdir -p $R
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
run_fb fp32-gemm after MIOFIND_REFERENCE=gemm --
run_fb fp32-before2 before MIOFIND_X=0 --
run_fb fp32-after2 after MIOFIND_X=0 --
run_fb amp-before before MIOFIND_X=0 -- --amp
run_fb amp-after after MIOFIND_X=0 -- --amp
for side in after before; do
  dir=$PWD; [ $side = before ] && dir=/tmp/before
  (cd $dir && PYTHONPATH=$dir:/tmp/site timeout 80 python3 bench/bench_cold.py --out $R/cold-$side \
     --shapes r50_128_28_3x3_n16,inc_160_17_1x7_n16 --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
     --timeout 35) > $R/cold-$side.log 2>&1
  echo "cold $side rc=$?"; sed -n '/^| layer/,/^$/p' $R/cold-$side/bench_cold.md 2>/dev/null | head -15
done
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
