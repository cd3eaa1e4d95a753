#!/usr/bin/env bash
# Session nov27, call 6 (issue 19, W): the Hopper W kernel's BN = 256 slice of the config space (copy engine, warp
# specialisation, 4-6 stages: every BM, WGS, SPLITK, CLUSTER, ST16 the space holds) on ResNet-50's 1x1 W layers with C >=
# 256, beside the DB's tuned config, its find configs and cuBLAS's GEMM, isolated, against cuDNN's plans. The tuner tried
# 64 of each layer's 2000-2550 configs; these layers' x rows are 512-2048 bytes, which a BN = 64 or 128 tile reads in
# 128- or 256-byte pieces from several blocks.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
L=r50_256to64_56_1x1s1,r50_256to128_56_1x1s1,r50_512to128_28_1x1s1,r50_512to256_28_1x1s1,r50_1024to256_14_1x1s1,r50_1024to512_14_1x1s1
timeout 540 python3 bench/sweep_configs.py --dir W --layers $L --where "BN=256,TMA=1,WSPEC=1,STAGES=4|5|6" \
  --others ConvImplicitGemmHopperWrw,GemmWrw1x1_stride1 --db finddb/sm_90-132.sqlite --iters 30 --deadline 520 \
  --json $R/sweep_w.json > $R/sweep_w.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s"; grep -E "cuDNN isolated|^geomean" $R/sweep_w.log | head -20
tar czf $OUT/r.tgz -C $OUT r
