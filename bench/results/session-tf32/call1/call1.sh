#!/usr/bin/env bash
# Session tf32, call 1: the shipped DB's TF32 groups. PyTorch runs FP32 convolutions with TF32 by default
# (torch.backends.cudnn.allow_tf32 = True), so miofind.torch asks math="tf32" problems, of which the shipped DB held
# none. Here scripts/build-finddb adds the six presets' FP32 NCHW problems with TF32 math (batch 32 and 1; resnet101's
# are resnet50's) to a copy of the shipped file, every applicable solver found with its default or stored config,
# specialised builds compiled before they are measured (MIOFIND_SPECIALIZE=sync), as the BF16 groups were built.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site miofind solvers > /dev/null 2>&1
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_SYSTEM_DB=none
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
cp finddb/sm_90-132.sqlite /tmp/base.sqlite
G="resnet50:32:tf32:NCHW resnet50:1:tf32:NCHW mobilenet_v2:32:tf32:NCHW inception_v3:32:tf32:NCHW"
G="$G mobilenet_v2:1:tf32:NCHW inception_v3:1:tf32:NCHW vgg16:32:tf32:NCHW vgg16:1:tf32:NCHW unet:1:tf32:NCHW unet:32:tf32:NCHW"
t0=$(date +%s)
MIOFIND_SPECIALIZE=sync OUT=$OUT/build FINDDB_GROUPS="$G" timeout 530 scripts/build-finddb 470 /tmp/base.sqlite \
  > $OUT/build.log 2>&1
echo "build rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^==|budget" $OUT/build.log; tail -25 $OUT/build.log | grep -E '"|}' | head -30
cp /tmp/miofind-ship/*.json $OUT/build/ 2>/dev/null
gzip -f $OUT/build/sm_90-132.sqlite 2>/dev/null
ls -la $OUT/build
