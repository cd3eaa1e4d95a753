#!/usr/bin/env bash
# Session first, call 4: the device image's site-packages (numpy, CuPy, click, rich...) carry no bytecode and
# PYTHONDONTWRITEBYTECODE=1 is set, so every process compiled them from source (call 2's CLI profile: 0.32 s of
# compile()). Call 3 put bytecode under PYTHONPYCACHEPREFIX, which also hid the standard library's own bytecode
# (startup slower). Here the site-packages are compiled in place, as pip does at install, and nothing else
# changes. Then: the CLI on a DB hit, the cold-process figures (bench_overhead's cold part, bench_cold_import),
# and the first ResNet-50 training step, miofind against PyTorch's heuristic first step.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c4; mkdir -p $R
save() { (cd $OUT && tar czf c4.tgz c4); }
{
  env | grep -i "^PYTHON" ; python3 -c "import sys; print('dont_write_bytecode', sys.flags.dont_write_bytecode, 'prefix', sys.pycache_prefix)"
  SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))"); echo "site-packages $SP"
  ls $SP/numpy/__pycache__ 2>&1 | head -3; touch $SP/numpy/.w 2>&1 && echo writable && rm -f $SP/numpy/.w
} > $R/bytecode_env.txt 2>&1
cat $R/bytecode_env.txt
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
s=$(date +%s)
env -u PYTHONDONTWRITEBYTECODE timeout 200 python3 -m compileall -q -j 16 $SP $PWD/miofind $PWD/solvers $PWD/bench /tmp/site > /dev/null 2>&1
echo "site-packages compiled in place in $(( $(date +%s) - s )) s; numpy/__pycache__: $(ls $SP/numpy/__pycache__ | wc -l) files" | tee $R/compile.txt
/usr/bin/time -f "extension build %e s" python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1 &
BUILD=$!
CLI="find --mode fast conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1"
export MIOFIND_DB=sqlite:////tmp/cli-user.sqlite
python3 -m miofind $CLI > /dev/null 2>&1
for r in 1 2 3 4 5 6 7; do
  s=$(date +%s.%N); python3 -m miofind $CLI > /dev/null 2>> $R/cli.err; e=$(date +%s.%N)
  python3 -c "print(round(($e-$s)*1e3,1))" >> $R/cli_wall.txt
done
echo "CLI wall ms: $(tr '\n' ' ' < $R/cli_wall.txt)"
python3 -m cProfile -s cumulative -m miofind $CLI > $R/cli_cprofile.txt 2>&1
python3 -X importtime -m miofind $CLI 2> $R/cli_importtime.txt > /dev/null
unset MIOFIND_DB
save
wait $BUILD; tail -1 $R/build.log
timeout 150 python3 bench/bench_overhead.py --out $R/overhead --skip-resnet --rounds 1 --calls 2000 --paths native > $R/overhead.log 2>&1
echo "overhead rc=$?"; grep -iE "cold|import|first|CLI|wall" $R/overhead/bench_overhead.md | head -12; save
timeout 120 python3 bench/bench_cold_import.py --runs 7 --gpu --json $R/cold_import.json > $R/cold_import.log 2>&1
echo "cold_import rc=$?"; tail -8 $R/cold_import.log; save
timeout 140 python3 bench/first_step.py --out $R/fill --configs train32-fp32,train32-amp --backends miofind --rounds 1 > $R/fill.log 2>&1
echo "fill rc=$?"; save
timeout 230 python3 bench/first_step.py --out $R/fs --configs train32-fp32,train32-amp --backends heuristic,miofind --rounds 2 > $R/fs.log 2>&1
echo "fs rc=$?"; grep "^round" $R/fs.log | cut -c1-120; sed -n '/^| model/,/^$/p' $R/fs/first_step.md; save
