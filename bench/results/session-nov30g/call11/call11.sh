#!/usr/bin/env bash
# Session nov30g, call 11 (any sm_90): what the H200's wider F and W tunes (calls 8 and 9; their user DBs merged here as
# tuned_fw.sqlite.gz) give a captured ResNet-50 AMP training step at batch 32 (bench_graph_step.py, cuDNN benchmark
# mode alongside): first with the shipped DB only (an empty user DB), then with the tuned user DB over it.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
gunzip -c bench/results/session-nov30g/call11/tuned_fw.sqlite.gz > /tmp/tuned11.sqlite
export CUPY_CACHE_DIR=/tmp/cupy11 MIOFIND_KERNEL_CACHE=/tmp/kc11
MIOFIND_DB=sqlite:////tmp/empty11.sqlite timeout 220 python3 bench/bench_graph_step.py --out $R/shipped --models resnet50 \
  --configs train32-amp --rounds 5 > $R/shipped.txt 2>&1
echo "shipped DB rc=$? $(el) s"; tail -6 $R/shipped.txt | cut -c1-250
MIOFIND_DB=sqlite:////tmp/tuned11.sqlite timeout 220 python3 bench/bench_graph_step.py --out $R/tuned --models resnet50 \
  --configs train32-amp --rounds 5 > $R/tuned.txt 2>&1
echo "tuned user DB rc=$? $(el) s"; tail -6 $R/tuned.txt | cut -c1-250
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
