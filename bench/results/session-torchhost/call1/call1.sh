#!/usr/bin/env bash
# Issue 17 (call 1): where miofind.torch's host time goes now, per ResNet-50 step (training batch 32 AMP and FP32,
# no_grad inference batch 1 FP32 and AMP), against cuDNN benchmark mode in the same process
# (bench_torch_host.py --model-configs), and one planned call stage by stage at batch 1 (--parts).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c1; mkdir -p $R
timeout 330 python3 bench/bench_torch_host.py --out $R/models --model-configs infer1-fp32,infer1-amp,train32-amp,train32-fp32 \
  --steps 15 > $R/models.log 2>&1; echo "models rc=$?"
timeout 150 python3 bench/bench_torch_host.py --out $R/parts --parts --configs fp32,amp --batch 1 \
  --parts-layers r50_64_64_56_3x3,r50_1024_256_14_1x1 --parts-calls 1000 > $R/parts.log 2>&1; echo "parts rc=$?"
grep -A40 "^## " $R/models/bench_torch_host.md | head -150
tail -5 $R/models.log $R/parts.log
