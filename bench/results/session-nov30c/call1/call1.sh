#!/usr/bin/env bash
# Session nov30c, call 1 (any sm_90): every resident-B config (PERSIST = 2, copy engine, not ping-pong, 3-8 stages) of
# the Hopper forward and backward data on the layers where one applies, beside the solver's find configs (--others)
# and cuDNN's plans, each timed in three interleaved passes (--reps 3, the median kept): the data for
# choosing RESIDENT_TILES with each layer held out (PLAN_next item 2 of session nov30b). FP16 NHWC, N = 32.
# Its first run (first_run_discarded/) timed one invoker per side: the timing closures of kernel_timing.timed_configs
# bound their invoker late, which --reps exposed (the passes run after the loop); mended before this run.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite CUPY_CACHE_DIR=/tmp/cupy1 MIOFIND_SYSTEM_DB=none
WH="PERSIST=2,PINGPONG=0,WSPEC=1"
F_resnet50=r50_64to64_56_1x1s1,r50_64to64_56_3x3s1,r50_64to256_56_1x1s1,r50_256to64_56_1x1s1,r50_256to128_56_1x1s1,r50_512to128_28_1x1s1
F_nonresnet=inc_48to64_35_5x5,inc_64to96_35_3x3,vgg_64to128_112_3x3,dense_256to128_28_1x1,dense_512to128_14_1x1,dense_128to32_28_3x3,dense_128to32_7_3x3
F_padded=inc_32to32_149_3x3,inc_32to64_147_3x3,inc_48to64_35_5x5,inc_288to64_35_1x1,inc_288to48_35_1x1,mb2_32to16_112_1x1,mb2_16to96_112_1x1,mb2_96to24_56_1x1,mb2_24to144_56_1x1,mb2_144to24_56_1x1,mb2_144to32_28_1x1,mb2_32to192_28_1x1,dense_96to128_56_1x1,dense_224to128_56_1x1,dense_160to128_28_1x1,dense_352to128_28_1x1,dense_480to128_28_1x1,dense_544to128_14_1x1
B_resnet50=r50_64to64_56_1x1s1,r50_64to64_56_3x3s1,r50_64to256_56_1x1s1,r50_256to64_56_1x1s1,r50_256to128_56_1x1s1,r50_128to128_56_3x3s2,r50_128to512_28_1x1s1
B_nonresnet=inc_64to96_35_3x3,vgg_64to128_112_3x3,dense_256to128_28_1x1,dense_128to32_28_3x3,dense_128to32_7_3x3
B_padded=inc_32to32_149_3x3,inc_32to64_147_3x3,inc_96to96_35_3x3s2,mb2_32to16_112_1x1,mb2_16to96_112_1x1,mb2_96to24_56_1x1,mb2_24to144_56_1x1,mb2_144to24_56_1x1,mb2_144to32_28_1x1,mb2_32to192_28_1x1,mb2_96to576_14_1x1,dense_96to128_56_1x1,dense_224to128_56_1x1,dense_160to128_28_1x1
sweep() {   # direction, set, its layers, the second of the call by which it stops
  local d=$1 s=$2 layers=$3 until=$4 solver=ConvImplicitGemmHopperFwd
  [ "$d" = B ] && solver=ConvImplicitGemmHopperBwd
  local left=$(( until - $(el) ))
  [ $left -lt 30 ] && { echo "skip $d $s"; return; }
  timeout $left python3 bench/sweep_configs.py --dir $d --set $s --where "$WH" --iters 30 --reps 3 \
    --deadline $(( left - 15 )) --layers $layers --others $solver --json $R/sweep_${d}_$s.json > $R/sweep_${d}_$s.txt 2>&1
  echo "sweep $d $s rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_${d}_$s.txt; save
}
sweep F resnet50 $F_resnet50 130
sweep B resnet50 $B_resnet50 250
sweep F nonresnet $F_nonresnet 330
sweep B nonresnet $B_nonresnet 410
sweep F padded $F_padded 520
sweep B padded $B_padded 585
gzip -f $R/*.json; save; echo "all $(el) s"
