#!/usr/bin/env bash
# Session nov27f, call 3 (MIOFIND_CUDNN_PREFETCH=build the default): (a) the backend-listing test as relaxed after
# call 2 and the prefetch tests; (b) `miofind warmup`, then bench_cold (the 30 unseen rows, warm and empty caches,
# torch's benchmark-mode first calls in the same run; the breakdown now has each solver's configs time); (c) ResNet-50's
# first training step at batch 48 (find_breakdown.py, empty user DB, fresh cache copies): FP32 build, off, build, AMP
# build.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
filt() { grep -v "leaked\|nanobind\|skipped remainder\|refleaks"; }
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 170 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1 &
WPID=$!
MIOFIND_KERNEL_CACHE=/tmp/t-kc MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 100 python3 -m pytest -q -p no:cacheprovider \
  -n 4 -m gpu tests/cudnn/test_cudnn_gpu.py -k "backend_heuristics or prefetches" -rA 2>&1 | filt > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -6
wait $WPID; tail -1 $R/warmup.log
timeout 280 python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md; pack
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
for run in "build 1" "off 1" "build 2" "build amp"; do
  set -- $run; fresh
  amp=""; [ $2 = amp ] && amp="--amp"
  MIOFIND_CUDNN_PREFETCH=$1 MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
    timeout 70 python3 bench/find_breakdown.py --out $R/fb-$1-$2 $amp > $R/fb-$1-$2.json 2> $R/fb-$1-$2.err
  echo "fb $1 $2 rc=$? $(python3 -c "import json;d=json.load(open('$R/fb-$1-$2.json'));print({k:v for k,v in d.items() if not isinstance(v,(dict,list))})" 2>&1 | tail -1) $(( $(date +%s) - T0 )) s"
  pack
done
