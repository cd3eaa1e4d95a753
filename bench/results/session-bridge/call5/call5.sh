#!/usr/bin/env bash
# Session bridge, call 5: the C++ extension built by a detached process (call 4's processes each re-started its
# build, importing torch.utils.cpp_extension inside the step, because the fill process exited before its daemon
# build thread finished). Fill process, wait for the extension, then first_step.py miofind / miofind-nobridge /
# heuristic, 3 alternating processes each (ResNet-50 batch 32 FP32); then the torch GPU tests.
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
  --rounds 1 > $R/fill.log 2>&1; echo "fill rc=$? $(( $(date +%s) - T0 )) s"
python3 - <<'PY' | tee $R/ext_wait.txt
import time
from miofind.torch import _fast
t0 = time.time()
while not _fast.library_path().exists() and time.time() - t0 < 120:
    time.sleep(0.5)
print(f"C++ extension built by the detached process: {_fast.library_path().exists()} ({time.time() - t0:.1f} s after the fill)")
PY
timeout 200 python3 bench/first_step.py --out $R/ab --configs train32-fp32 --backends miofind,miofind-nobridge,heuristic \
  --rounds 3 > $R/ab.log 2>&1; echo "ab rc=$? $(( $(date +%s) - T0 )) s"; head -9 $R/ab/first_step.md | tail -4
grep -E "Imports inside" $R/ab.log | head -3 | cut -c1-200
timeout 120 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/torch/test_fast.py tests/torch/test_torch_gpu.py \
  > $R/torch_tests.log 2>&1
echo "torch tests rc=$?: $(tail -1 $R/torch_tests.log)"; grep -E "^(FAILED|ERROR)" $R/torch_tests.log | head
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
