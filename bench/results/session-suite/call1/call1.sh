#!/usr/bin/env bash
# Session suite, call 1 (an H100 host): the GPU suite's part 1 (core, cuDNN, depthwise, direct, CLI, tuning, torch,
# the streams-and-threads stress run) at the session's final code, then issue 14's benchmarks on the same host:
# bench_overhead (tiny problem 20,000 calls, ResNet-50 N=32 FP32 and FP16 NHWC through the prepared path against
# cuDNN, the cold process and the CLI), bench_cold_import --bridge-ab and the first find's stages.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
OUT=$R/part1 BENCH=0 XDIST=12 timeout 330 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct tests/cli \
  tests/tuning tests/torch > $R/part1.log 2>&1
echo "part1 rc=$?"; sed -n '/== summary ==/,$p' $R/part1.log; grep -E "^(FAILED|ERROR)" $R/part1/gpu-tests.log | head
export PYTHONPATH=$PWD:/tmp/site
echo "elapsed $(( $(date +%s) - T0 )) s"
timeout 200 python3 bench/bench_overhead.py --out $R/overhead --calls 20000 --configs FP32:NCHW,FP16:NHWC --paths native \
  --rounds 2 > $R/overhead.log 2>&1; echo "overhead rc=$?"; tail -30 $R/overhead.log | cut -c1-220
echo "elapsed $(( $(date +%s) - T0 )) s"
timeout 100 python3 bench/bench_cold_import.py --runs 7 --gpu --bridge-ab --json $R/cold_bridge.json > $R/cold_bridge.log 2>&1
echo "cold rc=$?"; grep -E "median of|  (find|run|total)_ms" $R/cold_bridge.log
timeout 50 python3 bench/firstfind_probe.py plain,stages,stages,plain,plain > $R/probe.txt 2>&1
grep -E "^import" $R/probe.txt
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
