#!/usr/bin/env bash
# Session nov28e, call 3 (issue 19, NCHW): the wrappers' transposes now kernels_src/implicit_gemm_hopper_nchw.cu
# (16-byte vectors, 64 x 64 tiles). (1) test_nchw.py (the transpose kernel's own test included), the family's NCHW
# claims, the C++ path's NCHW tensor-map cases; (2) both transposes' bandwidth; (3) the sweeps of calls 1-2 again
# (ResNet-50 N=32 FP16 NCHW F/B/W, non-ResNet F/B/W); (4) a user's benchmark find of two NCHW FP16 layers, empty user DB;
# (5) compute-sanitizer on the five wrappers, every tiny problem; (6) the stress test.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 150 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_nchw.py \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py tests/torch/test_fast.py -k "Nchw or nchw or tensor_map" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error|^E  " $R/tests.log | cut -c1-300 | head -20; save
timeout 60 python3 bench/results/session-nov28e/call3/xpose_probe.py --both > $R/xpose.log 2>&1; echo "xpose rc=$? $(el) s"; cat $R/xpose.log
for d in F B W; do
  s=$(case $d in F) echo Fwd;; B) echo Bwd;; W) echo Wrw;; esac)
  o=$(case $d in F) echo ConvImplicitGemmFwd,GemmFwd1x1_0_1,GemmFwdRest;; B) echo ConvImplicitGemmBwd,GemmBwd1x1_stride1,GemmBwdRest;; W) echo ConvImplicitGemmWrw,GemmWrwUniversal;; esac)
  for set in resnet50 nonresnet; do
    timeout 60 python3 bench/sweep_configs.py --dir $d --set $set --layout NCHW --layers all --solver ConvImplicitGemmHopper${s}Nchw \
      --where STAGES=99 --others ConvImplicitGemmHopper${s}Nchw,$o --iters 20 --deadline 55 --json $R/${set}_$d.json > $R/${set}_$d.log 2>&1
    echo "$set $d rc=$? $(el) s"; grep -E "^geomean (best|ConvImplicitGemmHopper${s}Nchw alone)|precompiled|deadline" $R/${set}_$d.log
  done
  save
done
for args in "-n 32 -c 128 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1" "-n 32 -c 192 -H 17 -W 17 -k 192 -y 1 -x 7 -p 0 -q 3"; do
  for F in 1 2 4; do
    timeout 60 python3 -m miofind.cli find convfp16 $args -F $F --in_layout NCHW --out_layout NCHW --fil_layout NCHW \
      --mode benchmark >> $R/find.log 2>&1; echo "find rc=$? $(el) s"
  done
done
grep -iE "picked|best|Conv|Gemm" $R/find.log | head -24; save
OUT=$R/san timeout 120 scripts/sanitize --every --solvers ConvImplicitGemmHopperFwdNchw,ConvImplicitGemmHopperBwdNchw,ConvImplicitGemmHopperWrwNchw,ConvImplicitGemmHopperFwdTf32RnNchw,ConvImplicitGemmHopperBwdTf32RnNchw \
  > $R/sanitize.log 2>&1
echo "sanitize rc=$? $(el) s"; tail -n 5 $R/sanitize.log; save
left=$(( 585 - $(el) ))
[ $left -gt 40 ] && timeout $left python3 -m pytest -q -m gpu -p no:cacheprovider -p no:benchmark tests/core/test_stress_gpu.py > $R/stress.log 2>&1
echo "stress rc=$? $(el) s: $(tail -n 1 $R/stress.log)"
gzip -f $R/*.log; save
