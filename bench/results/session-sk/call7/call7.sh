#!/usr/bin/env bash
# Session sk, call 7: the GPU suite's part 1 at the final code and shipped DB (core, cuDNN, depthwise, direct, CLI,
# tuning, torch, small-C; the Hopper family's W tests ran in call 3 on the same kernel), with the stress run.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
OUT=$R/part1 BENCH=0 XDIST=14 STRESS=1 timeout 480 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct \
  tests/cli tests/tuning tests/torch tests/implicit_gemm_small_c > $R/part1.log 2>&1
echo "part1 rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/== summary/,$p' $R/part1.log | head; grep -E "^(FAILED|ERROR)" $R/part1/gpu-tests.log | cut -c1-300 | head -20
gzip -f $R/part1/gpu-tests.log $R/part1.log 2>/dev/null; save
