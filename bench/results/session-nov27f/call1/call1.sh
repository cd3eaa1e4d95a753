#!/usr/bin/env bash
# Session nov27f, call 1: cuDNN's heuristics through the backend API (cudnn_execute.heuristic_plans, in C with the GIL
# released: miofind._native.cudnn_heuristics) and a find's cuDNN listing in a thread (MIOFIND_CUDNN_PREFETCH).
# (a) the new GPU tests (the backend listing equals the frontend's, C and ctypes; the find's prefetch, list and build)
#     and session-nov27e's call 6 tests (the winner built once with the corrected side-stream check, the note filter,
#     the deferral); (b) bench/cudnn_listing.py (each way's cost alone and beside busy Python); (c) the cuDNN family's
#     GPU tests, prepared replays, the API and tiered finds.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
filt() { grep -v "leaked\|nanobind\|skipped remainder\|refleaks"; }
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 6 -m gpu tests/cudnn/test_cudnn_gpu.py \
  -k "backend_heuristics or prefetches or built_once or note_filter or wait_for_the_later" -rA 2>&1 | filt > $R/tests_new.log
echo "new tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests_new.log | tail -14; pack
timeout 120 python3 bench/cudnn_listing.py --repeats 5 --json $R/listing.json 2>&1 | filt > $R/listing.log
echo "listing rc=$? $(( $(date +%s) - T0 )) s"; tail -36 $R/listing.log; pack
left=$(( 530 - ($(date +%s) - T0) ))
timeout $left python3 -m pytest -q -p no:cacheprovider -n 8 -m "gpu and not serial" tests/cudnn tests/core/test_prepared_gpu.py \
  tests/core/test_api_gpu.py tests/core/test_tiered_gpu.py 2>&1 | filt > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -12
gzip -f $R/tests.log; pack
