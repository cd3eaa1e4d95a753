#!/usr/bin/env bash
# Session bridge, call 1: the cost model's speed on the device host's CPU (issue 20's 50 µs per problem; the 2-core
# CPU machine gives 89 µs), then session-sweep's call 3 as written there (the compile niceness A/B and the
# resample). Carry .whl (../shared/tools/device-wheels plus platformdirs); bench/results trimmed to session-sweep
# and session-bridge for the 64 MiB limit.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
mkdir -p $OUT/speed $OUT/sweep-call3
lscpu | grep -E "Model name|^CPU\(s\)" > $OUT/speed/cpu.txt
PYTHONPATH=$PWD:/tmp/site timeout 120 python3 bench/bench_costmodel_speed.py --before-repeats 0 --out $OUT/speed \
  > $OUT/speed/log.txt 2>&1; echo "speed rc=$?"; grep -E "^\| all measured solvers \||load:" $OUT/speed/speed.md
OUT=$OUT/sweep-call3 bash bench/results/session-sweep/call3/call3.sh
