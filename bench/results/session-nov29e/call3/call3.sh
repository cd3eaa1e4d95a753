#!/usr/bin/env bash
# Session nov29e, call 3 (any sm_90): issue 19, ConvImplicitGemmHopperFwdTmaStore's remaining checks.
# 1. compute-sanitizer (memcheck, racecheck, synccheck) on every tiny problem it claims, at its default config and
#    at a ping-pong config with two output tiles per warpgroup;
# 2. miofind.torch's C++ path: its recipe (three tensor maps: x, w, y) launched by the extension, bit for bit the
#    Python invoker's output (tests/torch/test_fast.py, the Hopper tensor-map cases);
# 3. the stress test (every registered solver, threads and streams);
# 4. the same-run side-by-side of the forward (bench_convs --cudnn-harness): ResNet-50 BF16, the non-ResNet set FP16.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite
TS=ConvImplicitGemmHopperFwdTmaStore
PP='{"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 1, "OBUF": 2}'
OUT=$R/sanitize TOOLS="memcheck racecheck synccheck" SANITIZE_TIMEOUT=100 timeout 200 scripts/sanitize --solvers $TS --every \
  > $R/sanitize.txt 2>&1
echo "sanitize rc=$? $(el) s"; tail -4 $R/sanitize.txt
OUT=$R/sanitize_pp TOOLS="memcheck racecheck synccheck" SANITIZE_TIMEOUT=100 timeout 200 scripts/sanitize --solvers $TS --every \
  --config "$PP" > $R/sanitize_pp.txt 2>&1
echo "sanitize pp rc=$? $(el) s"; tail -4 $R/sanitize_pp.txt; save
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/torch/test_fast.py -k hopper_tensor_map > $R/torch_fast.txt 2>&1
echo "torch fast rc=$? $(el) s"; tail -2 $R/torch_fast.txt; save
for run in "BF16 resnet50" "FP16 nonresnet"; do
  set -- $run
  MIOFIND_SPECIALIZE=sync timeout 100 python3 bench/bench_convs.py --dtype $1 --layout NHWC --cudnn-harness --dirs F \
    --set $2 --out $R/samerun > $R/samerun_$1_$2.txt 2>&1
  echo "samerun $1 $2 rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_$1_$2.txt; save
done
left=$(( 560 - $(el) ))
if [ $left -gt 40 ]; then
  timeout $left python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/core/test_stress_gpu.py > $R/stress.txt 2>&1
  echo "stress rc=$? $(el) s"; tail -2 $R/stress.txt
fi
save; echo "all $(el) s"
