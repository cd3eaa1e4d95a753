#!/usr/bin/env bash
# The GPU suite's part 2 at 3b9ef35, then the part-1 files it changed or that failed in call 3 (result: part 2 cut by
# its 330 s limit at ~98% with no failure; part 1: 1 failed, 428 passed, the failure test_compile_reduce_overhead).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
R=$OUT/r4; mkdir -p $R
OUT=$R/p2 BENCH=0 XDIST=14 timeout 330 scripts/gpu-check tests/fft tests/gemm tests/implicit_gemm \
  tests/implicit_gemm_hopper tests/winograd 2>&1 | tail -4
OUT=$R/p1 BENCH=0 XDIST=12 timeout 200 scripts/gpu-check tests/torch tests/core/test_reference_gpu.py \
  tests/core/test_tiered_gpu.py tests/core/test_api_gpu.py tests/cudnn 2>&1 | tail -4
for p in p1 p2; do gzip -f $R/$p/gpu-tests.log; done
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
