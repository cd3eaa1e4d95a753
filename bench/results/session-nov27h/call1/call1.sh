#!/usr/bin/env bash
# Session nov27h, call 1 (session nov27g's unrun call 5, changed):
# (a) `miofind warmup` alone: its stamp (warmup.json) on a GPU;
# (b) the first float64 GEMM of a process, timed: the stride-2 3x3 B FP32 row's 40-70 ms `setup` is, by its timing
#     fields, the first GEMM reference of its process (the earlier rows' naive references stay under
#     REFERENCE_GEMM_SETUP_MS), so cuBLAS's set-up and its DGEMM's first launch;
# (c) bench_cold's warm child of each FP32 shape (its own process, the warm-up shape's finds first) under cProfile,
#     one file per find: where a warm find of an unseen layer in a fresh process spends its host time;
# (d) bench_cold FP32 and FP16 at the `load` default with the stamped install cache.
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
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; grep -v "resource_tracker\|warnings.warn" $R/warmup.log | tail -2; cat /tmp/warm-kc/warmup.json; echo
python3 bench/results/session-nov27h/call1/first_dgemm.py > $R/first_dgemm.txt 2>&1; cat $R/first_dgemm.txt
fresh() { rm -rf /tmp/kc-ab /tmp/cc-ab /tmp/ab.sqlite && cp -r /tmp/warm-kc /tmp/kc-ab && cp -r /tmp/warm-cupy /tmp/cc-ab; }
mkdir -p $R/prof
for s in $(python3 -c "import sys; sys.path.insert(0,'bench'); import bench_cold as b; print(' '.join(b.SHAPES))"); do
  fresh
  ROWS="[[\"$s\",\"fp32\",\"F\"],[\"$s\",\"fp32\",\"B\"],[\"$s\",\"fp32\",\"W\"]]"
  BENCH_COLD_PROFILE=$R/prof MIOFIND_DB=sqlite:////tmp/ab.sqlite MIOFIND_KERNEL_CACHE=/tmp/kc-ab CUPY_CACHE_DIR=/tmp/cc-ab \
    timeout 60 python3 bench/bench_cold.py --child miofind --warmup --rows "$ROWS" >> $R/prof.jsonl 2>> $R/prof.err
  echo "prof $s rc=$? $(( $(date +%s) - T0 )) s"
done
python3 bench/results/session-nov27h/call1/breakdown.py $R/prof.jsonl | tee $R/prof_breakdown.txt
pack
left=$(( 575 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^\*\*The installed/p;/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
pack
