#!/usr/bin/env bash
# Session nov27c, call 2 (issue 17): cuDNN plans run through cuDNN's backend API (solvers/cudnn_execute.py, the new
# default MIOFIND_CUDNN_EXECUTE=backend) instead of the frontend's binding, whose execute call 1's profile put at
# ~50 us of host time per call (MobileNetV3-Large AMP: 67 of 131 problems pick a cuDNN plan; the step is host-bound,
# GPU busy 5.2 ms of 28). (a) the cuDNN GPU tests (every path against the public call on F/B/W x FP32/FP16/BF16,
# the claim grid against the float64 reference through the new default path) and the prefill test (count fixed);
# (b) host us per call of each path and of torch's conv2d; (c) MobileNetV3-Large AMP training, backend API against
# the frontend's binding in the same alternating rounds as cuDNN.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
# (a)
timeout 240 python3 -m pytest -q -p no:cacheprovider -n 6 tests/cudnn/test_cudnn_gpu.py > $R/tests_cudnn.log 2>&1
echo "cudnn tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "passed|failed" $R/tests_cudnn.log | tail -2
timeout 120 python3 -m pytest -q -p no:cacheprovider -s tests/cudnn/test_cudnn_gpu.py -k backend_direct_and_public \
  > $R/tests_paths.log 2>&1
echo "paths test rc=$? $(( $(date +%s) - T0 )) s"; grep -E "host us|passed|failed" $R/tests_paths.log | tail -4
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/torch/test_torch_gpu.py -k prefills > $R/tests_prefill.log 2>&1
echo "prefill tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "passed|failed" $R/tests_prefill.log | tail -2
pack
# (b)
timeout 100 python3 bench/bench_cudnn_execute.py --out $R/exec > $R/exec.log 2>&1
echo "exec rc=$? $(( $(date +%s) - T0 )) s"; cat $R/exec.log | grep -v Warn | tail -8
pack
# (c)
left=$(( 575 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_models.py --models mobilenet_v3_large --configs train32-amp --iters 20 --rounds 4 \
  --steps 0 --skip-first --cudnn-exec-ab --out $R/models > $R/models.log 2>&1
echo "bench_models rc=$? $(( $(date +%s) - T0 )) s"; grep mobilenet $R/models/bench_models.md
pack
