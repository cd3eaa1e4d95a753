#!/usr/bin/env bash
# Issue 18, diagnosis: what a new process's first finds pay for importing SQLAlchemy (the store's FindDB
# layer, imported in a thread at the first miss) and for loading the shipped cost model (predicted losers).
# Same code both sides; "pre" processes import them at interpreter start (a sitecustomize on PYTHONPATH), i.e.
# before anything is timed. bench_cold's empty-cache (fresh install after `miofind warmup`) first finds, and
# ResNet-50's first FP32/AMP training step at batch 48 (find_breakdown), alternating plain / pre.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
python3 -c "import sitecustomize; print('existing sitecustomize:', sitecustomize.__file__)" 2>&1 | tail -1
R=$OUT/r1; mkdir -p $R /tmp/sc-sa /tmp/sc-sam
cat > /tmp/sc-sa/sitecustomize.py <<'PY'
import time as _t; _t0 = _t.perf_counter()
import miofind.db.findb  # noqa: F401  (SQLAlchemy)
import sys; print(f"[pre] sqlalchemy {(_t.perf_counter() - _t0) * 1e3:.0f} ms", file=sys.stderr)
PY
cat > /tmp/sc-sam/sitecustomize.py <<'PY'
import time as _t; _t0 = _t.perf_counter()
import miofind.db.findb  # noqa: F401  (SQLAlchemy)
_t1 = _t.perf_counter()
from miofind import costmodel as _cm
from miofind.db import system as _sy
import glob as _g, os as _o
for _p in _g.glob(_o.path.join(_o.path.dirname(_sy.__file__), "..", "..", "finddb", "*.sqlite")):
    _cm.model_for_db(_p)
import sys; print(f"[pre] sqlalchemy {(_t1 - _t0) * 1e3:.0f} ms, cost model {(_t.perf_counter() - _t1) * 1e3:.0f} ms", file=sys.stderr)
PY
( PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 \
  python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -1 $R/warmup.log
cold() {  # name extra-pythonpath
  (PYTHONPATH=$PWD:/tmp/site$2 timeout 100 python3 bench/bench_cold.py --out $R/cold-$1 \
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
run_fb() {  # name extra-pythonpath [find_breakdown args]
  local name=$1 extra=$2; shift 2
  fresh
  (PYTHONPATH=$PWD:/tmp/site$extra MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cc timeout 120 \
     python3 bench/find_breakdown.py --out $R/fb-$name "$@") > $R/fb-$name.log 2>&1
  python3 - $R/fb-$name/find_breakdown.json $name <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"{sys.argv[2]}: no result ({e})"))
s = d["summary"]; t = s["timing_totals_ms"]; f0 = d["finds"][0]
print(f"{sys.argv[2]}: first step {s['step_s']:.2f} s; first find {f0['wall_ms']:.0f} ms; finds {s['find_wall_ms']/1e3:.2f} s: compile {t.get('compile_ms', 0)/1e3:.2f}, "
      f"reference {t.get('reference_ms', 0)/1e3:.2f}, verify {t.get('verify_ms', 0)/1e3:.2f}, timing {t.get('timing_ms', 0)/1e3:.2f}, "
      f"configs {t.get('configs_ms', 0)/1e3:.2f}, lookup {t.get('lookup_ms', 0)/1e3:.2f}, store {t.get('store_ms', 0)/1e3:.2f}")
PY
}
cold plain ""
cold pre ":/tmp/sc-sam"
for i in 1 2; do
  run_fb fp32-plain$i ""
  run_fb fp32-sa$i ":/tmp/sc-sa"
  run_fb fp32-sam$i ":/tmp/sc-sam"
done
run_fb amp-plain1 "" --amp
run_fb amp-sam1 ":/tmp/sc-sam" --amp
grep -h '\[pre\]' $R/*.log | sort | uniq -c | head -5
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
