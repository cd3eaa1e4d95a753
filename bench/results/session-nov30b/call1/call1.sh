#!/usr/bin/env bash
# Session nov30b, call 1 (any sm_90): the forward's resident B on the copy engine (PERSIST = 2). Its GPU tests
# (test_resident_b.py), compute-sanitizer racecheck and memcheck of two PERSIST = 2 configs on walking tiny problems, then
# sweeps of PERSIST = 1 and 2 configs (copy engine, not ping-pong, 4 or 8 stages) beside cuDNN's plans on the layers
# where PERSIST = 2 applies: seven PADDED_C, three NON_RESNET and six ResNet-50 layers, FP16 NHWC, N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite CUPY_CACHE_DIR=/tmp/cupy1
timeout 130 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_resident_b.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
save
OUT_SAVE=$OUT
OUT=$R/sanitize1 SANITIZE_TIMEOUT=45 timeout 60 scripts/sanitize --solvers ConvImplicitGemmHopperFwd --every \
  --problems nhwc_c48_walk \
  --config '{"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8, "PERSIST": 2, "SPLITK": 1, "WSPEC": 1, "TMA": 2, "PINGPONG": 0}' \
  > $R/sanitize1.txt 2>&1; echo "sanitize1 rc=$? $(el) s"; tail -3 $R/sanitize1.txt
OUT=$R/sanitize2 SANITIZE_TIMEOUT=45 timeout 60 scripts/sanitize --solvers ConvImplicitGemmHopperFwd --every \
  --problems nhwc_tma_walk \
  --config '{"BM": 64, "BN": 128, "WGS": 1, "STAGES": 4, "PERSIST": 2, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 0}' \
  > $R/sanitize2.txt 2>&1; echo "sanitize2 rc=$? $(el) s"; tail -3 $R/sanitize2.txt
OUT=$OUT_SAVE; save
WH="PERSIST=1|2,TMA=1|2,PINGPONG=0,STAGES=4|8,WSPEC=1"
left=$(( 330 - $(el) ))
timeout $left python3 bench/sweep_configs.py --dir F --set padded --where "$WH" --iters 20 --deadline $(( left - 10 )) \
  --layers inc_32to32_149_3x3,inc_32to64_147_3x3,inc_288to64_35_1x1,mb2_144to32_28_1x1,mb2_96to24_56_1x1,dense_160to128_28_1x1,dense_96to128_56_1x1 \
  --json $R/sweep_padded.json > $R/sweep_padded.txt 2>&1
echo "sweep padded rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_padded.txt; save
left=$(( 450 - $(el) ))
timeout $left python3 bench/sweep_configs.py --dir F --set resnet50 --where "$WH" --iters 20 --deadline $(( left - 10 )) \
  --layers r50_64to64_56_1x1s1,r50_64to64_56_3x3s1,r50_64to256_56_1x1s1,r50_256to64_56_1x1s1,r50_256to128_56_1x1s1,r50_512to128_28_1x1s1 \
  --json $R/sweep_r50.json > $R/sweep_r50.txt 2>&1
echo "sweep r50 rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_r50.txt; save
left=$(( 560 - $(el) ))
timeout $left python3 bench/sweep_configs.py --dir F --set nonresnet --where "$WH" --iters 20 --deadline $(( left - 10 )) \
  --layers vgg_64to128_112_3x3,dense_128to32_28_3x3,inc_64to96_35_3x3 \
  --json $R/sweep_nonresnet.json > $R/sweep_nonresnet.txt 2>&1
echo "sweep nonresnet rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_nonresnet.txt
gzip -f $R/*.log; save; echo "all $(el) s"
