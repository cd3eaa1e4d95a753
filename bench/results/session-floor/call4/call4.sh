#!/usr/bin/env bash
# Session floor, call 4 (code of this call's commit: the cost model's C scorer, 17a25fb, and bench_eager_pairs
# rotating every order of its sides): the cost model's answer time on this host's CPU, C scorer against numpy; the
# armed module calls against cuDNN and against miofind without them, three sides in every order in turn; the GPU
# suite's part 1 (core, cudnn, depthwise, direct, cli, tuning, torch).
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
lscpu | grep -E "Model name|^CPU\(s\)|MHz" > $R/cpu.txt
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1 &
BUILD=$!
save() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 150 python3 bench/bench_costmodel_speed.py --scorer both --before-repeats 0 --out $R/cm > $R/cm.log 2>&1
echo "costmodel rc=$? $(( $(date +%s) - T0 )) s"; grep -iE "median|scorer|problem" $R/cm/speed.md | head -12
wait $BUILD; echo "setup $(( $(date +%s) - T0 )) s: $(tail -1 $R/build.log)"; save
export MIOFIND_SYSTEM_DB=$PWD/finddb/sm_90-132.sqlite
MIOFIND_DB=/tmp/u-pairs.sqlite timeout 200 python3 bench/bench_eager_pairs.py --out $R/pairs-infer \
  --models mobilenet_v2,inception_v3,resnet50 --configs infer1-fp32,infer1-amp --pairs 300 \
  --sides cudnn,miofind,miofind-noarm > $R/pairs-infer.log 2>&1
echo "pairs infer rc=$? $(( $(date +%s) - T0 )) s"; grep "^| [rmi]" $R/pairs-infer/bench_eager_pairs.md; save
MIOFIND_DB=/tmp/u-pairs2.sqlite timeout 90 python3 bench/bench_eager_pairs.py --out $R/pairs-train \
  --models mobilenet_v2 --configs train32-fp32 --pairs 120 --sides cudnn,miofind,miofind-noarm > $R/pairs-train.log 2>&1
echo "pairs train rc=$? $(( $(date +%s) - T0 )) s"; grep "^| [rmi]" $R/pairs-train/bench_eager_pairs.md; save
unset MIOFIND_SYSTEM_DB
left=$(( 590 - ($(date +%s) - T0) ))
OUT=$R/part1 BENCH=0 XDIST=14 STRESS=1 timeout $left scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct \
  tests/cli tests/tuning tests/torch > $R/part1.log 2>&1
echo "part1 rc=$? $(( $(date +%s) - T0 )) s"; tail -5 $R/part1.log | cut -c1-300
save
echo "total $(( $(date +%s) - T0 )) s"
