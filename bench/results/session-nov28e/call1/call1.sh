#!/usr/bin/env bash
# Session nov28e, call 1 (issue 19, NCHW): (1) the NCHW wrappers' GPU tests (float64 reference at find configs, bit for
# bit the NHWC solver's output) and the C++ path's tensor-map cases (NCHW ones included); (2) ResNet-50 N=32 FP16 NCHW
# F and B: the NCHW Hopper solver (default, then its find configs as "others"), the Ampere implicit GEMM and the GEMM
# solvers at their find configs, cuDNN's NCHW plans, one harness per layer.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 170 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_nchw.py \
  "tests/torch/test_fast.py::test_hopper_tensor_map_kernels_launch_from_cpp" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error|^E  " $R/tests.log | cut -c1-300 | head -20; save
timeout 190 python3 bench/sweep_configs.py --dir F --layout NCHW --layers all --solver ConvImplicitGemmHopperFwdNchw \
  --where STAGES=99 --others ConvImplicitGemmHopperFwdNchw,ConvImplicitGemmFwd,GemmFwd1x1_0_1,GemmFwdRest --iters 20 \
  --deadline 180 --json $R/sweep_f.json > $R/sweep_f.log 2>&1
echo "sweep F rc=$? $(el) s"; grep -E "^geomean|precompiled|deadline" $R/sweep_f.log; save
left=$(( 585 - $(el) ))
timeout $left python3 bench/sweep_configs.py --dir B --layout NCHW --layers all --solver ConvImplicitGemmHopperBwdNchw \
  --where STAGES=99 --others ConvImplicitGemmHopperBwdNchw,ConvImplicitGemmBwd,GemmBwd1x1_stride1,GemmBwdRest --iters 20 \
  --deadline $(( left - 10 )) --json $R/sweep_b.json > $R/sweep_b.log 2>&1
echo "sweep B rc=$? $(el) s"; grep -E "^geomean|precompiled|deadline" $R/sweep_b.log
gzip -f $R/*.log; save
