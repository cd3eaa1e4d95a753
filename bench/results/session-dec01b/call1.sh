#!/usr/bin/env bash
# Run as call 1 of session dec01b.
# Prepared by session dec01a (not run: device time spent). Checks 071a95dc and 18a1de16 on the GPU: the custom ops' C++ kernels
# are registered from the main thread's first CUDA call through _ops._run (calls 4-5 of dec01a ran the form that
# registered at the extension's load). The op and compile tests, then MobileNetV2 AMP train32 under mode="default"
# (dec01a call 4: 0.900x, ops_cpp 18253 / ops_python 89; expect the same counts), then bench/bench_op_host.py: host µs
# per op call of aten, the C++ kernels, the same below autograd (what a C++ autograd kernel would leave) and the
# Python path, on four layers, FP32 and FP16 (PLAN_next item 2's measure).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 tests/torch/test_fast.py tests/torch/test_torch_gpu.py \
  -k "custom_ops or ops_kernels or compile or reduce_overhead or cuda_graph" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head; save
MIOFIND_DB=sqlite:////tmp/r/u.sqlite timeout 200 python3 bench/bench_compile_step.py --out $R/mnv2_amp_default \
  --models mobilenet_v2 --configs train32-amp --mode default --iters 20 --rounds 5 > $R/mnv2_amp_default.log 2>&1
echo "mnv2 rc=$? $(el) s"; grep "^| mobilenet_v2" $R/mnv2_amp_default/bench_compile_step.md
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['rows'][0]['miofind_stats']; \
print({k: r.get(k) for k in ('ops_cpp', 'ops_python', 'host_aware', 'problems')})" $R/mnv2_amp_default/bench_compile_step.json
save
timeout 150 python3 bench/bench_op_host.py --out $R/op_host > $R/op_host.log 2>&1
echo "op_host rc=$? $(el) s"; cat $R/op_host/bench_op_host.md; save
echo "all $(el) s"
