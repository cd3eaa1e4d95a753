#!/usr/bin/env bash
# Session suite, call 3: the device's identity without CuPy's import (6910d1d). GPU tests: the new identity test and
# the suite's part 1 (core, cuDNN, depthwise, direct, CLI, tuning, torch) again at this code; then a new process's
# import + first find + first run with CUDA up through CuPy and through PyTorch (bench_cold_import --first), and
# bench_overhead's cold part (a PyTorch process; the CLI on a DB hit).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
OUT=$R/part1 BENCH=0 XDIST=12 timeout 300 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct tests/cli \
  tests/tuning tests/torch > $R/part1.log 2>&1
echo "part1 rc=$?"; sed -n '/== summary ==/,$p' $R/part1.log; grep -E "^(FAILED|ERROR)" $R/part1/gpu-tests.log | head
grep -E "test_device_gpu" $R/part1/gpu-tests.log | head -3; gzip -f $R/part1/gpu-tests.log
export PYTHONPATH=$PWD:/tmp/site
echo "elapsed $(( $(date +%s) - T0 )) s"
for round in 1 2; do for first in torch cupy; do
  timeout 90 python3 bench/bench_cold_import.py --runs 5 --gpu --bridge-ab --first $first \
    --json $R/cold_${first}_$round.json >> $R/cold_$first.log 2>&1; echo "cold $first round $round rc=$?"
done; done
grep -E "median of|  (find|run|total)_ms|CuPy imported" $R/cold_torch.log $R/cold_cupy.log | cut -c1-200
echo "elapsed $(( $(date +%s) - T0 )) s"
timeout 120 python3 bench/bench_overhead.py --out $R/overhead --calls 5000 --skip-resnet --paths native --rounds 1 \
  > $R/overhead.log 2>&1; echo "overhead rc=$?"; grep -A4 "^Cold process" $R/overhead/bench_overhead.md
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
