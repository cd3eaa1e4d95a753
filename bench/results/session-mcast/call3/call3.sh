#!/usr/bin/env bash
# Issue 19 (session-mcast, call 3): what bounds the Hopper W kernel on the layers it loses. Each layer's best plain
# copy-engine config of call 1's sweep, timed as built, with no copies (W_DIAG=1: the MMA and pipeline floor) and
# with no MMA (W_DIAG=2: the copy floor); w_diag.patch is the timing-only macro.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
D=bench/results/session-mcast/call3/w_diag.py
T='"CLUSTER":1,"WSPEC":1,"TMA":1'
run() { timeout 120 python3 $D "$@" 2>&1 | tee -a $OUT/diag.txt; }
run 2048 512 7 1 1 "{\"BM\":128,\"BN\":64,\"WGS\":1,\"STAGES\":4,\"SPLITK\":1,$T}" "{\"BM\":64,\"BN\":128,\"WGS\":1,\"STAGES\":4,\"SPLITK\":1,$T}"
run 1024 512 14 1 1 "{\"BM\":128,\"BN\":64,\"WGS\":1,\"STAGES\":4,\"SPLITK\":2,$T}" "{\"BM\":128,\"BN\":128,\"WGS\":2,\"STAGES\":4,\"SPLITK\":4,$T}"
run 512 128 28 1 1 "{\"BM\":64,\"BN\":128,\"WGS\":1,\"STAGES\":4,\"SPLITK\":16,$T}"
run 512 256 28 1 1 "{\"BM\":64,\"BN\":128,\"WGS\":1,\"STAGES\":5,\"SPLITK\":8,$T}"
run 512 512 7 3 1 "{\"BM\":64,\"BN\":128,\"WGS\":1,\"STAGES\":4,\"SPLITK\":1,$T}" "{\"BM\":128,\"BN\":256,\"WGS\":2,\"STAGES\":4,\"SPLITK\":1,$T}"
run 512 512 28 3 2 "{\"BM\":256,\"BN\":128,\"WGS\":2,\"STAGES\":4,\"SPLITK\":1,$T}"
run 256 256 14 3 1 "{\"BM\":128,\"BN\":128,\"WGS\":2,\"STAGES\":4,\"SPLITK\":3,$T}"
run 512 2048 7 1 1 "{\"BM\":64,\"BN\":128,\"WGS\":1,\"STAGES\":4,\"SPLITK\":1,$T}"
run 256 128 56 1 1 "{\"BM\":64,\"BN\":256,\"WGS\":1,\"STAGES\":4,\"SPLITK\":33,$T}"
