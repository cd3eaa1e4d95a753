#!/usr/bin/env bash
# Session epi, call 8 (issue 19): the Hopper backward-data solver's persistent copy-engine configs (STAGES 3, 4, 8)
# beside its default and cuDNN's plans, on ResNet-50's and the non-ResNet B layers (FP16, N=32): what a find of an
# untuned B layer would gain from alternatives, as calls 1-2 showed for F and W.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
L=$(python3 -c "import sys; sys.path.insert(0,'tests'); from shapes import _resnet50; print(','.join(n for n in _resnet50(32) if n != 'r50_3to64_224_7x7s2'))")
timeout 300 python3 bench/sweep_configs.py --dir B --layers $L --where "PERSIST=1,TMA=1,STAGES=3|4|8" --iters 20 \
  --deadline 280 --json $R/sweep_b_r50.json > $R/sweep_b_r50.log 2>&1
echo "r50 rc=$? $(( $(date +%s) - T0 )) s"; grep -E "geomean|precompiled|deadline" $R/sweep_b_r50.log; save
L=$(python3 -c "import sys; sys.path.insert(0,'tests'); from shapes import NON_RESNET; print(','.join(NON_RESNET))")
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 bench/sweep_configs.py --dir B --set nonresnet --layers $L --where "PERSIST=1,TMA=1,STAGES=3|4|8" \
  --iters 20 --deadline $(( left - 15 )) --json $R/sweep_b_nr.json > $R/sweep_b_nr.log 2>&1
echo "nr rc=$? $(( $(date +%s) - T0 )) s"; grep -E "geomean|precompiled|deadline" $R/sweep_b_nr.log; save
