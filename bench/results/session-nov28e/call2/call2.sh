#!/usr/bin/env bash
# Session nov28e, call 2 (issue 19, NCHW): (1) the family's claim grid run for the NCHW wrappers and test_nchw.py after
# 1x1 stride-1 layers went to the GEMM solvers; (2) the transposes' bandwidth; (3) ResNet-50 N=32 FP16 NCHW W, and the
# non-ResNet layers' F and B, as call 1's sweeps; (4) compute-sanitizer on the NCHW wrappers' tiny problems.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 150 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_nchw.py \
  tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py -k "Nchw or nchw" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error|^E  " $R/tests.log | cut -c1-300 | head -20; save
timeout 40 python3 bench/results/session-nov28e/call2/xpose_probe.py > $R/xpose.log 2>&1; echo "xpose rc=$? $(el) s"; cat $R/xpose.log
timeout 130 python3 bench/sweep_configs.py --dir W --layout NCHW --layers all --solver ConvImplicitGemmHopperWrwNchw \
  --where STAGES=99 --others ConvImplicitGemmHopperWrwNchw,ConvImplicitGemmWrw,GemmWrwUniversal --iters 20 \
  --deadline 120 --json $R/sweep_w.json > $R/sweep_w.log 2>&1
echo "sweep W rc=$? $(el) s"; grep -E "^geomean|precompiled|deadline" $R/sweep_w.log; save
for d in F B; do
  s=$([ $d = F ] && echo Fwd || echo Bwd); g=$([ $d = F ] && echo GemmFwdRest || echo GemmBwdRest)
  timeout 85 python3 bench/sweep_configs.py --dir $d --set nonresnet --layout NCHW --layers all \
    --solver ConvImplicitGemmHopper${s}Nchw --where STAGES=99 --others ConvImplicitGemmHopper${s}Nchw,ConvImplicitGemm${s},$g \
    --iters 20 --deadline 75 --json $R/nonresnet_$d.json > $R/nonresnet_$d.log 2>&1
  echo "nonresnet $d rc=$? $(el) s"; grep -E "^geomean|precompiled|deadline" $R/nonresnet_$d.log; save
done
left=$(( 585 - $(el) ))
[ $left -gt 30 ] && OUT=$R/san timeout $left scripts/sanitize --solvers ConvImplicitGemmHopperFwdNchw,ConvImplicitGemmHopperBwdNchw,ConvImplicitGemmHopperWrwNchw,ConvImplicitGemmHopperFwdTf32RnNchw,ConvImplicitGemmHopperBwdTf32RnNchw \
  > $R/sanitize.log 2>&1
echo "sanitize rc=$? $(el) s"; tail -n 8 $R/sanitize.log
gzip -f $R/*.log; save
