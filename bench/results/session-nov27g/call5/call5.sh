#!/usr/bin/env bash
# Session nov27g, call 5 (NOT RUN: the session's device time was spent; for the next session).
# (a) `miofind warmup` alone: its stamp (warmup.json) written, with "device": true (34bc632, CPU-tested only);
# (b) why the ResNet stride-2 3x3 B row's warm find spends 40-70 ms in `setup`, as long as its naive float64
#     reference's GPU time, which setup only queues (calls 2 and 3): the warm child of that row and of the other
#     FP32 rows under cProfile (BENCH_COLD_PROFILE), then the same rows with MIOFIND_REFERENCE=gemm, where the GEMM
#     reference replaces the naive kernel;
# (c) bench_cold FP32 and FP16 at the `load` default with the stamped install cache (its table says nothing of a
#     missing stamp).
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
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 240 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; grep "^warmup\|C++" $R/warmup.log; cat /tmp/warm-kc/warmup.json; echo
ROWS=$(python3 -c "import json,sys; sys.path.insert(0,'bench'); import bench_cold as b; print(json.dumps([[s,'fp32',d] for s in b.SHAPES for d in 'FBW']))")
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
for v in naive-prof auto gemm; do
  fresh; mkdir -p $R/prof-$v
  ref=auto; [ $v = gemm ] && ref=gemm
  prof=""; [ $v = naive-prof ] && prof=$R/prof-$v
  BENCH_COLD_PROFILE=$prof MIOFIND_REFERENCE=$ref MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab \
    CUPY_CACHE_DIR=/tmp/cc-ab timeout 100 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS" \
    > $R/ab-$v-1.jsonl 2> $R/ab-$v-1.err
  echo "rows $v rc=$? $(( $(date +%s) - T0 )) s"
  grep r50_256_28 $R/ab-$v-1.jsonl | python3 -c "
import json,sys
for ln in sys.stdin:
    r=json.loads(ln); t=r['timing']; print(r['direction'], round(r['find_ms'],1), {k: round(t.get(k,0),1) for k in ('setup_ms','reference_ms','reference_wait_ms')})"
done
pack
left=$(( 570 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^\*\*The installed/p;/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
cd $OUT && tar czf r.tgz r
