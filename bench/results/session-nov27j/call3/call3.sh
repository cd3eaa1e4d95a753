#!/usr/bin/env bash
# Session nov27j, call 3: the GPU tests the GEMM configs touch (tests/gemm: every cuBLASLt algorithm a find lists,
# verified; a tune storing one that find then runs; the family's claims), the tuner's and the find API's GPU tests and
# miofind.torch's (which run the shipped DB's records, now with GEMM configs); then ResNet-50's AMP training step
# captured in a CUDA graph (bench/bench_graph_step.py), before (aba83f3, the session's start, its own shipped DB:
# .pin/before.tar.gz = git archive aba83f3) and after (this tree, call 2's records merged into the shipped DB),
# alternating.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 300 python3 -m pytest -q -p no:cacheprovider -n 12 -m "gpu and not serial" \
  tests/gemm tests/tuning/test_tune_gpu.py tests/core/test_api_gpu.py tests/torch 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -12; gzip -f $R/tests.log; pack
B=/tmp/before; rm -rf $B; mkdir -p $B; tar xzf .pin/before.tar.gz -C $B
(cd $B && gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so)
for round in 1 2 3; do
  for side in before after; do
    if [ $side = before ]; then dir=$B; else dir=$PWD; fi
    left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 70 ] && break 2
    (cd $dir && MIOFIND_DB=sqlite:////tmp/mf-user-$side.sqlite PYTHONPATH=$dir:/tmp/site timeout $left python3 bench/bench_graph_step.py \
      --out $R/gs_${side}_$round --models resnet50 --configs train32-amp --no-eager --iters 20 --rounds 5) \
      > $R/gs_${side}_$round.log 2>&1
    echo "$side $round rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| resnet50" $R/gs_${side}_$round/bench_graph_step.md 2>/dev/null | cut -c1-200
    pack
  done
done
echo "done $(( $(date +%s) - T0 )) s"
