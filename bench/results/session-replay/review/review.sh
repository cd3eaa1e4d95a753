#!/usr/bin/env bash
# Session replay, review check: after the review mends (Prepared.replay, launch.traced_steps): the prepared and torch
# GPU suites, the FP16 capture probe (its refusal reasons now read from the log records), and the tiny problem on
# the four launch paths. (.whl slimmed as in call3.)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/rv; mkdir -p $R
save() { (cd $OUT && tar czf rv.tgz rv); }
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1 &
BUILD=$!
timeout 120 python3 -m pytest -q -m gpu -n 6 tests/core/test_prepared_gpu.py -p no:cacheprovider > $R/prepared.log 2>&1; echo "prepared rc=$?"
tail -1 $R/prepared.log; grep -E "^FAILED|^E  " $R/prepared.log | head -12 | cut -c1-400; save
timeout 100 python3 bench/lt_capture_probe.py --out $R/probe --configs FP16:NHWC --limit 40 > $R/probe.log 2>&1; echo "probe rc=$?"
grep -E "^\| Gemm|^Refusals" $R/probe/lt_capture_probe.md 2>/dev/null | cut -c1-300; save
wait $BUILD; tail -1 $R/build.log
timeout 150 python3 -m pytest -q -m gpu -n 6 tests/torch/test_torch_gpu.py tests/torch/test_fast.py -p no:cacheprovider > $R/torch.log 2>&1; echo "torch rc=$?"
tail -1 $R/torch.log; grep -E "^FAILED" $R/torch.log | head -5 | cut -c1-300; save
timeout 110 python3 bench/bench_overhead.py --out $R/overhead --skip-resnet --skip-cold --rounds 2 --calls 3000 \
  --paths native,replay-calls,stepwise,python > $R/overhead.log 2>&1
echo "overhead rc=$?"; grep -A10 "per launch path" $R/overhead/bench_overhead.md; tail -3 $R/overhead.log | cut -c1-300
save; rm -rf $R
