#!/usr/bin/env bash
# Session nov27e, call 6 (not run this session: its device time was spent): the winner-built-once test with its
# side-stream check corrected to the verification tolerance (1031974), with the note-filter and deferral tests beside
# it, then the cuDNN family's GPU tests and the prepared-replay test.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/cudnn/test_cudnn_gpu.py \
  -k "built_once or note_filter or wait_for_the_later" -rA > $R/tests_new.log 2>&1
echo "new tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests_new.log | tail -12; pack
timeout 240 python3 -m pytest -q -p no:cacheprovider -n 8 -m "gpu and not serial" tests/cudnn tests/core/test_prepared_gpu.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -12; pack
gzip -f $R/tests.log; pack
