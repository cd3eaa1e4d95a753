#!/usr/bin/env bash
# Session cw, call 5: the shipped-record ratios mix hosts (the Hopper records measured again in calls 3-4, cuDNN's from
# earlier sessions). On call 4's DB (.pin/db4.sqlite.gz), every record of ResNet-50's 138 N=32 NHWC FP16/BF16 problems
# is measured again here, all 26 solvers that had one (cuDNN's plans included), by scripts/add-solver-records; then the
# same-run isolated sweeps (sweep_configs.py: the Hopper solver at its find configs and its record's config beside
# cuDNN's plans, F, B and W, with cuBLAS's GEMM for W); then, while time is left, a ResNet-50 AMP training step
# captured in a CUDA graph, before (9649cb0, the session's start, its own shipped DB) and after (this tree, this DB).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C $OUT r; }
gunzip -c .pin/db4.sqlite.gz > /tmp/db.sqlite
ARGS=$(python3 bench/results/session-cw/call5/remeasure_r50.py /tmp/db.sqlite 2> $R/remeasure_delete.log); cat $R/remeasure_delete.log
timeout 330 scripts/add-solver-records /tmp/db.sqlite $ARGS --seconds 300 --json $R/remeasure.json > $R/remeasure.log 2>&1
echo "remeasure rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/remeasure.log | cut -c1-400; save
for d in F B W; do
  s=ConvImplicitGemmHopper$([ $d = F ] && echo Fwd || ([ $d = B ] && echo Bwd || echo Wrw))
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 30 ] && break
  timeout $left python3 bench/sweep_configs.py --dir $d --layers all --where "BM=999" \
    --others $s$([ $d = W ] && echo ,GemmWrw1x1_stride1) --db /tmp/db.sqlite --iters 30 --deadline $(( left - 10 )) \
    --json $R/sweep_$d.json > $R/sweep_$d.log 2>&1
  echo "sweep $d rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^geomean" $R/sweep_$d.log; save
done
unset MIOFIND_DB
rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && cp /tmp/dbv.sqlite finddb/sm_90-132.sqlite
B=/tmp/before; mkdir -p $B; tar xzf .pin/before.tar.gz -C $B
(cd $B && gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so)
for round in 1 2; do
  for side in before after; do
    if [ $side = before ]; then dir=$B; else dir=$PWD; fi
    left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 70 ] && break 2
    (cd $dir && MIOFIND_DB=sqlite:////tmp/mf-user-$side.sqlite PYTHONPATH=$dir:/tmp/site timeout $left python3 bench/bench_graph_step.py \
      --out $R/gs_${side}_$round --models resnet50 --configs train32-amp --no-eager --iters 20 --rounds 5) \
      > $R/gs_${side}_$round.log 2>&1
    echo "$side $round rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| resnet50" $R/gs_${side}_$round/bench_graph_step.md 2>/dev/null | cut -c1-160
    save
  done
done
echo "done $(( $(date +%s) - T0 )) s"
