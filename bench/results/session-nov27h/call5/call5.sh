#!/usr/bin/env bash
# Session nov27h, call 5: does a module load wait for GPU work in flight (module_load.py)?
set -uo pipefail
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
timeout 200 python3 bench/results/session-nov27h/call5/module_load.py > $R/module_load.txt 2>&1; echo "rc=$?"
CUDA_MODULE_LOADING=EAGER timeout 200 python3 bench/results/session-nov27h/call5/module_load.py > $R/module_load_eager.txt 2>&1; echo "rc=$?"
cat $R/module_load.txt; echo "--- EAGER"; cat $R/module_load_eager.txt
