#!/usr/bin/env bash
# Issue 17 (call 3): the torch GPU tests at this code, then ResNet-50 step times against cuDNN benchmark mode
# (bench_models, 3 alternating rounds per process) after / before session-torchhost's host-time changes
# (ab.patch reversed in a copy), in alternating processes, after one untimed process that fills the caches.
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
R=$OUT/c3; mkdir -p $R
PYTHONPATH=$PWD:/tmp/site timeout 220 python3 -m pytest -m gpu tests/torch/test_torch_gpu.py -q -p no:cacheprovider -rfEs \
  > $R/tests.log 2>&1; echo "tests rc=$?"; tail -3 $R/tests.log
CFG=train32-amp,train32-fp32,infer1-fp32,infer1-amp
bm() {  # name dir rounds iters
  (cd $2 && PYTHONPATH=$2:/tmp/site timeout 150 python3 bench/bench_models.py --out $R/$1 --models resnet50 \
     --configs $CFG --skip-first --steps 0 --warmup 5 --rounds $3 --iters $4) > $R/$1.log 2>&1
  echo "$1 rc=$?"
}
bm warm $PWD 1 3
for i in 1 2; do
  bm after$i $PWD 3 10
  bm before$i /tmp/before 3 10
done
python3 - $R <<'PY'
import json, os, sys
R = sys.argv[1]
for name in sorted(os.listdir(R)):
    f = os.path.join(R, name, "bench_models.json")
    if not os.path.exists(f):
        continue
    rows = json.load(open(f))["rows"] if isinstance(json.load(open(f)), dict) else json.load(open(f))
    print(name, "  ".join(f"{r['config']}: {r['cudnn_ms']:.2f}/{r['miofind_ms']:.2f}={r['speedup']:.3f}x" for r in rows))
PY
