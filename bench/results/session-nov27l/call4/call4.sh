#!/usr/bin/env bash
# Session nov27l, call 4: what the new shipped DB (three-warpgroup tiles; calls 2-3) does to a model's step. ResNet-50's
# AMP channels_last training step at batch 32, captured in one CUDA graph (bench/bench_graph_step.py), with the shipped
# DB at the session's start (start.sqlite.gz, 7f976a9's) and the new one, alternating processes, beside cuDNN's benchmark
# mode in the same processes; then the tuner's GPU tests (miofind tune, --where among them) on the new DB.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
gunzip -c bench/results/session-nov27l/call4/start.sqlite.gz > /tmp/start.sqlite
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
save() { tar czf $OUT/r.tgz -C /tmp r; }
for side in before after before after; do
  left=$(( 470 - ($(date +%s) - T0) )); [ $left -lt 90 ] && break
  if [ $side = before ]; then db=/tmp/start.sqlite; else db=$PWD/finddb/sm_90-132.sqlite; fi
  n=$(ls -d $R/gs_${side}* 2>/dev/null | wc -l)
  MIOFIND_SYSTEM_DB=$db MIOFIND_DB=sqlite:////tmp/mf-user-$side$n.sqlite timeout $left python3 bench/bench_graph_step.py \
    --out $R/gs_$side$n --models resnet50 --configs train32-amp --no-eager --iters 20 --rounds 3 2>&1 \
    | grep -v "leaked\|nanobind\|refleaks" > $R/gs_$side$n.log
  echo "$side$n rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| resnet50" $R/gs_$side$n/bench_graph_step.md 2>/dev/null | cut -c1-160; save
done
left=$(( 540 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout $left python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider \
  -p no:benchmark tests/tuning > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | cut -c1-300 | head
save
