#!/usr/bin/env bash
# Session first, call 2: the CLI on a DB hit (wall, imports, profile) and the first ResNet-50 training step, this
# session's changes (ab.patch: no cuDNN plan built that the host-aware choice sets aside; no warm_up() in the CLI)
# against the tree before them (ab.patch reversed in a copy), in alternating processes.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
NEW=$PWD; OLD=/tmp/before
rm -rf $OLD; mkdir -p $OLD; cp -r miofind solvers bench kernels_src finddb pyproject.toml $OLD/
(cd $OLD && patch -s -R -p1 < $NEW/bench/results/session-first/call2/ab.patch) || echo "patch -R failed"
python3 -m compileall -q -j 16 miofind solvers bench $OLD > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c2; mkdir -p $R
save() { (cd $OUT && tar czf c2.tgz c2); }
export PYTHONPATH=$NEW:/tmp/site
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1 &
BUILD=$!
CLI="find --mode fast conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1"
export MIOFIND_DB=sqlite:////tmp/cli-user.sqlite
python3 -m miofind $CLI > /dev/null 2>&1   # untimed: bytecode, page cache
for r in 1 2 3 4 5; do
  for side in new old; do
    d=$NEW; [ $side = old ] && d=$OLD
    s=$(date +%s.%N); PYTHONPATH=$d:/tmp/site python3 -m miofind $CLI > /dev/null 2>> $R/cli_$side.err; e=$(date +%s.%N)
    echo "$side $(python3 -c "print(round(($e-$s)*1e3,1))")" >> $R/cli_wall.txt
  done
done
cat $R/cli_wall.txt | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k":"a[k]}'
python3 -X importtime -m miofind $CLI 2> $R/cli_importtime.txt > /dev/null
python3 -m cProfile -s cumulative -m miofind $CLI > $R/cli_cprofile.txt 2>&1
python3 - > $R/cli_steps.txt 2>&1 <<'PY'
import time; t0 = time.perf_counter()
import miofind.cli; t1 = time.perf_counter()
from miofind.device import current_device; d = current_device(); t2 = time.perf_counter()
from miofind import find_solutions; t3 = time.perf_counter()
r = find_solutions("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", mode="fast", defer=False); t4 = time.perf_counter()
print(f"import miofind.cli {1e3*(t1-t0):.1f} ms, current_device {1e3*(t2-t1):.1f}, import api {1e3*(t3-t2):.1f}, find {1e3*(t4-t3):.1f} ({r.source})")
PY
cat $R/cli_steps.txt
python3 - > $R/cupy_import.txt 2>&1 <<'PY'
import ctypes, time, cProfile, pstats, io
import torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
orig = ctypes.CDLL.__init__
def init(self, name, *a, **k):
    t = time.perf_counter(); orig(self, name, *a, **k); print(f"dlopen {1e3*(time.perf_counter()-t):.1f} ms {name}")
ctypes.CDLL.__init__ = init
pr = cProfile.Profile(); t = time.perf_counter(); pr.enable()
import cupy
pr.disable(); print(f"import cupy after torch and CUDA: {1e3*(time.perf_counter()-t):.1f} ms (profiled)")
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(12); print(s.getvalue())
PY
head -8 $R/cupy_import.txt
save
wait $BUILD; tail -1 $R/build.log
# the kernel cache filled (both configs) by the new tree
timeout 130 python3 bench/first_step.py --out $R/fill --configs train32-fp32,train32-amp --backends miofind --rounds 1 > $R/fill.log 2>&1
echo "fill rc=$?"; save
for r in 1 2 3; do
  for side in new old; do
    d=$NEW; [ $side = old ] && d=$OLD
    (cd $d && PYTHONPATH=$d:/tmp/site timeout 100 python3 bench/first_step.py --out $R/fs_${side}_$r --configs train32-fp32,train32-amp --backends miofind --rounds 1 > $R/fs_${side}_$r.log 2>&1)
    echo "$side $r rc=$?"; grep "^round" $R/fs_${side}_$r.log | cut -c1-150
  done
  save
done
timeout 100 python3 bench/first_step.py --out $R/fs_heur --configs train32-fp32,train32-amp --backends heuristic --rounds 2 > $R/fs_heur.log 2>&1
grep "^round" $R/fs_heur.log
save
