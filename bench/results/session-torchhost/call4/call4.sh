#!/usr/bin/env bash
# Issue 14 / 17 (call 4): cublasLtMatmul's own host time against one kernel launch (lt_host_cost.py); then
# MobileNetV2 and Inception-v3 (AMP training at batch 32, AMP inference at batch 1) against cuDNN benchmark mode,
# after / before session-torchhost's host-time changes in alternating processes, after one untimed process.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
D=bench/results/session-torchhost
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && patch -s -R -p1 < $D/ab.patch) || exit 1
python3 -m compileall -q -j 16 miofind solvers bench /tmp/before/miofind /tmp/before/solvers /tmp/before/bench > /dev/null 2>&1
R=$OUT/c4; mkdir -p $R
PYTHONPATH=$PWD:/tmp/site timeout 60 python3 bench/lt_host_cost.py --out $R/lt_host_cost.json > $R/lt_host_cost.log 2>&1
echo "lt rc=$?"; cat $R/lt_host_cost.log
CFG=train32-amp,infer1-amp
bm() {  # name dir rounds iters timeout
  (cd $2 && PYTHONPATH=$2:/tmp/site timeout $5 python3 bench/bench_models.py --out $R/$1 --models mobilenet_v2,inception_v3 \
     --configs $CFG --skip-first --steps 0 --warmup 5 --rounds $3 --iters $4) > $R/$1.log 2>&1
  echo "$1 rc=$?"
}
bm warm $PWD 1 3 200
for i in 1 2; do
  bm after$i $PWD 3 10 90
  bm before$i /tmp/before 3 10 90
done
python3 - $R <<'PY'
import json, os, sys
d = sys.argv[1]
for name in sorted(f for f in os.listdir(d) if f.endswith(".log") and f.startswith(("after", "before", "warm"))):
    rows = [json.loads(l) for l in open(os.path.join(d, name)) if l.startswith("{") and '"speedup"' in l]
    print(name[:-4], "  ".join(f"{r['model']} {r['config']}: {r['cudnn_ms']:.2f}/{r['miofind_ms']:.2f}={r['speedup']:.3f}x" for r in rows))
PY
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
