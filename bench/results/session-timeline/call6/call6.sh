#!/usr/bin/env bash
# Session timeline, call 6: the torch GPU suite after its test's mend (the dw-only backward may be the C++ plan's);
# bench_models --trace-ab on Inception-v3 batch-1 FP32 again and its FP32 training step.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c6; mkdir -p $R
save() { (cd $OUT && tar czf c6.tgz c6); }
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
timeout 140 python3 -m pytest -q -m gpu -n 4 tests/torch/test_torch_gpu.py -p no:cacheprovider > $R/torch.log 2>&1; echo "torch rc=$?"
tail -1 $R/torch.log; grep -E "^FAILED" $R/torch.log | head -5 | cut -c1-300; save
tab() {
  timeout $1 python3 bench/bench_models.py --out $R/$2 --models $3 --configs $4 --skip-first --steps 0 --iters $5 \
    --rounds $6 --trace-ab > $R/$2.log 2>&1; echo "$2 rc=$?"; grep -A6 "traced recipes" $R/$2/bench_models.md | grep "^| [a-z]" | cut -c1-500; save
}
tab 200 inc inception_v3 infer1-fp32,train32-fp32 10 5
save; rm -rf $R
