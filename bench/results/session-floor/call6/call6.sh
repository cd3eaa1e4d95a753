#!/usr/bin/env bash
# Session floor, call 6 (code of cec5079: armed module calls under autocast too): the torch GPU tests; then
# bench_eager_pairs.py, cuDNN / miofind / miofind without armed calls in every order in turn, on batch-1 inference
# (FP32 and AMP) of the three models and on the batch-32 training steps of MobileNetV2 (FP32, AMP) and ResNet-50 (AMP).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
echo "setup $(( $(date +%s) - T0 )) s: $(tail -1 $R/build.log)"
save() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 200 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/torch/test_fast.py tests/torch/test_torch_gpu.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-400
grep -E "^E  " $R/tests.log | head -20 | cut -c1-300
save
export MIOFIND_SYSTEM_DB=$PWD/finddb/sm_90-132.sqlite
MIOFIND_DB=/tmp/u-pairs.sqlite timeout 200 python3 bench/bench_eager_pairs.py --out $R/pairs-infer \
  --models mobilenet_v2,inception_v3,resnet50 --configs infer1-fp32,infer1-amp --pairs 300 \
  --sides cudnn,miofind,miofind-noarm > $R/pairs-infer.log 2>&1
echo "pairs infer rc=$? $(( $(date +%s) - T0 )) s"; grep "^| [rmi]" $R/pairs-infer/bench_eager_pairs.md; save
left=$(( 590 - ($(date +%s) - T0) ))
MIOFIND_DB=/tmp/u-pairs2.sqlite timeout $left python3 bench/bench_eager_pairs.py --out $R/pairs-train \
  --models mobilenet_v2,resnet50 --configs train32-fp32,train32-amp --pairs 60 --sides cudnn,miofind,miofind-noarm \
  > $R/pairs-train.log 2>&1
echo "pairs train rc=$? $(( $(date +%s) - T0 )) s"; grep "^| [rmi]" $R/pairs-train/bench_eager_pairs.md
save
echo "total $(( $(date +%s) - T0 )) s"
