#!/usr/bin/env bash
# Session nov30e, call 5 (any sm_90): the GPU suite at the current code, part 2 of 2 -- every test marked
# gpu under tests/fft, gemm and implicit_gemm (the Hopper family: session nov30d, call 4), in 14
# xdist workers (as scripts/gpu-check runs them, with -v so that a run cut at its limit still says what passed),
# then those marked serial in one process. Part 1: call 4.
#
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/gpucheck/finddb.sqlite
mkdir -p /tmp/gpucheck
python3 -c "import cupy, torch; print('cupy', cupy.__version__, 'torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())" >> $R/device.txt
P="tests/fft tests/gemm tests/implicit_gemm"
timeout 470 python3 -m pytest -m "gpu and not serial" $P -v -p no:cacheprovider -rfEs -n 14 > $R/part2.log 2>&1
echo "part2 rc=$? $(el) s"; tail -1 $R/part2.log; grep -E "^(FAILED|ERROR)" $R/part2.log | head -20; save
left=$(( 580 - $(el) ))
timeout $left python3 -m pytest -m "gpu and serial" $P -v -p no:cacheprovider -rfEs > $R/part2_serial.log 2>&1
echo "serial rc=$? $(el) s"; tail -1 $R/part2_serial.log; grep -E "^(FAILED|ERROR)" $R/part2_serial.log | head
gzip -f $R/part2.log; save; echo "all $(el) s"
