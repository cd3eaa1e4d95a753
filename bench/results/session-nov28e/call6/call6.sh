#!/usr/bin/env bash
# Session nov28e, call 6: FP32 with TF32 convolutions in NCHW, PyTorch's default FP32 (cudnn.allow_tf32): (1) the
# rounding TF32 NCHW wrappers' sweeps on ResNet-50 N=32 F and B, as call 3's (cuDNN's NCHW TF32 plans, the NHWC solvers'
# find configs through the wrapper, the Ampere implicit GEMM's TF32 and the GEMM solvers); (2) call 4's A/B for
# bench_models' train32-tf32: a DB of ResNet-50's FP32/TF32 problems measured on this GPU, with and without the NCHW
# wrappers' records, in both orders.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
for d in F B; do
  s=$([ $d = F ] && echo Fwd || echo Bwd)
  o=$([ $d = F ] && echo ConvImplicitGemmFwd,GemmFwd1x1_0_1,GemmFwdRest || echo ConvImplicitGemmBwd,GemmBwd1x1_stride1,GemmBwdRest)
  timeout 90 python3 bench/sweep_configs.py --dir $d --dtype FP32 --math tf32 --layout NCHW --layers all \
    --solver ConvImplicitGemmHopper${s}Tf32RnNchw --where STAGES=99 --others ConvImplicitGemmHopper${s}Tf32RnNchw,$o \
    --iters 20 --deadline 80 --json $R/tf32_$d.json > $R/tf32_$d.log 2>&1
  echo "tf32 $d rc=$? $(el) s"; grep -E "^geomean (best|ConvImplicitGemmHopper${s}Tf32RnNchw alone)|precompiled|deadline" $R/tf32_$d.log; save
done
unset MIOFIND_DB
timeout 240 python3 bench/results/session-nov28e/call4/build_db.py sqlite:////tmp/with.sqlite $R/build_db.json tf32 > $R/build_db.log 2>&1
echo "build rc=$? $(el) s"; grep -E "problems;|Error" $R/build_db.log | head -3
cp /tmp/with.sqlite /tmp/without.sqlite
python3 -c "
import sqlite3; c = sqlite3.connect('/tmp/without.sqlite')
print('without:', c.execute(\"delete from find_records where solver_id like 'ConvImplicitGemmHopper%Nchw'\").rowcount, 'deleted'); c.commit()"
i=0
for db in with without without with; do
  i=$((i + 1))
  left=$(( (585 - $(el)) / (5 - i) ))
  MIOFIND_SYSTEM_DB=/tmp/$db.sqlite MIOFIND_DB=sqlite:////tmp/u-$db-$i.sqlite timeout $left \
    python3 bench/bench_models.py --models resnet50 --configs train32-tf32 --skip-first --steps 0 \
    --rounds 5 --iters 30 --out $R/models-$i-$db > $R/models-$i-$db.log 2>&1
  echo "models $i $db rc=$? $(el) s"; grep -o '"cudnn_ms": [0-9.]*\|"miofind_ms": [0-9.]*\|"finds_run": [0-9]*\|"db_hits": [0-9]*' $R/models-$i-$db/bench_models.json | paste -sd' '; save
done
gzip -f $R/*.log; save
