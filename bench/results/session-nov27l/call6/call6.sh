#!/usr/bin/env bash
# Session nov27l, call 6: the F and B finds' new alternate (the 192 x 128 three-warpgroup persistent copy-engine tile,
# chosen on ResNet-50's layers: call1/alternate_fb.txt) on layers it was not chosen on: bench/sweep_configs.py on the
# non-ResNet set (tests/shapes.py NON_RESNET, N=32 FP16 NHWC), that tile beside the Hopper solver's find configs (--others,
# which list it now); then the find-config GPU tests of the Hopper solvers (every config a find measures, verified).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C /tmp r; }
for d in F B; do
  case $d in F) S=ConvImplicitGemmHopperFwd;; B) S=ConvImplicitGemmHopperBwd;; esac
  timeout 60 python3 bench/sweep_configs.py --dir $d --set nonresnet --layers all \
    --where "WGS=3,STAGES=4,PERSIST=1,BN=128,TMA=1" --others $S --iters 30 --deadline 50 --json $R/nr_$d.json > $R/nr_$d.log 2>&1
  echo "$d rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^geomean" $R/nr_$d.log; save
done
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 60 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py -k "find_configs and not wrw" > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; save
