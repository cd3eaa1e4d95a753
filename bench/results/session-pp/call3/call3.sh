#!/usr/bin/env bash
# Session pp, call 3: (1) on call 2's DB (.pin/db2.sqlite.gz), ResNet-50 N=32 F and B (FP16, BF16) tuned once more for the
# two Hopper solvers with a wider search (128 configs, patience 48: the space grew by the ping-pong configs);
# (2) what the change does to a training step: bench_graph_step.py (ResNet-50, batch 32 AMP channels_last, the step
# captured in one CUDA graph, cuDNN benchmark mode in the same process) on two trees in alternating processes:
# "before" = the session's start (b6ed2a2, from .pin/before.tar.gz: its kernels, solvers and shipped DB), "after" =
# this tree with the DB of (1) as its shipped DB.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C $OUT r; }
export PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
zcat .pin/db2.sqlite.gz > /tmp/db.sqlite
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout 170 python3 -m miofind.cli tune --model resnet50 --batch 32 \
  --dtype fp16 --dtype bf16 --layout NHWC --direction F --direction B --tune-solver ConvImplicitGemmHopperFwd \
  --tune-solver ConvImplicitGemmHopperBwd --retune --max-configs 128 --patience 48 --db sqlite:////tmp/db.sqlite \
  --json-out $R/tune_3.json > $R/tune_3.log 2>&1
echo "tune 3 rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune_3.log | cut -c1-300; gzip -f $R/tune_3.log; save
unset MIOFIND_DB
rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && cp /tmp/dbv.sqlite finddb/sm_90-132.sqlite
B=/tmp/before; mkdir -p $B; tar xzf .pin/before.tar.gz -C $B
(cd $B && gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so)
(grep -c "PINGPONG" $B/kernels_src/implicit_gemm_hopper_fwd.cu kernels_src/implicit_gemm_hopper_fwd.cu) > $R/trees.txt 2>&1
cmp -s $B/finddb/sm_90-132.sqlite finddb/sm_90-132.sqlite && echo "same DB!" >> $R/trees.txt
for round in 1 2; do
  for side in before after; do
    if [ $side = before ]; then dir=$B; else dir=$PWD; fi
    left=$(( 580 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break 2
    (cd $dir && MIOFIND_DB=sqlite:////tmp/mf-user-$side.sqlite PYTHONPATH=$dir:/tmp/site timeout $left python3 bench/bench_graph_step.py \
      --out $R/gs_${side}_$round --models resnet50 --configs train32-amp --no-eager --iters 20 --rounds 5) \
      > $R/gs_${side}_$round.log 2>&1
    echo "$side $round rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| resnet50" $R/gs_${side}_$round/bench_graph_step.md 2>/dev/null | cut -c1-160
    save
  done
done
