#!/usr/bin/env bash
# Session verify, call 8 (issue 17): call 7's captured training steps with miofind.torch choosing by measured GPU time
# alone (MIOFIND_TORCH_HOST_US=0): a captured step replays no host work, so the host-aware choice (30 us charged to a
# solution the C++ path cannot launch) has nothing to save there. MobileNetV2 and ResNet-50, batch 32, FP32 and AMP.
set -uo pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
ls /tmp/mf-kcache > /dev/null 2>&1 || { timeout 150 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1; tail -1 $R/warmup.log; }
for c in fp32 amp; do
  MIOFIND_TORCH_HOST_US=0 timeout 200 python3 bench/bench_graph_step.py --out $R/$c --models mobilenet_v2,resnet50 \
    --configs train32-$c > $R/$c.log 2>&1; echo "$c rc=$?"; tail -2 $R/$c/bench_graph_step.md
done
cd $OUT && tar czf r.tgz r && rm -rf r
echo "total $(( $(date +%s) - T0 )) s"
