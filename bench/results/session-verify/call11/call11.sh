#!/usr/bin/env bash
# Session verify, call 11 (issue 17): call 9's captured batch-1 inference again with batch-norm statistics computed
# first (bench_graph_step.calibrate: call 10 showed the untrained models' logits all 0 (MobileNetV2) or overflowing
# FP16 on both sides (Inception-v3)), so that the two sides' logits can be compared.
set -uo pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
ls miofind/_native*.so > /dev/null 2>&1 || gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
ls /tmp/mf-kcache > /dev/null 2>&1 || { timeout 150 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1; }
for c in infer1-fp32 infer1-amp; do
  timeout 150 python3 bench/bench_graph_step.py --out $R/$c --models resnet50,mobilenet_v2,inception_v3 --configs $c \
    > $R/$c.log 2>&1; echo "$c rc=$?"; tail -3 $R/$c/bench_graph_step.md
done
cd $OUT && tar czf r.tgz r && rm -rf r
echo "total $(( $(date +%s) - T0 )) s"
