#!/usr/bin/env bash
# Session suite, call 9: issue 14's benchmarks at the session's final code: bench_overhead (20,000 calls of the tiny
# problem, ResNet-50 N=32 FP32 through the prepared path against cuDNN, its cold part: a PyTorch process, the CLI)
# and bench_cold_import with CUDA up through PyTorch and through CuPy.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
timeout 230 python3 bench/bench_overhead.py --out $R/overhead --calls 20000 --configs FP32:NCHW --paths native --rounds 1 \
  > $R/overhead.log 2>&1; echo "overhead rc=$?"; grep -E "^\| (Conv|Gemm|torch|CuPy|miofind|find_|get_)|^\| [FBW] \|" $R/overhead/bench_overhead.md
grep -A3 "^Cold process" $R/overhead/bench_overhead.md
for first in torch cupy; do
  timeout 80 python3 bench/bench_cold_import.py --runs 5 --gpu --bridge-ab --first $first --json $R/cold_$first.json \
    > $R/cold_$first.log 2>&1; echo "cold $first rc=$?"
done
grep -E "median of|  (find|run|total)_ms|CuPy imported" $R/cold_torch.log $R/cold_cupy.log | cut -c1-240
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
