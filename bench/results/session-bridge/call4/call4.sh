#!/usr/bin/env bash
# Session bridge, call 4: what the bridge does to a PyTorch user's first training step (ResNet-50 batch 32 FP32,
# whose picks include Winograd and GEMM, cuBLASLt-backed): first_step.py's miofind against miofind-nobridge
# (MIOFIND_LT_BRIDGE=0), 3 alternating processes each, after one process that fills the kernel cache; then the
# prepared-path and torch GPU tests with the bridge on in their processes (MIOFIND_LT_BRIDGE=1 overriding conftest).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
unset PYTHONDONTWRITEBYTECODE
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
echo "setup $(( $(date +%s) - T0 )) s"
MIOFIND_SPECIALIZE=sync timeout 150 python3 bench/first_step.py --out $R/fill --configs train32-fp32 --backends miofind \
  --rounds 1 > $R/fill.log 2>&1; echo "fill rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/fill.log
timeout 200 python3 bench/first_step.py --out $R/ab --configs train32-fp32 --backends miofind,miofind-nobridge,heuristic \
  --rounds 3 > $R/ab.log 2>&1; echo "ab rc=$? $(( $(date +%s) - T0 )) s"; tail -30 $R/ab.log
MIOFIND_LT_BRIDGE=1 timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/core/test_prepared_gpu.py \
  tests/torch/test_torch_gpu.py > $R/tests_bridge_on.log 2>&1
echo "tests (bridge on) rc=$?: $(tail -1 $R/tests_bridge_on.log)"; grep -E "^(FAILED|ERROR)" $R/tests_bridge_on.log | head
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
