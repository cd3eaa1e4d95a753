#!/usr/bin/env bash
# Session stem, call 4: what the small-C solvers do to a training step. bench_graph_step.py (ResNet-50 and MobileNetV2,
# batch 32 AMP channels_last, the step captured in one CUDA graph, cuDNN benchmark mode in the same process) on two
# trees in alternating processes: "before" = this tree without the small-C registry rows and the shipped DB before
# their records (.pin/db_before_stem.sqlite, carried), "after" = this tree and its shipped DB.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
B=/tmp/before; mkdir -p $B; cp -r miofind solvers kernels_src finddb bench scripts tests pyproject.toml $B/
cp .pin/db_before_stem.sqlite $B/finddb/sm_90-132.sqlite
grep -v "ConvImplicitGemmSmallC" miofind/registry.py > $B/miofind/registry.py
grep -c SmallC $B/miofind/registry.py miofind/registry.py | tee $R/registry_check.txt
(cd $B && PYTHONPATH=$B:/tmp/site python3 -c "from miofind.torch import _fast; print(_fast.build())") > $R/build_before.log 2>&1
PYTHONPATH=$PWD:/tmp/site python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build_after.log 2>&1
for round in 1 2; do
  for side in before after; do
    if [ $side = before ]; then dir=$B; else dir=$PWD; fi
    left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break 2
    (cd $dir && MIOFIND_DB=sqlite:////tmp/mf-user-$side.sqlite PYTHONPATH=$dir:/tmp/site timeout $left python3 bench/bench_graph_step.py \
      --out $R/gs_${side}_$round --models resnet50,mobilenet_v2 --configs train32-amp --no-eager --iters 20 --rounds 5) \
      > $R/gs_${side}_$round.log 2>&1
    echo "$side $round rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| (resnet50|mobilenet_v2)" $R/gs_${side}_$round/bench_graph_step.md 2>/dev/null | cut -c1-120
    save
  done
done
