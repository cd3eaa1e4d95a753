#!/usr/bin/env bash
# Session pp, call 4, at the final code and shipped DB (call 3's): (1) sweep_configs.py on ResNet-50 and the non-ResNet
# set, N=32 FP16 F and B: the Hopper solver at its find configs (the ping-pong alternate among them) and its shipped
# record's config, beside cuDNN's plans on the same buffers, isolated and back to back in a graph; (2) the Hopper
# F/B GPU tests outside the copy-engine file (cp.async, split, persistent, dependent launches); (3) the GPU tests of
# core, torch and tuning (the shipped DB changed) with the time left, the stress test among them.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
for set in resnet50 nonresnet; do
  for d in F B; do
    timeout 60 python3 bench/sweep_configs.py --dir $d --set $set --layers all --where "PINGPONG=1,BM=128,BN=128,STAGES=4" \
      --others ConvImplicitGemmHopper$([ $d = F ] && echo Fwd || echo Bwd) --db finddb/sm_90-132.sqlite --iters 30 \
      --deadline 50 --json $R/sweep_${set}_$d.json > $R/sweep_${set}_$d.log 2>&1
    echo "sweep $set $d rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^geomean .*alone" $R/sweep_${set}_$d.log
  done
done
save
timeout 200 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  tests/implicit_gemm_hopper/test_pdl.py -k "not wrw and not Wrw" > $R/tests_hopper.log 2>&1
echo "hopper tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests_hopper.log)"; grep -E "^(FAILED|ERROR)" $R/tests_hopper.log | cut -c1-300 | head; save
left=$(( 530 - ($(date +%s) - T0) ))
MIOFIND_STRESS_REPORT=$R/stress.json timeout $left python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark -rfE \
  tests/torch tests/core tests/tuning > $R/tests_suite.log 2>&1
echo "suite rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests_suite.log)"; grep -E "^(FAILED|ERROR)" $R/tests_suite.log | cut -c1-300 | head; save
