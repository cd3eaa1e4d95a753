#!/usr/bin/env bash
# Issue 19 (session-mcast, call 2): why the W multicast configs ran 1.7-3x slower than the same tiles without
# multicast in call 1. mc_diag.py times each config with the diagnostic MC_DBG builds (1: no multicast copies,
# 2: no remote stage releases, 3: both); ncu's warp states and memory for one layer, plain against multicast.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
D=bench/results/session-mcast/call2/mc_diag.py
B='"CLUSTER":1,"WSPEC":1,"TMA":1,"STAGES":4'
for layer in "1024 512 14 1 1" "2048 512 7 1 1"; do
  timeout 200 python3 $D $layer "{\"BM\":64,\"BN\":128,\"WGS\":1,\"SPLITK\":1,$B,\"MC_M\":1,\"MC_N\":1}" \
    "{\"BM\":64,\"BN\":128,\"WGS\":1,\"SPLITK\":1,$B,\"MC_M\":2,\"MC_N\":1}" \
    "{\"BM\":64,\"BN\":128,\"WGS\":1,\"SPLITK\":2,$B,\"MC_M\":2,\"MC_N\":1}" \
    "{\"BM\":128,\"BN\":128,\"WGS\":2,\"SPLITK\":1,$B,\"MC_M\":1,\"MC_N\":1}" \
    "{\"BM\":128,\"BN\":128,\"WGS\":2,\"SPLITK\":1,$B,\"MC_M\":2,\"MC_N\":2}" \
    "{\"BM\":128,\"BN\":128,\"WGS\":2,\"SPLITK\":1,$B,\"MC_M\":1,\"MC_N\":2}" 2>&1 | tee -a $OUT/diag.txt
done
for mc in 1 2; do
  timeout 120 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section LaunchStats --section Occupancy -k regex:igemm_hopper_wrw --launch-skip 2 -c 1 \
    python3 bench/hopper_wrw_profile.py 1024 512 14 1 1 32 "{\"BM\":64,\"BN\":128,\"WGS\":1,\"SPLITK\":1,$B,\"MC_M\":$mc,\"MC_N\":1}" \
    > $OUT/ncu_mc$mc.txt 2>&1
  echo "ncu mc$mc rc=$?"; grep -E "Duration|Compute \(SM\) Thro|L2 Cache Thro|No Eligible|Cluster|Stall" $OUT/ncu_mc$mc.txt | head -20
done
