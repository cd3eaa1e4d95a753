#!/usr/bin/env bash
# Session nov29a, call 5 (any sm_90): the stress test with both new TF32 W solvers in its pool (call 4's -k filter
# deselected it), then ResNet-50 in FP32 with TF32 convolutions in channels_last through miofind.torch with no system DB
# and an empty user DB (every problem found on this GPU, the new solvers among the candidates) against cuDNN benchmark
# mode in the same process; the user DB is kept to count which solvers the W problems' finds picked.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
timeout 150 python3 -m pytest -q -m gpu tests/core/test_stress_gpu.py > $R/tests_stress.log 2>&1
echo "stress rc=$? $(el) s"; tail -2 $R/tests_stress.log; save
rm -f /tmp/u.sqlite
MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u.sqlite timeout 330 python3 bench/bench_models.py --models resnet50 \
  --configs train32-tf32cl --rounds 2 --iters 20 --skip-first --out $R/models > $R/models.log 2>&1
echo "models rc=$? $(el) s"; grep -E "^\| resnet50" $R/models/bench_models.md 2>/dev/null | cut -c1-240
cp /tmp/u.sqlite $R/user_db.sqlite 2>/dev/null; gzip -f $R/user_db.sqlite $R/*.log; save
