#!/usr/bin/env bash
# Session nov27c, call 1 (issue 17): (a) the GPU tests of `tune --torch-model`'s prefill (new: an eager training step
# of a MobileNetV3-like block after the prefill finds nothing, FP32 and AMP) and of the shared ResNet-50/ResNeXt-101
# helper (refactored last session, not yet run on a GPU); (b) MobileNetV3-Large AMP: its problems prefilled with
# `tune --torch-model` over the shipped DB, then a fresh process's first step on that DB (finds_run must be 0) and a
# second one under cProfile (last session's second process took 8.6 s with 0 finds); (c) the AMP steady step on the
# prefilled DB against cuDNN with --profile (GPU busy and host queue time, top kernels, chosen solvers) and --host-ab.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
# (a)
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/torch/test_torch_gpu.py \
  -k "prefills or resnext101 or (resnet50_matches and amp)" > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $R/tests.log; pack
# (b)
MIOFIND_SPECIALIZE=sync timeout 120 python3 -m miofind.cli tune --torch-model torchvision.models.mobilenet_v3_large \
  --batch 32 --dtype fp16 --channels-last --no-tune --db sqlite:////tmp/mv3.sqlite --json-out $R/tune.json > $R/tune.log 2>&1
echo "tune rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $R/tune.log | cut -c1-200
for i in 1 2; do
  [ $i = 2 ] && export MIOFIND_BENCH_CPROFILE=$R/second_cprofile.txt
  MIOFIND_DB=sqlite:////tmp/mv3.sqlite timeout 90 python3 bench/bench_models.py --first mobilenet_v3_large train32-amp \
    miofind > $R/first$i.json 2> $R/first$i.err
  echo "first$i rc=$? $(python3 -c "import json;d=json.load(open('$R/first$i.json'));print(d['first_s'],d['stats'])")"
done
unset MIOFIND_BENCH_CPROFILE
pack
# (c)
left=$(( 575 - ($(date +%s) - T0) ))
MIOFIND_DB=sqlite:////tmp/mv3.sqlite timeout $left python3 bench/bench_models.py --models mobilenet_v3_large \
  --configs train32-amp --iters 20 --rounds 3 --steps 0 --skip-first --profile --host-ab --out $R/models > $R/models.log 2>&1
echo "bench_models rc=$? $(( $(date +%s) - T0 )) s"; grep mobilenet $R/models/bench_models.md
pack
