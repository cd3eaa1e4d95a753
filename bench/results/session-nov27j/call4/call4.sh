#!/usr/bin/env bash
# Session nov27j, call 4, at the final form of the GEMM configs ({"LT": i}; cuBLASLt's version in the GEMM and Winograd
# trust keys; the shipped DB re-keyed, call2/rekey.py): (1) lt_search.py: what cuBLASLt offers beyond its heuristic's
# first 8 on ResNet-50's 1x1 FP16 layers (explicit algorithm ids, split-K); (2) the GPU tests of the GEMM family, the
# tuner, the find API and miofind.torch; (3) ResNet-50's AMP training step in a CUDA graph, before (aba83f3 and its
# shipped DB, .pin/before.tar.gz) and after (this tree and DB), alternating. Only r.tgz is left in $OUT.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
python3 -c "from miofind import cublas; print('cublasLt', cublas.lt_version())" >> $R/device.txt
pack() { tar czf $OUT/r.tgz -C /tmp r; }
timeout 150 python3 bench/results/session-nov27j/call4/lt_search.py $R/lt_search.json 120 > $R/lt_search.log 2>&1
echo "search rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^[FBW] " $R/lt_search.log | cut -c1-230; pack
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 240 python3 -m pytest -q -p no:cacheprovider -n 12 -m "gpu and not serial" \
  tests/gemm tests/tuning/test_tune_gpu.py tests/core/test_api_gpu.py tests/torch 2>&1 | grep -v "leaked\|nanobind\|refleaks" > $R/tests.log
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|^ERROR|passed|failed" $R/tests.log | tail -12; gzip -f $R/tests.log; pack
B=/tmp/before; rm -rf $B; mkdir -p $B; tar xzf .pin/before.tar.gz -C $B
(cd $B && gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so)
for round in 1 2 3; do
  for side in before after; do
    if [ $side = before ]; then dir=$B; else dir=$PWD; fi
    left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 45 ] && break 2
    (cd $dir && MIOFIND_DB=sqlite:////tmp/mf-user-$side.sqlite PYTHONPATH=$dir:/tmp/site timeout $left python3 bench/bench_graph_step.py \
      --out $R/gs_${side}_$round --models resnet50 --configs train32-amp --no-eager --iters 20 --rounds 5) \
      > $R/gs_${side}_$round.log 2>&1
    echo "$side $round rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| resnet50" $R/gs_${side}_$round/bench_graph_step.md 2>/dev/null | cut -c1-120
    pack
  done
done
echo "done $(( $(date +%s) - T0 )) s"
