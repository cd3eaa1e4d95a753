#!/usr/bin/env bash
# Session bridge, call 8 (written at the end of the session bridge, run at the start of the next on an H200 host). It verifies the
# review mends of 26d466c and 62845a0 (the shared child environment of isolate and the detached builds) on the GPU: the bridge's tests (the find with the set-up thread held back, settle), the
# prepared path and miofind.torch with the bridge on in their processes (the hot path's retried replay), the
# torch tests (the locked, detached build), gemm + winograd; then bench_cold_import --bridge-ab and the
# first-step A/B as in call 5; the first find's stages (fft_cufft's version without the binding, also untested on
# a GPU). About 8 minutes.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
unset PYTHONDONTWRITEBYTECODE
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/gemm/test_lt_bridge.py tests/gemm/test_cublaslt_setup_gpu.py \
  > $R/bridge.log 2>&1; echo "bridge tests rc=$?: $(tail -1 $R/bridge.log)"; grep -E "^(FAILED|ERROR)" $R/bridge.log | head
MIOFIND_LT_BRIDGE=1 timeout 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/core/test_prepared_gpu.py tests/core/test_isolate_gpu.py tests/torch \
  > $R/on.log 2>&1; echo "prepared + torch, bridge on, rc=$?: $(tail -1 $R/on.log)"; grep -E "^(FAILED|ERROR)|crashed" $R/on.log | head
timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/gemm tests/winograd > $R/gemm-wino.log 2>&1
echo "gemm + winograd rc=$?: $(tail -1 $R/gemm-wino.log)"
# the first find's stages (fft_cufft: cuFFT's version from the soname-opened library, no binding import)
timeout 60 python3 bench/firstfind_probe.py plain,stages,stages,stages,plain,plain > $R/probe.txt 2>&1
grep -E "stages \(inclusive" $R/probe.txt | head -3 | cut -c1-250
timeout 120 python3 bench/bench_cold_import.py --runs 7 --gpu --bridge-ab --json $R/cold_bridge.json > $R/cold_bridge.log 2>&1
echo "cold rc=$?"; grep -E "median of|  (find|run|total)_ms" $R/cold_bridge.log
MIOFIND_SPECIALIZE=sync timeout 120 python3 bench/first_step.py --out $R/fill --configs train32-fp32 --backends miofind \
  --rounds 1 > $R/fill.log 2>&1
timeout 150 python3 bench/first_step.py --out $R/ab --configs train32-fp32 --backends miofind,miofind-nobridge,heuristic \
  --rounds 3 > $R/ab.log 2>&1; echo "ab rc=$?"; head -9 $R/ab/first_step.md | tail -4
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
