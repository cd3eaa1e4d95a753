#!/usr/bin/env bash
# Session epi, call 2 (issue 19, non-ResNet W at 1.13 of cuDNN): every copy-engine config of the Hopper W space
# (STAGES 4 or 6) on the non-ResNet layers, beside the default config and cuDNN's plans, as session-wrw call 3 did
# for ResNet-50; then the cp.async producer configs on the two layers the copy engine cannot serve (C % 64 != 0).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
L=inc_128to128_17_1x7,inc_128to192_17_7x1,inc_192to192_17_1x7,inc_64to96_35_3x3,inc_192to320_17_3x3s2,inc_448to384_8_3x3,vgg_64to128_112_3x3,vgg_256to256_56_3x3,vgg_512to512_28_3x3,vgg_512to512_14_3x3,dense_256to128_28_1x1,dense_512to128_14_1x1,dense_128to32_28_3x3,dense_128to32_7_3x3
timeout 420 python3 bench/sweep_configs.py --dir W --set nonresnet --layers $L --where "TMA=1,STAGES=4|6" --iters 20 \
  --deadline 400 --json $R/sweep_w_nr.json > $R/sweep_w_nr.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^[a-z]|geomean|precompiled|deadline" $R/sweep_w_nr.log; save
left=$(( 575 - ($(date +%s) - T0) ))
timeout $left python3 bench/sweep_configs.py --dir W --set nonresnet --layers inc_48to64_35_5x5,inc_288to384_35_3x3s2 \
  --where "WSPEC=1,TMA=0,STAGES=4|6" --iters 20 --deadline $(( left - 20 )) --json $R/sweep_w_nr_cp.json > $R/sweep_w_nr_cp.log 2>&1
echo "sweep cp rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^[a-z]|geomean|precompiled|deadline" $R/sweep_w_nr_cp.log; save
