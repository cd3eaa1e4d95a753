#!/usr/bin/env bash
# Session check, call 9: call 7's part-1 failures. The timing tests, made robust to a shared GPU (5 interleaved rounds,
# each side judged by its best), with all of tests/core under -n 14 as in the suite; then the prepared-solution tests
# (whose side-stream case failed for ConvCudnnBwd and ConvDirectNaiveConvWrw in call 7, and for ConvCudnnBwd in
# session-suite call 5) three times under device timing and three times under wall timing, alternating.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
timeout 200 python3 -m pytest -q -m gpu -n 14 tests/core > $R/core.log 2>&1
echo "core rc=$?"; tail -1 $R/core.log; grep -E "^(FAILED|ERROR)" $R/core.log | head
for i in 1 2 3; do
  for mode in device wall; do
    MIOFIND_FIND_TIMING=$mode timeout 100 python3 -m pytest -q -m gpu -n 14 tests/core/test_prepared_gpu.py \
      > $R/prepared-$mode-$i.log 2>&1
    echo "prepared $mode $i rc=$?: $(tail -1 $R/prepared-$mode-$i.log)"; grep -E "^(FAILED|ERROR)" $R/prepared-$mode-$i.log | head -3
  done
done
gzip -f $R/core.log
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
