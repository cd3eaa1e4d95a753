#!/usr/bin/env bash
# Session verify, call 1: the GPU suite's part 1 at 3a4c885's code (one process-wide lock per raw stream around every
# prepared call's enqueue), then the streams-and-threads stress test 4 more times alone; issue 14's benchmarks
# (bench_overhead, bench_cold_import in a PyTorch process) at the same code.
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
OUT=$R/part1 BENCH=0 XDIST=14 STRESS=4 timeout 330 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct \
  tests/cli tests/tuning tests/torch > $R/part1.log 2>&1
echo "part1 rc=$?"; sed -n '/== summary ==/,$p' $R/part1.log; grep -E "^(FAILED|ERROR)" $R/part1/gpu-tests.log | head
grep -a -E '^stress:|== stress' $R/part1/stress.log | cut -c1-300
gzip -f $R/part1/gpu-tests.log
timeout 150 python3 bench/bench_overhead.py --out $R/overhead --calls 20000 --configs FP32:NCHW --paths native --rounds 1 \
  > $R/overhead.log 2>&1; echo "overhead rc=$?"; grep -E "^\| (Conv|Gemm|torch|CuPy|miofind|find_|get_)|^\| [FBW] \|" $R/overhead/bench_overhead.md
grep -A3 "^Cold process" $R/overhead/bench_overhead.md
timeout 60 python3 bench/bench_cold_import.py --runs 5 --gpu --first torch --json $R/cold_torch.json > $R/cold_torch.log 2>&1
echo "cold torch rc=$?"; grep -E "median of|  (find|run|total)_ms|CuPy imported" $R/cold_torch.log | cut -c1-240
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
