#!/usr/bin/env bash
# Session nov29d, call 1 (any sm_90): session nov29c's prepared W 1x1 sweep (prepared/call_w1x1_sweep.sh: every config of
# ConvImplicitGemmHopperWrw's space and GemmWrw1x1_stride1 beside every cuDNN plan on ResNet-50's nine 1x1 stride-1 W
# layers, FP16 NHWC N=32), then what cuDNN launches on those layers through torch (kernel names, grids, durations).
set -uo pipefail
T0=$(date +%s)
bash bench/results/session-nov29c/prepared/call_w1x1_sweep.sh > /tmp/sweep_call.log 2>&1
cp /tmp/sweep_call.log /tmp/r/ 2>/dev/null
mkdir -p /tmp/r/torch_w1x1
timeout 120 python3 bench/results/session-nov29d/call1/torch_w1x1_kernels.py /tmp/r/torch_w1x1 > /tmp/r/torch_w1x1.txt 2>&1
echo "torch rc=$? $(( $(date +%s) - T0 )) s"; cat /tmp/r/torch_w1x1.txt | cut -c1-250
gzip -f /tmp/r/torch_w1x1/*.json
tar czf $OUT/r.tgz -C /tmp r
