#!/usr/bin/env bash
# Session timeline, call 4: the traced recipes (GEMM and Winograd replayed by the C++ path). GPU tests: test_fast
# (the 11 traced cases bit for bit against the Python invoker, the rest of the C++ path), the GEMM and Winograd suites
# (their invokers' cuBLASLt calls now pass a trace check); then bench_models --trace-ab on the FP32 rows.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c4; mkdir -p $R
save() { (cd $OUT && tar czf c4.tgz c4); }
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
timeout 130 python3 -m pytest -q -m gpu tests/torch/test_fast.py -p no:cacheprovider > $R/fast.log 2>&1; echo "fast rc=$?"
grep -E "passed|failed" $R/fast.log | tail -2; grep -E "^FAILED|^E " $R/fast.log | head -12 | cut -c1-300; save
timeout 110 python3 -m pytest -q -m gpu -n 8 tests/gemm tests/winograd -p no:cacheprovider > $R/gemm-wino.log 2>&1; echo "gemm/winograd rc=$?"
tail -1 $R/gemm-wino.log; grep -E "^FAILED" $R/gemm-wino.log | head -5; save
tab() {
  timeout $1 python3 bench/bench_models.py --out $R/$2 --models $3 --configs $4 --skip-first --steps 0 --iters 15 \
    --rounds 5 --trace-ab > $R/$2.log 2>&1; echo "$2 rc=$?"; grep -A6 "traced recipes" $R/$2/bench_models.md | grep "^| [a-z]" | cut -c1-400; save
}
tab 150 r50 resnet50 infer1-fp32,train32-fp32
tab 90 mnet mobilenet_v2 infer1-fp32
save; rm -rf $R
