#!/usr/bin/env bash
# Session dec02d, call 1 (issue 17): the first training step in a fresh process against a steady step of the same
# process, for miofind (shipped DB, warm kernel cache), PyTorch's heuristic cuDNN (no benchmarking), cuDNN's benchmark
# mode and a model whose convolutions compute nothing (`null`: PyTorch's own first step around the convolutions);
# then the eager host floor of MobileNetV2 FP32 training (bench/step_host_floor.py).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc CUPY_CACHE_DIR=/tmp/cupy-cache
# fill: one miofind process per config, settled (its specialised builds and the C++ extension built), so that the
# measured processes start with a warm kernel cache
timeout 200 python3 bench/first_step.py --out $R/fill-r50 --model resnet50 --configs train32-fp32,train32-amp \
  --backends miofind --rounds 1 --steady 3 > $R/fill-r50.log 2>&1
echo "fill-r50 rc=$? $(el) s"; grep "^round" $R/fill-r50.log; save
timeout $(( 430 - $(el) )) python3 bench/first_step.py --out $R/r50 --model resnet50 \
  --configs train32-fp32,train32-amp --backends null,heuristic,miofind,cudnn --rounds 2 --steady 20 > $R/r50.log 2>&1
echo "r50 rc=$? $(el) s"; grep "^round" $R/r50.log; sed -n '/^| model/,/^$/p' $R/r50/first_step.md; save
if [ $(el) -lt 420 ]; then
  timeout $(( 520 - $(el) )) python3 bench/first_step.py --out $R/fill-mnv2 --model mobilenet_v2 \
    --configs train32-fp32,train32-amp --backends miofind --rounds 1 --steady 3 > $R/fill-mnv2.log 2>&1
  echo "fill-mnv2 rc=$? $(el) s"; grep "^round" $R/fill-mnv2.log
  timeout $(( 560 - $(el) )) python3 bench/first_step.py --out $R/mnv2 --model mobilenet_v2 \
    --configs train32-fp32,train32-amp --backends null,miofind --rounds 1 --steady 20 > $R/mnv2.log 2>&1
  echo "mnv2 rc=$? $(el) s"; grep "^round" $R/mnv2.log; sed -n '/^| model/,/^$/p' $R/mnv2/first_step.md 2>/dev/null
fi
gzip -f $R/*.log; save
echo "all $(el) s"
