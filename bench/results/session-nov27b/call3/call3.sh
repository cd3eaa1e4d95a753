#!/usr/bin/env bash
# Session nov27b, call 3: grouped convolutions for the shipped DB. It has none that are not depthwise, so the cost
# model is not trained on them and immediate mode answers them with the nearest-problem predictor (call 2's test:
# 44% mean slowdown, 5.76x worst on ResNeXt-50's grouped layers). Every distinct conv layer of torchvision's
# ResNeXt-101 32x8d and 64x4d, N=32 then N=1, FP16 NHWC, FP32 NCHW with TF32 math, FP32 NCHW, BF16 NHWC, FP16 NCHW,
# FP32 NHWC (in that order), without call 2's test problems, found into a copy of the shipped DB (`tune --no-tune`:
# every solver and cuDNN plan, default configs, specialised builds, no system DB beneath).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/db.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/db.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C $OUT r; }
python3 bench/unseen_models.py problems --models resnext101_32x8d,resnext101_64x4d --layers 0 --batch 32 --batch 1 \
  --kinds FP16:NHWC,TF32:NCHW,FP32:NCHW,BF16:NHWC,FP16:NCHW,FP32:NHWC \
  --exclude-db bench/results/session-nov27b/call2/r/unseen.sqlite.gz --keys $R/keys.json > $R/lines.txt 2> $R/problems.log
echo "lines: $(grep -vc '^#' $R/lines.txt) $(( $(date +%s) - T0 )) s"; tail -2 $R/problems.log
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
left=$(( 570 - ($(date +%s) - T0) ))
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout -s INT -k 20 $left python3 -m miofind.cli tune --file $R/lines.txt \
  --no-tune --db sqlite:////tmp/db.sqlite --json-out $R/tune.json > $R/tune.log 2>&1
echo "tune rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/tune.log | cut -c1-300; gzip -f $R/tune.log; save
