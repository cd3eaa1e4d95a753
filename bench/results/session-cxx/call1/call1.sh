#!/usr/bin/env bash
# Session cxx, call 1: where MobileNetV2's FP32 training step spends host and GPU time now (issue 17's 1.3x
# target), per solver (bench_torch_host --model), profiled against cuDNN benchmark mode (bench_models --profile);
# and whether a C++ torch extension builds on this machine, and how long one translation unit takes (t.cpp).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c1; mkdir -p $R
S=bench/results/session-cxx/call1
( which g++ gcc nvcc ninja; g++ --version | head -1; ls /usr/local/cuda/include/cuda_runtime_api.h /usr/local/cuda/include/cuda.h;
  python3 -c "import torch,torch.utils.cpp_extension as c;print(torch.__version__, torch.version.cuda, c.include_paths(), c.library_paths())" ) > $R/cxx.txt 2>&1
TI=$(python3 -c "import torch.utils.cpp_extension as c;print(' '.join('-I'+p for p in c.include_paths()))")
TL=$(python3 -c "import torch,os;print(os.path.join(os.path.dirname(torch.__file__),'lib'))")
SUF=$(python3 -c "import sysconfig;print(sysconfig.get_config_var('EXT_SUFFIX'))")
mkdir -p /tmp/cxx; ( cd /tmp/cxx; /usr/bin/time -f "compile %e s" g++ -O2 -std=c++17 -shared -fPIC -DTORCH_EXTENSION_NAME=t -DTORCH_API_INCLUDE_EXTENSION_H \
  $TI -I$inc $OLDPWD/$S/t.cpp -L$TL -lc10 -ltorch -ltorch_cpu -ltorch_python -Wl,-rpath,$TL -o t$SUF ) >> $R/cxx.txt 2>&1
( cd /tmp/cxx; python3 -c "
import torch, t; x=torch.randn(3,device='cuda',requires_grad=True); y=t.mul2(x,2); print(y.grad_fn); y.sum().backward(); print(x.grad)" ) >> $R/cxx.txt 2>&1
grep -v warning $R/cxx.txt | tail -8
timeout 200 python3 bench/bench_torch_host.py --out $R/host --model mobilenet_v2 --model-configs train32-fp32,infer1-fp32 --steps 15 \
  > $R/host.log 2>&1; echo "host rc=$?"
grep -A30 "^## " $R/host/bench_torch_host.md | head -70
timeout 200 python3 bench/bench_models.py --out $R/models --models mobilenet_v2 --configs train32-fp32 --skip-first --steps 0 \
  --iters 10 --rounds 3 --profile > $R/models.log 2>&1; echo "models rc=$?"
grep "mobilenet" $R/models/bench_models.md | head -5
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
