#!/usr/bin/env bash
# Session nov27d, call 9: call 4 again after NativePlan.frontend took the replayed graph or the heuristics one through one
# path (PlanGraph.plan), the misaligned call going there; with the named-plan replay beside it.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 6 -m gpu tests/cudnn/test_cudnn_gpu.py -rA \
  -k "stored_plan_prepared_natively or named_plan" > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -20
tar czf $OUT/r.tgz -C $OUT r
