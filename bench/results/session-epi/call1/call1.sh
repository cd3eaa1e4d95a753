#!/usr/bin/env bash
# Session epi, call 1 (issue 19): the Hopper forward's persistent copy-engine configs, as built, with two
# accumulator sets (ACC2, uncommitted at the call: kernels_src/implicit_gemm_hopper_fwd.cu of the working tree)
# and with the timing-only F_DIAG macro (fdiag.patch, applied in the working tree for this call only), beside
# cuDNN's plans; ResNet-50 N=32 FP16 F, then the non-ResNet set.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
D=bench/results/session-epi/call1
timeout 330 python3 $D/f_epi.py --json $R/f_r50.json > $R/f_r50.log 2>&1
echo "r50 rc=$? $(( $(date +%s) - T0 )) s"; cat $R/f_r50.log | grep -v "^ " | tail -30; save
left=$(( 570 - ($(date +%s) - T0) ))
timeout $left python3 $D/f_epi.py --set nonresnet --json $R/f_nr.json > $R/f_nr.log 2>&1
echo "nr rc=$? $(( $(date +%s) - T0 )) s"; cat $R/f_nr.log | grep -v "^ " | tail -22; save
