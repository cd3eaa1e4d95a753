#!/usr/bin/env bash
# Session suite, call 4: miofind.torch's preload imports the cuDNN frontend too (00c74c0). The torch and cuDNN tests
# (CPU and GPU), then ResNet-50's first FP32 training step (batch 32, fresh processes) after / before the change
# (before = this tree with ab.patch reversed, in /tmp/before), alternating, with the step right after the set-up and
# 500 ms after it; PyTorch's heuristic first step beside them.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
rm -rf /tmp/before && cp -r $PWD /tmp/before && (cd /tmp/before && patch -R -p1 -s < bench/results/session-suite/call4/ab.patch) \
  && echo "before tree: $(grep -c preload_frontend /tmp/before/miofind/torch/_preload.py) preload_frontend lines"
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 miofind solvers bench /tmp/before/miofind \
  /tmp/before/solvers /tmp/before/bench > /dev/null 2>&1
PYTHONPATH=$PWD:/tmp/site timeout 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/torch tests/cudnn \
  > $R/tests.log 2>&1; echo "torch + cudnn tests rc=$?: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | head
PYTHONPATH=$PWD:/tmp/site MIOFIND_SPECIALIZE=sync timeout 120 python3 bench/first_step.py --out $R/fill \
  --configs train32-fp32 --backends miofind --rounds 1 > $R/fill.log 2>&1; echo "fill rc=$?"
echo "elapsed $(( $(date +%s) - T0 )) s"
for setup in 0 500; do for round in 1 2 3; do
  for tree in after before; do
    root=$PWD; [ $tree = before ] && root=/tmp/before
    (cd $root && PYTHONPATH=$root:/tmp/site timeout 60 python3 bench/first_step.py --out $R/s${setup}_${tree}_$round \
      --configs train32-fp32 --backends miofind --rounds 1 --setup-ms $setup > /dev/null 2>&1)
    grep -E "^\| resnet50" $R/s${setup}_${tree}_$round/first_step.md | head -1 | cut -d'|' -f4,6,10 \
      | sed "s/^/setup $setup round $round $tree: /"
  done
done; done
PYTHONPATH=$PWD:/tmp/site timeout 60 python3 bench/first_step.py --out $R/heur --configs train32-fp32 --backends heuristic \
  --rounds 3 > /dev/null 2>&1; grep -E "^\| resnet50" $R/heur/first_step.md | cut -d'|' -f4,6
grep -h "Imports inside the step" $R/s0_after_1/first_step.md $R/s0_before_1/first_step.md | cut -c1-200
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
