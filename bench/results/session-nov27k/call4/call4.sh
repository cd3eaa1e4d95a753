#!/usr/bin/env bash
# Session nov27k, call 4: Inception-v3's AMP training step at batch 32 captured in one CUDA graph (bench_graph_step.py,
# cuDNN benchmark mode in the same process) with the session's starting shipped DB ("before", 92128b8's file, carried
# as start.sqlite.gz, not committed; MIOFIND_SYSTEM_DB) and the final one ("after"), alternating processes: what the
# other presets' GEMM configs and re-measured records do to a user's step.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
gunzip -c bench/results/session-nov27k/call4/start.sqlite.gz > /tmp/start.sqlite
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
save() { tar czf $OUT/r.tgz -C /tmp r; }
for side in before after before after; do
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 100 ] && break
  if [ $side = before ]; then db=/tmp/start.sqlite; else db=$PWD/finddb/sm_90-132.sqlite; fi
  n=$(ls -d $R/gs_${side}* 2>/dev/null | wc -l)
  MIOFIND_SYSTEM_DB=$db MIOFIND_DB=sqlite:////tmp/mf-user-$side$n.sqlite timeout $left python3 bench/bench_graph_step.py \
    --out $R/gs_$side$n --models inception_v3 --configs train32-amp --no-eager --iters 20 --rounds 3 2>&1 \
    | grep -v "leaked\|nanobind\|refleaks" > $R/gs_$side$n.log
  echo "$side$n rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| inception_v3" $R/gs_$side$n/bench_graph_step.md 2>/dev/null | cut -c1-160; save
done
