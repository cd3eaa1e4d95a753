#!/usr/bin/env bash
# Session verify, call 10 (issue 17): call 9's NaN logits in batch-1 AMP inference of the untrained MobileNetV2 and
# Inception-v3: call10/diag.py (each side's eager forward, non-finite counts, the FP32 forward's peak activation), then
# bench_graph_step.py infer1-amp again with each side's non-finite count per replay.
set -uo pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
ls miofind/_native*.so > /dev/null 2>&1 || gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
timeout 120 python3 bench/results/session-verify/call10/diag.py $R/diag.json > $R/diag.log 2>&1; echo "diag rc=$?"
cut -c1-400 $R/diag.log | grep -v Warn | tail -4
timeout 150 python3 bench/bench_graph_step.py --out $R/infer1-amp --models mobilenet_v2,inception_v3 --configs infer1-amp \
  --rounds 3 > $R/infer1-amp.log 2>&1; echo "graph rc=$?"; tail -2 $R/infer1-amp/bench_graph_step.md
cd $OUT && tar czf r.tgz r && rm -rf r
echo "total $(( $(date +%s) - T0 )) s"
