#!/usr/bin/env bash
# Session tf32, call 2: the shipped DB with call 1's TF32 groups. GPU test: ResNet-50 N=32 through miofind.torch
# against cuDNN, FP32 TF32-off, AMP and now FP32 with PyTorch's default TF32, no find run (test_torch_gpu.py). Then
# bench_models' -tf32 configs (FP32 NCHW, cudnn.allow_tf32 = True as PyTorch's default), miofind against cuDNN
# benchmark mode: ResNet-50 training first with the shipped DB before this session (a copy of the tree with the
# previous finddb file and cost model, carried in build/: every problem found in the first iteration), then with the new one; then ResNet-50 batch-1
# inference and MobileNetV2 / Inception-v3 training with the new one.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c2; mkdir -p $R
save() { (cd $OUT && tar czf c2.tgz c2); }
rm -rf /tmp/v0 && cp -r . /tmp/v0 && gunzip -c build/finddb_before.sqlite.gz > /tmp/v0/finddb/sm_90-132.sqlite && cp build/model_before.npz /tmp/v0/finddb/sm_90-132.model.npz
( MIOFIND_DB=sqlite:////tmp/t-user.sqlite PYTHONPATH=$PWD:/tmp/site timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider \
  tests/torch/test_torch_gpu.py -k "resnet50_matches_cudnn" > $R/tests.log 2>&1; echo "tests rc=$?"; tail -1 $R/tests.log ) &
TPID=$!
bm() {  # dir out models configs steps rounds
  (cd $1 && PYTHONPATH=$1:/tmp/site MIOFIND_DB=sqlite:////tmp/$2-user.sqlite timeout $7 python3 bench/bench_models.py \
    --out $R/$2 --models $3 --configs $4 --steps $5 --rounds $6 --iters 10 > $R/$2.log 2>&1)
  echo "$2 rc=$?"; grep -A8 "^| model" $R/$2/bench_models.md | cut -c1-200; save
}
wait $TPID; save
bm /tmp/v0 before resnet50 train32-tf32 0 3 150
bm $PWD after resnet50 train32-tf32 20 3 180
bm $PWD after-infer resnet50 infer1-tf32,infer32-tf32 0 3 110
bm $PWD after-others mobilenet_v2,inception_v3 train32-tf32 0 3 130
