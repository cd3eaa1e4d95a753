#!/usr/bin/env bash
# Session replay, call 4: what the captured cuBLASLt kernels do to a model step: bench_models --capture-ab (the traced
# recipes' matmuls as captured kernels against as cuBLASLt calls, in the same alternating rounds as cuDNN benchmark
# mode) on ResNet-50 FP32 batch-1 inference and batch-32 training. (.whl slimmed as in call3.)
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
tab() {
  timeout $1 python3 bench/bench_models.py --out $R/$2 --models $3 --configs $4 --skip-first --steps 0 --iters $5 \
    --rounds $6 --capture-ab > $R/$2.log 2>&1; echo "$2 rc=$?"; grep -A6 "graph capture" $R/$2/bench_models.md | grep "^| [a-z]" | cut -c1-500; save
}
tab 170 r50i resnet50 infer1-fp32 15 7
tab 200 r50t resnet50 train32-fp32 10 5
# then bench_overhead's tiny problem again with every single- and multi-call solver asked for by name (call3's find
# returned neither the tiled direct nor the FFT solution), two rounds
timeout 110 python3 bench/bench_overhead.py --out $R/overhead --skip-resnet --skip-cold --rounds 2 --calls 3000 \
  --paths native,replay-calls,stepwise,python > $R/overhead.log 2>&1
echo "overhead rc=$?"; grep -A10 "per launch path" $R/overhead/bench_overhead.md; tail -3 $R/overhead.log | cut -c1-300
save; rm -rf $R
