#!/usr/bin/env bash
# Session epi, call 11 (issues 18 and 19; call 10 again in the other order, twice): what the Hopper find configs (the default now, the alternates later) cost a
# model's first AMP training step and its background work: bench/find_breakdown.py --amp --batch 48 --steady 10
# (ResNet-50 at a batch the shipped DB does not hold, empty user DB, empty kernel cache each), without the alternates
# (call10/noalt.py: the default alone, as before the session) and with them; a discarded warm-up process first (CuPy's cache), then the sides in the order on, off, on, off, each with the
# C++ extension's build in its kernel cache and no miofind kernel.
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
for side in warm on off on off; do i=$((${i:-0} + 1))
  s=bench/find_breakdown.py; [ $side != on ] && s=bench/results/session-epi/call10/noalt.py
  rm -rf /tmp/kc-$i; cp -r /tmp/kc-tests /tmp/kc-$i       # the C++ extension built; no miofind kernel
  MIOFIND_KERNEL_CACHE=/tmp/kc-$i timeout 130 python3 $s --out $R/fb-$i-$side --amp --batch 48 --steady 10 > $R/fb-$i-$side.log 2>&1
  echo "$i $side rc=$? $(( $(date +%s) - T0 )) s: $(python3 -c "
import json; s = json.load(open('$R/fb-$i-$side/find_breakdown.json'))['summary']
print({k: round(s[k], 3) for k in ('step_s', 'find_wall_ms', 'second_step_s', 'background_wait_s', 'steady_ms')})" 2>&1 | tail -1)"
  save
done
echo "total $(( $(date +%s) - T0 )) s"
