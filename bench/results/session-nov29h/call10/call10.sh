#!/usr/bin/env bash
# Session nov29h, call 10 (any sm_90; an H200): miofind.torch's C++ path on the padded copy-engine configs:
# tests/torch/test_fast.py's Hopper tensor-map cases (four padded ones added: F 96 channels, F 1x1 of 24 channels as a
# dense matrix, B with 160 dy channels at stride 2, the copy-engine store at 160 channels 1x7), each launched from
# its recipe with the maps encoded in C++, bit for bit the Python invoker's output.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export CUPY_CACHE_DIR=/tmp/cupy10 MIOFIND_KERNEL_CACHE=/tmp/kc10 MIOFIND_DB=sqlite:////tmp/u10.sqlite
timeout 300 python3 -m pytest -m gpu -v -p no:cacheprovider tests/torch/test_fast.py -k "hopper_tensor_map" -n 6 \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "FAILED|ERROR" $R/tests.log | head; tail -1 $R/tests.log
tar czf $OUT/r.tgz -C /tmp r
