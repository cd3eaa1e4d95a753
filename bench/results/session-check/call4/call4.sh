#!/usr/bin/env bash
# Session check, call 4, at 048d17a (a find's timing measures the GPU's time of a call, MIOFIND_FIND_TIMING=device):
# the timing's GPU tests and the find/tiered/torch tests under it; then the shipped DB's FP16 NHWC N=32 problems of
# ResNet-50, MobileNetV2 and Inception-v3 (288 problems, every solver) found again under device timing into a copy
# (bench/refresh_records.py prepare --all-solvers; `miofind tune --no-tune`: stored tuned configs, specialised builds).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
timeout 200 python3 -m pytest -q -m gpu -n 8 tests/core/test_timing_gpu.py tests/core/test_harness.py \
  tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py tests/torch/test_torch_gpu.py > $R/tests.log 2>&1
echo "tests rc=$?"; tail -1 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head
python3 bench/refresh_records.py prepare --all-solvers --models resnet50,mobilenet_v2,inception_v3 --batches 32 \
  --dtypes FP16 --layouts NHWC --db finddb/sm_90-132.sqlite --out /tmp/refresh.sqlite --lines $R/refresh.txt
left=$(( 560 - ($(date +%s) - T0) ))
t0=$(date +%s)
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none MIOFIND_DB=/tmp/refresh.sqlite timeout -k 20 -s INT $left \
  python3 -m miofind.cli tune --file $R/refresh.txt --no-tune --json-out $R/refresh.json > $R/refresh.log 2>&1
echo "refresh rc=$? $(( $(date +%s) - t0 )) s"; tail -2 $R/refresh.log | cut -c1-300
python3 - /tmp/refresh.sqlite <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.execute("PRAGMA journal_mode=DELETE")
print("records", c.execute("select count(*) from find_records").fetchone()[0], c.execute("PRAGMA integrity_check").fetchone()[0])
PY
cp /tmp/refresh.sqlite $R/refresh.sqlite && gzip -f $R/refresh.sqlite
gzip -f $R/tests.log
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
