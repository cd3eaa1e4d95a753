#!/usr/bin/env bash
# Session sk, call 8: Inception-v3's N=32 FP16 forward and backward-data problems tuned for the Hopper solvers on a copy
# of the shipped DB (their records held each solver's default and alternates only: own best / cuDNN F 1.008, B 0.973);
# then Inception-v3's AMP training step captured in one CUDA graph (bench_graph_step.py, cuDNN benchmark mode in the same
# process) on this tree with the shipped DB as committed ("before") and with the tuned copy in its place ("after").
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; tar czf $OUT/r.tgz -C $OUT r; }
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
cp finddb/sm_90-132.sqlite /tmp/db.sqlite; cp finddb/sm_90-132.sqlite /tmp/db_before.sqlite
for d in F B; do
  s=ConvImplicitGemmHopperFwd; [ $d = B ] && s=ConvImplicitGemmHopperBwd
  MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/mf-user.sqlite timeout 130 python3 -m miofind.cli tune \
    --model inception_v3 --batch 32 --dtype fp16 --layout NHWC --direction $d --tune-solver $s --max-configs 24 --patience 12 \
    --db sqlite:////tmp/db.sqlite --json-out $R/tune_$d.json > $R/tune_$d.log 2>&1
  echo "tune $d rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tune_$d.log | cut -c1-200)"; save
done
for side in before after; do
  if [ $side = after ]; then cp /tmp/db.sqlite finddb/sm_90-132.sqlite; fi
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  MIOFIND_DB=sqlite:////tmp/mf-user-$side.sqlite timeout $left python3 bench/bench_graph_step.py --out $R/gs_$side \
    --models inception_v3 --configs train32-amp --no-eager --iters 20 --rounds 3 > $R/gs_$side.log 2>&1
  echo "$side rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| inception_v3" $R/gs_$side/bench_graph_step.md 2>/dev/null | cut -c1-160; save
done
cp /tmp/db_before.sqlite finddb/sm_90-132.sqlite
