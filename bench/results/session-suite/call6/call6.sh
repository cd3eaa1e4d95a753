#!/usr/bin/env bash
# Session suite, call 6 (call 5 again after its fixes: get_invoker checked CuPy by importing it; the cuDNN replay test): a PyTorch process runs without importing CuPy (kernels loaded through the driver,
# miofind.cumodule; workspaces from PyTorch's allocator, launch.scratch; CUDA's runtime through cupy_backends). The
# new GPU tests, the suite's part 1, then the cold process with CUDA up through PyTorch and through CuPy
# (bench_cold_import --first) and bench_overhead's cold part (a PyTorch process).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
PYTHONPATH=$PWD:/tmp/site timeout 150 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/core/test_device_gpu.py \
  > $R/device_gpu.log 2>&1; echo "device_gpu rc=$?: $(tail -1 $R/device_gpu.log)"; grep -E "^(FAILED|ERROR)|^E  " $R/device_gpu.log | head -20
OUT=$R/part1 BENCH=0 XDIST=12 timeout 240 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct tests/cli \
  tests/tuning tests/torch > $R/part1.log 2>&1
echo "part1 rc=$?"; sed -n '/== summary ==/,$p' $R/part1.log; grep -E "^(FAILED|ERROR)" $R/part1/gpu-tests.log | head
gzip -f $R/part1/gpu-tests.log
export PYTHONPATH=$PWD:/tmp/site
echo "elapsed $(( $(date +%s) - T0 )) s"
for first in torch cupy; do
  timeout 80 python3 bench/bench_cold_import.py --runs 5 --gpu --bridge-ab --first $first --json $R/cold_$first.json \
    > $R/cold_$first.log 2>&1; echo "cold $first rc=$?"
done
grep -E "median of|  (find|run|total)_ms|CuPy imported" $R/cold_torch.log $R/cold_cupy.log | cut -c1-220
timeout 100 python3 bench/bench_overhead.py --out $R/overhead --calls 5000 --skip-resnet --paths native --rounds 1 \
  > $R/overhead.log 2>&1; echo "overhead rc=$?"; grep -A4 "^Cold process" $R/overhead/bench_overhead.md
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
