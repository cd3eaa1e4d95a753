#!/usr/bin/env bash
# Session timeline, call 2: host us per call of one planned convolution, step by step, with the C++ path's calls alone
# (bench_torch_host.py --parts) on MobileNetV2's depthwise and projection layers and a ResNet-50 layer, FP32;
# then the per-part host time of MobileNetV2's FP32 training step.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c2; mkdir -p $R
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
timeout 200 python3 bench/bench_torch_host.py --out $R/parts --parts --configs fp32 \
  --parts-layers mnv2_dw_144_56,mnv2_pw_144_24_56,r50_64_64_56_3x3 --parts-calls 1000 > $R/parts.log 2>&1
echo "parts rc=$?"; grep -E "^## |^\| (torch|miofind|C\+\+|conv_norm|PlannedConv|_Plan|Entry|plan.forward|staged)" $R/parts/bench_torch_host.md | cut -c1-200
timeout 150 python3 bench/bench_torch_host.py --out $R/host --model mobilenet_v2 --model-configs train32-fp32 --skip-layers \
  > $R/host.log 2>&1; echo "host rc=$?"; grep -A14 "^## mobilenet" $R/host/bench_torch_host.md | cut -c1-300
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
