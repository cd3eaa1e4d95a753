#!/usr/bin/env bash
# Session cxx, review run 2: tests/torch/test_fast.py again, its path comparison now under deterministic algorithms
# (every pick one of our deterministic solvers), naming the step, parameter and picks of a mismatch.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/rv2; mkdir -p $R
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
timeout 150 python3 -m pytest -m gpu tests/torch/test_fast.py -q -p no:cacheprovider -rfEs > $R/fast.log 2>&1
echo "fast rc=$?"; grep -E "passed|failed|^E  .*Assert" $R/fast.log | head -6
cd $OUT && tar czf rv2.tgz rv2 && rm -rf rv2
