#!/usr/bin/env bash
# Session verify, call 5: issue 18's figures at the current code (bb32888: hints reverted, a find asks workspaces only
# under a limit): `miofind warmup`, then bench_cold side by side with torch's benchmark-mode first calls (FP32 and FP16,
# warm and empty caches) and ResNet-50's first training step at batch 48 against cuDNN benchmark mode.
set -uo pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 -m miofind warmup --arch sm_90 ) \
  > $R/warmup.log 2>&1
tail -1 $R/warmup.log
timeout 330 python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 --resnet50 > $R/cold.log 2>&1
echo "cold rc=$?"; sed -n '/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md; sed -n '/^| config/,$p' $R/cold/bench_cold.md
cd $OUT && tar czf r.tgz r && rm -rf r
echo "total $(( $(date +%s) - T0 )) s"
