#!/usr/bin/env bash
# Session refresh, call 5: where call 4's eager batch-1 steps lost time with the refreshed DB. bench_torch_host.py's
# model part (host ms to queue one no_grad step, both sides; miofind's forward calls, Python-path Entry calls per
# solver, calls that missed the planned path; the solvers chosen) with the DB before (.refresh/old.sqlite) and after
# (finddb/sm_90-132.sqlite), alternating: MobileNetV2 infer1 FP32 and AMP, Inception-v3 infer1 AMP.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
echo "setup $(( $(date +%s) - T0 )) s"
for job in "mobilenet_v2 infer1-fp32,infer1-amp" "inception_v3 infer1-amp"; do
  set -- $job
  for arm in after before; do
    db=$PWD/finddb/sm_90-132.sqlite; [ $arm = before ] && db=$PWD/.refresh/old.sqlite
    MIOFIND_SYSTEM_DB=$db MIOFIND_DB=/tmp/user-$arm-$1.sqlite timeout 70 python3 bench/bench_torch_host.py \
      --out $R/$arm-$1 --model $1 --model-configs $2 --skip-layers --steps 15 > $R/$arm-$1.log 2>&1
    echo "$arm $1 rc=$? $(( $(date +%s) - T0 )) s"
    python3 - $R/$arm-$1 <<'PY'
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/*.json"):
    d = json.load(open(f))
    for m in d.get("models", d.get("model", [])) if isinstance(d, dict) else []:
        if not isinstance(m, dict) or "miofind_host_ms" not in m:
            continue
        print(" ", m["model"], m["config"], "host ms cudnn %.2f miofind %.2f" % (m["cudnn_host_ms"], m["miofind_host_ms"]))
        for lab, v in list(m.get("miofind_parts", {}).items())[:6]:
            print("    %-48s %.3f ms/step %5.1f calls %6.1f us/call" % (lab[:48], v["ms_per_step"], v["calls_per_step"], v["us_per_call"]))
PY
  done
done
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
