#!/usr/bin/env bash
# Issue 18 (call 3, diagnosis again (call 2 crashed in the cuDNN part)): diag.py in warm processes (kernel cache from `miofind warmup`, one untimed find of
# another shape first): each FP32 and FP16 unseen layer's find, function by function, then cuDNN's plans (graph,
# build, behaviour notes, first and second execution). The kernel cache comes carried (.whl/kc.tar.xz, built by
# `miofind warmup --arch sm_90 --no-device` on the CPU host); warmup then compiles only what that lacks.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
R=$OUT/r3; mkdir -p $R
export PYTHONPATH=$PWD:/tmp/site
mkdir -p /tmp/warm-kc && chmod 700 /tmp/warm-kc && [ -f .whl/kc.tar.xz ] && tar xJf .whl/kc.tar.xz -C /tmp/warm-kc
( MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 150 python3 -m miofind warmup --arch sm_90 ) > $R/warmup.log 2>&1
tail -2 $R/warmup.log
D=bench/results/session-warmfind/call3
for dt in fp32 fp16; do
  MIOFIND_DB=sqlite:////tmp/diag-$dt.sqlite MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 200 \
    python3 $D/diag.py $R/diag-$dt.json $dt > $R/diag-$dt.log 2>&1
  echo "diag $dt rc=$?"; cat $R/diag-$dt.log | cut -c1-600
done
# the FFT family's GPU tests (its tile ranking changed to numpy: the same orders, checked on the CPU host)
MIOFIND_DB=sqlite:////tmp/t-user.sqlite MIOFIND_KERNEL_CACHE=/tmp/warm-kc timeout 200 python3 -m pytest -q -m gpu \
  -p no:cacheprovider -n 12 tests/fft > $R/tests-fft.log 2>&1
tail -1 $R/tests-fft.log
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
