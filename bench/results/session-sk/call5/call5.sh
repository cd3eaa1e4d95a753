#!/usr/bin/env bash
# Session sk, call 5: (1) call 4's one failed test (a global-mode CUDA-graph capture invalidated while a background job
# ran) alone, then its file serially; (2) what this session's W changes do to a training step: bench_graph_step.py
# (ResNet-50, batch 32 AMP channels_last, the step captured in one CUDA graph, cuDNN benchmark mode in the same process)
# on two trees in alternating processes: "before" = the session's start (1d4eedd, from .pin/before.tar.gz: its kernels,
# solvers and shipped DB), "after" = this tree.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
export PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:benchmark \
  "tests/core/test_tiered_gpu.py::test_background_work_leaves_another_threads_capture_valid" > $R/capture_alone.log 2>&1
echo "alone rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/capture_alone.log)"
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:benchmark tests/core/test_tiered_gpu.py > $R/tiered_serial.log 2>&1
echo "serial rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tiered_serial.log)"; save
unset MIOFIND_DB
B=/tmp/before; mkdir -p $B; tar xzf .pin/before.tar.gz -C $B
cp miofind/_native.abi3.so $B/miofind/ 2>/dev/null; (cd $B && gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so)
(cd $B && git -C $B log -1 2>/dev/null; grep -c "ST16" $B/kernels_src/implicit_gemm_hopper_wrw.cu kernels_src/implicit_gemm_hopper_wrw.cu) > $R/trees.txt 2>&1
cmp -s $B/finddb/sm_90-132.sqlite finddb/sm_90-132.sqlite && echo "same DB!" >> $R/trees.txt
(cd $B && PYTHONPATH=$B:/tmp/site python3 -c "from miofind.torch import _fast; print(_fast.build())") > $R/build_before.log 2>&1
PYTHONPATH=$PWD:/tmp/site python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build_after.log 2>&1
for round in 1 2; do
  for side in before after; do
    if [ $side = before ]; then dir=$B; else dir=$PWD; fi
    left=$(( 575 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break 2
    (cd $dir && MIOFIND_DB=sqlite:////tmp/mf-user-$side.sqlite PYTHONPATH=$dir:/tmp/site timeout $left python3 bench/bench_graph_step.py \
      --out $R/gs_${side}_$round --models resnet50 --configs train32-amp --no-eager --iters 20 --rounds 5) \
      > $R/gs_${side}_$round.log 2>&1
    echo "$side $round rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| resnet50" $R/gs_${side}_$round/bench_graph_step.md 2>/dev/null | cut -c1-160
    save
  done
done
