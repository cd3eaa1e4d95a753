#!/usr/bin/env bash
# Session epi, call 7: the GPU suite's part 1 (core, cuDNN, depthwise, direct, CLI, tuning, torch) at the session's code
# and shipped DB; then AMP channels_last training of Inception-v3 and ResNet-50 at batch 32, cuDNN benchmark mode
# against miofind.torch step by step (bench_eager_pairs.py), with this session's shipped DB (new) and the DB before its
# Hopper F and W records were measured again (old: 8a73b6c's, carried as .pin/old.sqlite), processes alternating
# new, old, new, old.
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
OUT=$R/part1 BENCH=0 XDIST=14 STRESS=1 timeout 300 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct \
  tests/cli tests/tuning tests/torch > $R/part1.log 2>&1
echo "part1 rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/part1.log | cut -c1-300; save
i=0
for db in new old new old; do
  i=$((i + 1)); left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { echo "skip $i $db"; continue; }
  f=$PWD/finddb/sm_90-132.sqlite; [ $db = old ] && f=$PWD/.pin/old.sqlite
  MIOFIND_SYSTEM_DB=$f MIOFIND_DB=/tmp/u-$i.sqlite timeout $left python3 bench/bench_eager_pairs.py --out $R/pairs-$i-$db \
    --models inception_v3,resnet50 --configs train32-amp --pairs 30 > $R/pairs-$i-$db.log 2>&1
  echo "pairs $i $db rc=$? $(( $(date +%s) - T0 )) s"; grep "^| [rmi]" $R/pairs-$i-$db/bench_eager_pairs.md; save
done
