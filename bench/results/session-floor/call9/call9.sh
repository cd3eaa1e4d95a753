#!/usr/bin/env bash
# Session floor, call 9 (code of a8ab3a0, the session's last library change: a collected module's armed slot
# released): the torch GPU tests.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
echo "setup $(( $(date +%s) - T0 )) s: $(tail -1 $R/build.log)"
timeout 240 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/torch > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-400
gzip -f $R/tests.log
echo "total $(( $(date +%s) - T0 )) s"
