#!/usr/bin/env bash
# Session nov27l, call 1: three consumer warpgroups (WGS = 3, 192-row tiles) in the Hopper F/B/W spaces. Their GPU tests
# against the float64 reference, then bench/sweep_configs.py on ResNet-50's N=32 FP16 layers for W, F and B: the
# WGS = 3 configs (4 stages; W clusters of 1-4) beside the Hopper solver's find configs and its shipped record's config
# (--others, --db) and cuDNN's plans, isolated kernel time and back-to-back graph time (issue 19).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C /tmp r; }
timeout 150 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py -k "three" > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error" $R/tests.log | cut -c1-300 | head; save
for d in W F B; do
  case $d in W) S=ConvImplicitGemmHopperWrw; WH="WGS=3,STAGES=4,CLUSTER=1|2|3|4"; DL=150;;
             F) S=ConvImplicitGemmHopperFwd; WH="WGS=3,STAGES=4"; DL=120;;
             B) S=ConvImplicitGemmHopperBwd; WH="WGS=3,STAGES=4"; DL=120;; esac
  timeout $(( DL + 20 )) python3 bench/sweep_configs.py --dir $d --layers all --where "$WH" --others $S \
    --db finddb/sm_90-132.sqlite --iters 30 --deadline $DL --json $R/sweep_$d.json > $R/sweep_$d.log 2>&1
  echo "sweep $d rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^geomean" $R/sweep_$d.log; save
done
