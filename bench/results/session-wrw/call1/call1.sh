#!/usr/bin/env bash
# Issue 19 (session-wrw, call 1): where Hopper W loses to cuDNN. Every copy-engine config of today's space
# (STAGES 4 or 6, plus the default) on the eight ResNet-50 N=32 W layers that lose most, timed beside cuDNN's plans
# (bench/sweep_configs.py); then Nsight Compute sections of the default config and cuDNN's heuristic plan on two of them.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
L=r50_512to128_28_1x1s1,r50_512to256_28_1x1s1,r50_256to256_28_3x3s2,r50_256to256_14_3x3s1,r50_1024to512_14_1x1s1,r50_512to512_14_3x3s2,r50_2048to512_7_1x1s1,r50_512to512_7_3x3s1
timeout 420 python3 bench/sweep_configs.py --dir W --layers $L --where "TMA=1,STAGES=4|6" --iters 30 --deadline 400 \
  --json $OUT/sweep_w.json > $OUT/sweep_w.log 2>&1
echo "sweep rc=$?"; grep -E "^r50|geomean|precompiled" $OUT/sweep_w.log
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats --section SchedulerStats"
for arg in "2048 512 7 1 1" "1024 512 14 1 1"; do
  f=$(echo $arg | tr ' ' _)
  timeout 60 ncu --clock-control none $S -k regex:igemm_hopper_wrw -c 2 python3 bench/hopper_wrw_profile.py $arg > $OUT/ncu_ours_$f.txt 2>&1
  timeout 60 ncu --clock-control none $S --launch-skip 4 -c 3 python3 bench/hopper_wrw_profile.py $arg --solver ConvCudnnWrw > $OUT/ncu_cudnn_$f.txt 2>&1
  echo "ncu $f rc=$?"
done
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Registers Per|Achieved Occupancy|Grid Size|Block Size|igemm|sm90|Issue Slots Busy|No Eligible" $OUT/ncu_*.txt | cut -c1-200
