#!/usr/bin/env bash
# Session dec01a call 4: the custom ops' C++ CUDA kernels (the commit before this script). GPU tests of test_fast.py
# (the new test_custom_ops_launch_from_cpp_once_learned and the C++ path's others) and the compile/graph tests of
# test_torch_gpu.py (the new test_compile_default_mode_launches_the_ops_from_cpp), then call 3's mode="default" row
# again: ResNet-50 FP32 and MobileNetV2 AMP batch-32 training.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
timeout 300 python3 -m pytest -q -p no:cacheprovider -n 4 tests/torch/test_fast.py tests/torch/test_torch_gpu.py \
  -k "test_fast or reduce_overhead or cuda_graph or compile" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head; save
run() {  # tag model config timeout [args]
  local tag=$1 m=$2 c=$3 t=$4; shift 4
  MIOFIND_DB=sqlite:////tmp/r/u_$m.sqlite timeout $t python3 bench/bench_compile_step.py --out $R/$tag \
    --models $m --configs $c --mode default --iters 20 --rounds 5 "$@" > $R/$tag.log 2>&1
  echo "$tag rc=$? $(el) s"; grep "^| $m" $R/$tag/bench_compile_step.md
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['rows'][0]['miofind_stats']; \
print({k: r.get(k) for k in ('ops_cpp', 'ops_python', 'host_aware', 'problems')})" $R/$tag/bench_compile_step.json
  save
}
run mnv2_amp_default mobilenet_v2 train32-amp 170

echo "all $(el) s"
