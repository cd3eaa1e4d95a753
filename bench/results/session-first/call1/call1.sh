#!/usr/bin/env bash
# Session first (issue 17's first training iteration, issue 14's first run): where a fresh process's first
# ResNet-50 training step goes, miofind.torch (shipped DB, warm kernel cache, C++ path built) against PyTorch's
# own first step (cudnn.benchmark off and on); the steady steps for the ratio.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
python3 -m compileall -q -j 16 miofind solvers bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c1; mkdir -p $R
save() { (cd $OUT && tar czf c1.tgz c1); }
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1 &
BUILD=$!
# the kernel cache filled by one process per config (empty cache: compiles the shipped records' kernels)
timeout 150 python3 bench/first_step.py --out $R/fill --configs train32-fp32,train32-amp --backends miofind --rounds 1 > $R/fill.log 2>&1
echo "fill rc=$?"; grep "^round" $R/fill.log | cut -c1-200; save
wait $BUILD; tail -1 $R/build.log
# every process a new one: heuristic and miofind, with and without the libraries' set-up before the step
timeout 240 python3 bench/first_step.py --out $R/fs --configs train32-fp32,train32-amp --backends heuristic,miofind --rounds 2 --both > $R/fs.log 2>&1
echo "fs rc=$?"; grep "^round" $R/fs.log | cut -c1-160; sed -n '/^| model/,/^$/p' $R/fs/first_step.md; save
timeout 60 python3 bench/first_step.py --out $R/bench --configs train32-fp32 --backends cudnn --rounds 1 > $R/bench.log 2>&1
echo "cudnn-benchmark rc=$?"; grep "^round" $R/bench.log; save
for c in train32-fp32 train32-amp; do
  MIOFIND_BENCH_CPROFILE=$R/prof_$c.txt timeout 60 python3 bench/bench_models.py --first resnet50 $c miofind > $R/prof_$c.json 2>&1
  echo "prof $c rc=$?"; head -1 $R/prof_$c.txt
done
save
timeout 120 python3 bench/bench_models.py --out $R/steady --models resnet50 --configs train32-fp32,train32-amp --skip-first --steps 0 --iters 10 --rounds 2 > $R/steady.log 2>&1
echo "steady rc=$?"; grep "^| resnet50" $R/steady/bench_models.md | cut -c1-120
save
