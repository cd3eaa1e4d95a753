#!/usr/bin/env bash
# Session tf32, call 4 (issue 14, the first find of a new process): where the first find's time goes now. The
# site-packages compiled in place (as pip does at install; the device image ships them without bytecode), then
# bench/firstfind_probe.py: plain finds, the find's stages (inclusive wall ms), a cProfile of one find, first runs;
# then bench_cold_import.py's 7 processes (import, first find, first run).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
unset PYTHONDONTWRITEBYTECODE
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
timeout 200 python3 bench/firstfind_probe.py run,plain,stages,stages,stages,plain,prof,run,run > $OUT/probe.txt 2>&1
echo "probe rc=$?"; grep -E "^==|import .* ms|stages|first run" $OUT/probe.txt | head -40
timeout 150 python3 bench/bench_cold_import.py --runs 7 --gpu --json $OUT/cold_import.json > $OUT/cold_import.log 2>&1
echo "cold rc=$?"; tail -8 $OUT/cold_import.log
