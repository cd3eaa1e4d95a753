#!/usr/bin/env bash
# Session nov27d, call 2 (call 1's MobileNetV3 run died in its first-step part: bench_models' --env-ab shadowed the
# model's name, mended): MobileNetV3-Large AMP training with the native cuDNN charge of 8 us (default) against 30 us
# (the choice before), the same alternating rounds, then its first steps (fresh processes, cProfile); then
# MobileNetV2 AMP the same way without first steps.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 380 python3 bench/bench_models.py --models mobilenet_v3_large --configs train32-amp --iters 15 --rounds 6 \
  --steps 0 --env-ab MIOFIND_TORCH_CUDNN_HOST_US=30 --profile-first $R/first --out $R/models 2>&1 \
  | grep -v "leaked\|nanobind\|skipped remainder\|refleaks" > $R/models.log
echo "bench_models rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| mobilenet" $R/models/bench_models.md; pack
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_models.py --models mobilenet_v2 --configs train32-amp --iters 15 --rounds 4 \
  --steps 0 --skip-first --env-ab MIOFIND_TORCH_CUDNN_HOST_US=30 --out $R/models_v2 2>&1 \
  | grep -v "leaked\|nanobind\|skipped remainder\|refleaks" > $R/models_v2.log
echo "bench_models v2 rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| mobilenet" $R/models_v2/bench_models.md; pack
