#!/usr/bin/env bash
# Session dec01b, call 3: the fixed test_compile_default_mode_launches_the_ops_from_cpp (with the reduce-overhead
# tests in the same process, before it), then Inception-v3 AMP train32 under mode="default" (the C++ autograd and
# CUDA kernels) and under mode="reduce-overhead" (issue 17's missing compiled AMP row; session nov30l's
# prepared/call_inception.sh with CONFIGS=train32-amp, its timeout cut to what the call has left).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyi MIOFIND_KERNEL_CACHE=/tmp/kci
MIOFIND_DB=sqlite:////tmp/r/u_t.sqlite timeout 150 python3 -m pytest -q -p no:cacheprovider -n 0 \
  tests/torch/test_torch_gpu.py::test_compile_reduce_overhead \
  tests/torch/test_torch_gpu.py::test_compile_default_mode_launches_the_ops_from_cpp > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head; save
for mode in default reduce-overhead; do
  left=$(( 560 - $(el) )); [ $left -gt 240 ] && [ $mode = default ] && left=240
  MIOFIND_DB=sqlite:////tmp/r/u_inc.sqlite timeout $left python3 bench/bench_compile_step.py --out $R/inc_amp_$mode \
    --models inception_v3 --configs train32-amp --mode $mode --iters 20 --rounds 5 > $R/inc_amp_$mode.log 2>&1
  echo "inc $mode rc=$? $(el) s"; grep "^| inception_v3" $R/inc_amp_$mode/bench_compile_step.md
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['rows'][0]['miofind_stats']; \
print({k: r.get(k) for k in ('ops_cpp', 'ops_python', 'ops_autograd_cpp', 'ops_autograd_python', 'problems', \
'finds_run', 'settled')})" $R/inc_amp_$mode/bench_compile_step.json
  save
done
echo "all $(el) s"
