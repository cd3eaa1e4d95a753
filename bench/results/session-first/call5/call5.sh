#!/usr/bin/env bash
# Session first, call 5 (same machine as call 4, warm): the GPU tests that this session's code changes touch:
# miofind.torch (the host-aware choice no longer builds a cuDNN plan it sets aside) and the CLI (no warm_up()).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench tests > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c5; mkdir -p $R
save() { (cd $OUT && tar czf c5.tgz c5); }
timeout 280 python3 -m pytest -q -m gpu -n 8 tests/torch/test_torch_gpu.py tests/torch/test_fast.py -p no:cacheprovider > $R/torch.log 2>&1; echo "torch rc=$?"
tail -1 $R/torch.log; grep -E "^FAILED" $R/torch.log | head -5 | cut -c1-300; save
timeout 200 python3 -m pytest -q -m gpu -n 8 tests/cli -p no:cacheprovider > $R/cli.log 2>&1; echo "cli rc=$?"
tail -1 $R/cli.log; grep -E "^FAILED" $R/cli.log | head -5 | cut -c1-300; save
