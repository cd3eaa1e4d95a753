#!/usr/bin/env bash
# Session dec01d, call 3 (an H200): `miofind warmup --arch sm_90`; the GPU tests this session touched (the two
# compiled-training torch tests now sharing _train_compiled_like_eager; finds and their timing through
# fastread.one_connection: test_timing_gpu, test_api_gpu); then ResNet-50's AMP first training step at batch 48, which
# call 2's bench_cold timeout cut (the installed caches exported as the process's own, as call 2).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 230 python3 -m miofind warmup --arch sm_90 \
  > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"; tail -1 $R/warmup.log; save
cp -r /tmp/warm-kc /tmp/kct; cp -r /tmp/warm-cupy /tmp/cupyt
MIOFIND_KERNEL_CACHE=/tmp/kct CUPY_CACHE_DIR=/tmp/cupyt MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 170 \
  python3 -m pytest -v -p no:cacheprovider -m gpu tests/core/test_timing_gpu.py tests/core/test_api_gpu.py \
  tests/torch/test_torch_gpu.py -k "timing or api or compile_default_mode or graph_trees" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E " FAILED| ERROR|passed|failed" $R/tests.log | tail -8; gzip -f $R/tests.log; save
export MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy
left=$(( 575 - $(el) ))
timeout $left python3 bench/bench_cold.py --out $R/first --skip-layers --resnet50 --resnet-configs amp \
  --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy --timeout $((left - 10)) > $R/first.log 2>&1
echo "first rc=$? $(el) s"; grep resnet50 $R/first.log | cut -c1-400
gzip -f $R/*.log; save; echo "all $(el) s"
