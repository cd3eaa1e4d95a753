#!/usr/bin/env bash
# Session epi, call 10 (issues 18 and 19): what the Hopper find configs (the default now, the alternates later) cost a
# model's first AMP training step and its background work: bench/find_breakdown.py --amp --batch 48 --steady 10
# (ResNet-50 at a batch the shipped DB does not hold, empty user DB, empty kernel cache each), without the alternates
# (call10/noalt.py: the default alone, as before the session) and with them; then the torch GPU tests on the
# session's final DB.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
MIOFIND_KERNEL_CACHE=/tmp/kc-tests python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
echo "setup $(( $(date +%s) - T0 )) s"
save() { tar czf $OUT/r.tgz -C $OUT r; }
for side in off on; do
  s=bench/find_breakdown.py; [ $side = off ] && s=bench/results/session-epi/call10/noalt.py
  MIOFIND_KERNEL_CACHE=/tmp/kc-$side timeout 200 python3 $s --out $R/fb-$side --amp --batch 48 --steady 10 > $R/fb-$side.log 2>&1
  echo "$side rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/fb-$side.log | cut -c1-300; save
done
left=$(( 585 - ($(date +%s) - T0) ))
MIOFIND_KERNEL_CACHE=/tmp/kc-tests timeout $left python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/torch > $R/tests_torch.log 2>&1
echo "torch tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests_torch.log)"; grep -E "^(FAILED|ERROR)" $R/tests_torch.log | cut -c1-300; save
