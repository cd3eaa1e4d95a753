#!/usr/bin/env bash
# Session nov27c, call 4 (issue 17): call 3 again after two fixes (its tests and runs hung: the first native handle
# took a lock that loading libcudnn takes again; its bench segfaulted: a NativeRun freed with its invoker while its
# recipe lived on; now every NativeRun is kept for the process). Call 3's notes: call 2 showed the frontend's binding is not the cost (15-21 us a call, torch's
# conv2d 20-22 us; the backend API through ctypes 23-29 us). What a cuDNN plan costs miofind.torch is the way back
# to Python from its C++ path. Now a cuDNN invoker is traceable: native replays (miofind.torch's C++ path, prepared
# solutions) run the plan rebuilt through the backend API by miofind._native's cudnn_run, with no Python.
# (a) GPU tests: cuDNN (every path, the native replay among them, against the public call), miofind.torch (all,
# the prefill test with its count fixed), prepared solutions and the streams-and-threads stress test;
# (b) host us per call of each path; (c) MobileNetV3-Large AMP training, native cuDNN replays on and off in the same
# alternating rounds as cuDNN, with the first step of a fresh process.
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
timeout 90 python3 -m pytest -q -p no:cacheprovider -n 6 tests/cudnn/test_cudnn_gpu.py > $R/tests_cudnn.log 2>&1
echo "cudnn tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "passed|failed" $R/tests_cudnn.log | tail -2
timeout 60 python3 -m pytest -q -p no:cacheprovider -s tests/cudnn/test_cudnn_gpu.py -k backend_direct_and_public \
  > $R/tests_paths.log 2>&1
echo "paths test rc=$? $(( $(date +%s) - T0 )) s"; grep -E "host us|passed|failed" $R/tests_paths.log | tail -3
STRESS_SECONDS=5 timeout 220 python3 -m pytest -q -p no:cacheprovider -n 4 tests/torch/test_torch_gpu.py \
  tests/core/test_prepared_gpu.py tests/core/test_stress_gpu.py > $R/tests_torch.log 2>&1
echo "torch/prepared/stress tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "passed|failed" $R/tests_torch.log | tail -3
pack
# (b)
timeout 70 python3 bench/bench_cudnn_execute.py --out $R/exec --calls 2000 > $R/exec.log 2>&1
echo "exec rc=$? $(( $(date +%s) - T0 )) s"; grep -v Warn $R/exec.log | tail -6
pack
# (c)
left=$(( 585 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_models.py --models mobilenet_v3_large --configs train32-amp --iters 15 --rounds 3 \
  --steps 0 --cudnn-exec-ab --out $R/models > $R/models.log 2>&1
echo "bench_models rc=$? $(( $(date +%s) - T0 )) s"; grep mobilenet $R/models/bench_models.md
pack
