#!/usr/bin/env bash
# Session nov27d, call 1: (a) miofind.torch's GPU tests after the host-aware choice charges a natively replayed cuDNN
# plan MIOFIND_TORCH_CUDNN_HOST_US (8 us) rather than 30 us; (b) host us per call of a native cuDNN replay against
# the DB's fastest own solution replayed the same way (bench_cudnn_execute --own: what the 8 us stands for);
# (c) the AMP training steps with the new charge against 30 us (the choice before), the same rounds; (d) MobileNetV3's
# first steps with the depthwise ranking computed once per candidate.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 tests/torch -m gpu > $R/tests_torch.log 2>&1
echo "torch tests rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^FAILED|passed|failed" $R/tests_torch.log | tail -8; pack
timeout 90 python3 bench/bench_cudnn_execute.py --own --calls 2000 --out $R/exec > $R/exec.log 2>&1
echo "exec rc=$? $(( $(date +%s) - T0 )) s"; cat $R/exec.log | grep -v Warn | tail -8; pack
left=$(( 560 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_models.py --models mobilenet_v3_large --configs train32-amp --iters 15 --rounds 4 \
  --steps 0 --env-ab MIOFIND_TORCH_CUDNN_HOST_US=30 --profile-first $R/first --out $R/models > $R/models.log 2>&1
echo "bench_models rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| mobilenet" $R/models/bench_models.md; pack
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_models.py --models resnet50 --configs train32-amp --iters 15 --rounds 4 \
  --steps 0 --skip-first --env-ab MIOFIND_TORCH_CUDNN_HOST_US=30 --out $R/models_r50 > $R/models_r50.log 2>&1
echo "bench_models r50 rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| resnet" $R/models_r50/bench_models.md; pack
