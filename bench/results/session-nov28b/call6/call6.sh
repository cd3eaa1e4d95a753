#!/usr/bin/env bash
# Session nov28b, call 6 (H100): ResNet-50 end to end in FP32 with TF32 convolutions in channels_last (NHWC TF32
# problems: the Hopper TF32 forward and backward data where the shipped DB's records pick them), miofind.torch with the
# shipped DB against cuDNN benchmark mode in the same process: batch-32 training step and inference, three alternating
# rounds, first iteration in fresh processes, a second process's finds, 20 training steps' loss and gradients.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache   # the user DB named below: this image has no platformdirs for the default path
save() { tar czf $OUT/r.tgz -C /tmp r; }
MIOFIND_DB=sqlite:////tmp/user.sqlite timeout 330 python3 bench/bench_models.py --models resnet50 --configs train32-tf32cl,infer32-tf32cl --rounds 3 --iters 20 \
  --out $R/models > $R/models.log 2>&1
echo "models rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^\| resnet50" $R/models/bench_models.md 2>/dev/null | cut -c1-260
save
