#!/usr/bin/env bash
# Session stem, call 5: the GPU suite's part 1 (every family's registry-wide tests: core, cuDNN, depthwise, direct, CLI,
# tuning, torch) with the small-C solvers and the new shipped DB; the small-C family's tests; ncu on ResNet-50's first
# layer (F and W default configs).
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
OUT=$R/part1 BENCH=0 XDIST=14 STRESS=1 timeout 420 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct \
  tests/cli tests/tuning tests/torch tests/implicit_gemm_small_c > $R/part1.log 2>&1
echo "part1 rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/== summary/,$p' $R/part1.log | head; grep -E "^(FAILED|ERROR)" $R/part1/gpu-tests.log | cut -c1-300 | head -20
gzip -f $R/part1/gpu-tests.log 2>/dev/null; save
left=$(( 580 - ($(date +%s) - T0) ))
MIOFIND_DB=sqlite:////tmp/mf-prof.sqlite timeout $left ncu --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
  --section LaunchStats --section Occupancy -k regex:igemm_small_c --launch-skip 3 --launch-count 3 \
  python3 bench/results/session-stem/call5/prof_stem.py > $R/ncu_stem.txt 2>&1
echo "ncu rc=$? $(( $(date +%s) - T0 )) s"; grep -E "igemm_small_c|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Achieved Occupancy|Stall|Registers Per" $R/ncu_stem.txt | head -40; save
