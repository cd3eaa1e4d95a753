#!/usr/bin/env bash
# Session dec01b, call 2: the custom ops' C++ autograd kernels (AutogradCUDA: a call that records nothing for autograd
# is redispatched below autograd in C++; custom_op's Python autograd kernel takes the rest). The op, autograd and
# compile tests; bench/bench_op_host.py (host µs per op call: aten, the C++ autograd + C++ kernels, the same with
# custom_op's Python autograd, below autograd, the Python path); then MobileNetV2 and ResNet-50 AMP train32 under
# mode="default" (call 1: MobileNetV2 0.937x with the Python autograd kernel; dec01a: ResNet-50 0.990x).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd MIOFIND_DB=sqlite:////tmp/r/u.sqlite
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 tests/torch/test_fast.py tests/torch/test_torch_gpu.py \
  -k "custom_ops or ops_kernels or autograd or compile or reduce_overhead or cuda_graph" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head; save
timeout 150 python3 bench/bench_op_host.py --out $R/op_host > $R/op_host.log 2>&1
echo "op_host rc=$? $(el) s"; cat $R/op_host/bench_op_host.md; tail -3 $R/op_host.log; save
for M in mobilenet_v2 resnet50; do
  timeout 170 python3 bench/bench_compile_step.py --out $R/${M}_amp_default --models $M --configs train32-amp \
    --mode default --iters 20 --rounds 5 > $R/${M}_amp_default.log 2>&1
  echo "$M rc=$? $(el) s"; grep "^| $M" $R/${M}_amp_default/bench_compile_step.md
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['rows'][0]['miofind_stats']; \
print({k: r.get(k) for k in ('ops_cpp', 'ops_python', 'ops_autograd_cpp', 'ops_autograd_python', 'problems')})" \
    $R/${M}_amp_default/bench_compile_step.json
  save
done
echo "all $(el) s"
