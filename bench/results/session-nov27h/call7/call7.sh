#!/usr/bin/env bash
# Session nov27h, call 7: the float64 reference's own backward-data kernel (reference_bwd.cu, the filter taps
# outermost), which calls 1-6 showed the stride-2 B finds waiting on (25 ms of a 41-52 ms find).
# (a) its GPU time against the naive solver's kernel and their outputs (ref_bwd.py); (b) the GPU tests of the
# references (every shared shape, direction and layout against the GEMM reference) and the find API; (c) `miofind
# warmup`, then bench_cold of the stride-2 3x3 shape, FP32 and FP16.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
MIOFIND_KERNEL_CACHE=/tmp/kc-ref timeout 90 python3 bench/results/session-nov27h/call7/ref_bwd.py > $R/ref_bwd.md 2>&1
echo "ref rc=$? $(( $(date +%s) - T0 )) s"; cat $R/ref_bwd.md
MIOFIND_KERNEL_CACHE=/tmp/kc-ref MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 150 python3 -m pytest -q -p no:cacheprovider \
  -n 12 -m "gpu and not serial" tests/core/test_reference_gpu.py tests/core/test_api_gpu.py 2>&1 \
  | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log; pack
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; grep -v "resource_tracker\|warnings.warn" $R/warmup.log | tail -2
timeout 120 python3 bench/bench_cold.py --out $R/cold --shapes r50_256_28_3x3s2_n16 --installed-cache /tmp/warm-kc \
  --installed-cupy-cache /tmp/warm-cupy --timeout 60 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^\*\*The installed/p;/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
pack
