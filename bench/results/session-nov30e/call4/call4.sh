#!/usr/bin/env bash
# Session nov30e, call 4 (any sm_90): the GPU suite at the current code, part 1 of 2 -- every test marked
# gpu under tests/core, cudnn, depthwise, direct, cli, tuning, torch, implicit_gemm_small_c and winograd, in 14
# xdist workers (as scripts/gpu-check runs them, with -v so that a run cut at its limit still says what passed),
# then those marked serial in one process. Part 2 (call 5): fft, gemm,
# implicit_gemm (the Hopper family passed in session nov30d, call 4).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/gpucheck/finddb.sqlite
mkdir -p /tmp/gpucheck
python3 -c "import cupy, torch; print('cupy', cupy.__version__, 'torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())" >> $R/device.txt
P="tests/core tests/cudnn tests/depthwise tests/direct tests/cli tests/tuning tests/torch tests/implicit_gemm_small_c tests/winograd"
timeout 470 python3 -m pytest -m "gpu and not serial" $P -v -p no:cacheprovider -rfEs -n 14 > $R/part1.log 2>&1
echo "part1 rc=$? $(el) s"; tail -1 $R/part1.log; grep -E "^(FAILED|ERROR)" $R/part1.log | head -20; save
left=$(( 580 - $(el) ))
timeout $left python3 -m pytest -m "gpu and serial" $P -v -p no:cacheprovider -rfEs > $R/part1_serial.log 2>&1
echo "serial rc=$? $(el) s"; tail -1 $R/part1_serial.log; grep -E "^(FAILED|ERROR)" $R/part1_serial.log | head
gzip -f $R/part1.log; save; echo "all $(el) s"
