#!/usr/bin/env bash
# Session nov27b, call 1: (a) the workspace test changed in session-nov27 and not yet run on the GPU; (b) issue 20's
# new-user trial on models no preset holds: bench/unseen_models.py lists up to 12 distinct conv layers of each of 8
# torchvision models (FP32 NCHW, TF32 off, and FP16 NHWC; N=32 first, then N=1), and `miofind tune --no-tune` finds
# every one of them (F/B/W, every solver and cuDNN plan, no early stop, specialised builds) into an empty DB with no
# system DB beneath. The DB comes back for `bench/unseen_models.py score` on the CPU.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
python3 -c "import torch, torchvision; print(torch.__version__, torchvision.__version__, torch.backends.cudnn.version())" >> $R/device.txt
save() { rm -f /tmp/dbv.sqlite && python3 -c "import sqlite3; sqlite3.connect('/tmp/unseen.sqlite').execute(\"VACUUM INTO '/tmp/dbv.sqlite'\")" && gzip -c /tmp/dbv.sqlite > $R/unseen.sqlite.gz && rm -f /tmp/dbv.sqlite; tar czf $OUT/r.tgz -C $OUT r; }
timeout 120 python3 -m pytest -q -m gpu tests/torch/test_torch_gpu.py -k workspace_kept -p no:cacheprovider > $R/workspace_test.log 2>&1
echo "workspace test rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/workspace_test.log
python3 bench/unseen_models.py problems --layers 12 --seed 1 --batch 32 --keys $R/keys32.json > $R/lines32.txt 2> $R/problems32.log
python3 bench/unseen_models.py problems --layers 12 --seed 1 --batch 1 --keys $R/keys1.json > $R/lines1.txt 2> $R/problems1.log
echo "lines: $(grep -vc '^#' $R/lines32.txt) + $(grep -vc '^#' $R/lines1.txt) $(( $(date +%s) - T0 )) s"; tail -2 $R/problems32.log
cat $R/lines32.txt $R/lines1.txt > $R/lines.txt
left=$(( 560 - ($(date +%s) - T0) ))
MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout -s INT -k 20 $left python3 -m miofind.cli tune --file $R/lines.txt \
  --no-tune --db sqlite:////tmp/unseen.sqlite --json-out $R/unseen_tune.json > $R/unseen_tune.log 2>&1
echo "tune rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/unseen_tune.log | cut -c1-300; gzip -f $R/unseen_tune.log; save
