#!/usr/bin/env bash
# Prepared by session nov30m (not run: no device time was left). Checks 3352e535: the warm-up run of torch.compile's
# CUDA-graph trees waits for the specialised builds (miofind.torch.settle), so that a cold-cache reduce-overhead graph
# does not replay generic kernels for the whole process. First the new GPU test and the compile/graph tests, then
# session nov30l's prepared rows: ResNet-50 FP32 batch-32 training compiled at once (--compile-first) on an empty
# kernel cache, MIOFIND_SPECIALIZE=background (the default) against sync, then background on the first run's cache.
# Expected: cold_background's steady step equal to cold_sync's and warm_background's (within the rounds' spread),
# its miofind_stats "settled" > 0 with settle_ms in its first compiled step; sync and warm "settled" 0.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
# two device calls (each under the 600 s limit): PART=tests, then PART=rows
if [ "${PART:-tests}" = tests ]; then
  timeout 360 python3 -m pytest -q -p no:cacheprovider tests/torch/test_torch_gpu.py \
    -k "cold_cache or reduce_overhead or cuda_graph or compile" > $R/tests.log 2>&1
  echo "tests rc=$? $(el) s"; tail -3 $R/tests.log; save
  exit 0
fi
run() {  # tag specialize cache timeout
  MIOFIND_SPECIALIZE=$2 CUPY_CACHE_DIR=/tmp/cupy_$3 MIOFIND_KERNEL_CACHE=/tmp/kc_$3 \
    MIOFIND_DB=sqlite:////tmp/r/u_$1.sqlite timeout $4 python3 bench/bench_compile_step.py --out $R/$1 \
    --models resnet50 --configs train32-fp32 --mode reduce-overhead --iters 20 --rounds 5 --compile-first \
    > $R/$1.log 2>&1
  echo "$1 rc=$? $(el) s"; grep "^| resnet50" $R/$1/bench_compile_step.md
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['rows'][0]['miofind_stats']; \
print({k: r[k] for k in ('settled', 'settle_ms', 'finds_run', 'db_hits')})" $R/$1/bench_compile_step.json
  save
}
run cold_background background a 200
run cold_sync sync b 220
run warm_background background a 150
echo "all $(el) s"
