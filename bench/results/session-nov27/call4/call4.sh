#!/usr/bin/env bash
# Session nov27, call 4 (issue 17): where MobileNetV2's FP32 training step at batch 32 spends its GPU time, kernel by
# kernel, miofind.torch against cuDNN benchmark mode (bench/step_timeline.py, now with a kernel table), and the
# step's speed ratio at this commit (bench_models.py, alternating rounds).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1; tail -1 $R/build.log
timeout 200 python3 bench/step_timeline.py --out $R/timeline --model mobilenet_v2 --config train32-fp32 > $R/tl.log 2>&1
echo "timeline rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^| side/,$p' $R/timeline/timeline_mobilenet_v2_train32-fp32.md | cut -c1-200; save
left=$(( 560 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_models.py --out $R/models --models mobilenet_v2 --configs train32-fp32 --skip-first --steps 0 \
  --iters 10 --rounds 5 > $R/models.log 2>&1
echo "models rc=$? $(( $(date +%s) - T0 )) s"; grep "^| mobilenet" $R/models/bench_models.md | head -3 | cut -c1-300; save
