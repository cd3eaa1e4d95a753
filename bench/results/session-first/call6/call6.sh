#!/usr/bin/env bash
# Session first, call 6: convert()'s background preload (MIOFIND_TORCH_PRELOAD). ResNet-50's first training step in
# fresh processes: PyTorch's heuristic step, miofind with and without the preload, with the step right after the
# set-up (--setup-ms 0) and after 500 ms of a script's own set-up (--setup-ms 500); site-packages compiled in place
# as in call 4. Then the torch GPU tests (convert now starts the thread).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c6; mkdir -p $R
save() { (cd $OUT && tar czf c6.tgz c6); }
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE timeout 200 python3 -m compileall -q -j 16 $SP $PWD/miofind $PWD/solvers $PWD/bench $PWD/tests /tmp/site > /dev/null 2>&1
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1 &
BUILD=$!
timeout 140 python3 bench/first_step.py --out $R/fill --configs train32-fp32,train32-amp --backends miofind-nopreload --rounds 1 > $R/fill.log 2>&1
echo "fill rc=$?"; wait $BUILD; tail -1 $R/build.log; save
for ms in 0 500; do
  timeout 200 python3 bench/first_step.py --out $R/fs_setup$ms --configs train32-fp32,train32-amp --backends heuristic,miofind,miofind-nopreload --rounds 2 --setup-ms $ms > $R/fs_setup$ms.log 2>&1
  echo "setup $ms rc=$?"; grep "^round" $R/fs_setup$ms.log | cut -c1-100; sed -n '/^| model/,/^$/p' $R/fs_setup$ms/first_step.md | cut -c1-200; save
done
timeout 150 python3 -m pytest -q -m gpu -n 8 tests/torch/test_torch_gpu.py tests/torch/test_fast.py -p no:cacheprovider > $R/torch.log 2>&1; echo "torch rc=$?"
tail -1 $R/torch.log; grep -E "^FAILED" $R/torch.log | head -5 | cut -c1-300; save
