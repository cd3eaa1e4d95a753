#!/usr/bin/env bash
# Session floor, call 2 (code of a894a37, the cost model's files pinned to that commit: a helper was editing them):
# ResNet-50's first training step with convert()'s preload importing the cuDNN frontend ("after") against the tree
# without it ("before": preload.patch reversed), alternating processes; then bench_eager_pairs.py (cuDNN and
# miofind.torch alternating step by step) on batch-1 inference of the three models and MobileNetV2's training step.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
cp .pin/_native.c miofind/_native.c; cp .pin/costmodel.py miofind/costmodel.py
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/before && cp -r $PWD /tmp/before && (cd /tmp/before && patch -s -R -p1 < .pin/preload.patch) \
  && echo "before tree: $(grep -c cudnn_base /tmp/before/miofind/torch/_preload.py) cudnn_base lines"
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 /tmp/before/miofind > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
PYTHONPATH=$PWD:/tmp/site python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
echo "setup $(( $(date +%s) - T0 )) s"
save() { tar czf $OUT/r.tgz -C $OUT r; }
PYTHONPATH=$PWD:/tmp/site timeout 120 python3 bench/first_step.py --out $R/fill --configs train32-fp32,train32-amp \
  --backends miofind --rounds 1 > $R/fill.log 2>&1; echo "fill rc=$? $(( $(date +%s) - T0 )) s"
for i in 1 2 3; do
  for run in after before; do
    tree=$PWD; [ $run = before ] && tree=/tmp/before
    b=miofind; [ $run = after ] && [ $i = 1 ] && b=miofind,heuristic
    (cd $tree && PYTHONPATH=$tree:/tmp/site timeout 90 python3 bench/first_step.py --out $R/fs-$run-$i \
      --configs train32-fp32,train32-amp --backends $b --rounds 1 --setup-ms 500 > $R/fs-$run-$i.log 2>&1)
    echo "$run $i rc=$? $(( $(date +%s) - T0 )) s"; grep "^round" $R/fs-$run-$i.log | cut -c1-100
  done
done
save
export PYTHONPATH=$PWD:/tmp/site MIOFIND_SYSTEM_DB=$PWD/finddb/sm_90-132.sqlite
MIOFIND_DB=/tmp/u-pairs.sqlite timeout 200 python3 bench/bench_eager_pairs.py --out $R/pairs-infer \
  --models resnet50,mobilenet_v2,inception_v3 --configs infer1-fp32,infer1-amp --pairs 300 > $R/pairs-infer.log 2>&1
echo "pairs infer rc=$? $(( $(date +%s) - T0 )) s"; grep "^| [rmi]" $R/pairs-infer/bench_eager_pairs.md; save
left=$(( 585 - ($(date +%s) - T0) ))
MIOFIND_DB=/tmp/u-pairs2.sqlite timeout $left python3 bench/bench_eager_pairs.py --out $R/pairs-train \
  --models mobilenet_v2 --configs train32-fp32,train32-amp --pairs 100 > $R/pairs-train.log 2>&1
echo "pairs train rc=$? $(( $(date +%s) - T0 )) s"; grep "^| [rmi]" $R/pairs-train/bench_eager_pairs.md
save
echo "total $(( $(date +%s) - T0 )) s"
