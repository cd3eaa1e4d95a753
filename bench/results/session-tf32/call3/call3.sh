#!/usr/bin/env bash
# Session tf32, call 3: call 2's bench_models runs again (its runs all failed at the first-iteration children: a
# loop variable of bench_models.run_config shadowed the model's name, fixed since). Call 2's GPU test passed and is
# not run again. The rest as call 2.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
R=$OUT/c3; mkdir -p $R
save() { (cd $OUT && tar czf c3.tgz c3); }
rm -rf /tmp/v0 && cp -r . /tmp/v0 && gunzip -c build/finddb_before.sqlite.gz > /tmp/v0/finddb/sm_90-132.sqlite && cp build/model_before.npz /tmp/v0/finddb/sm_90-132.model.npz
bm() {  # dir out models configs steps rounds
  (cd $1 && PYTHONPATH=$1:/tmp/site MIOFIND_DB=sqlite:////tmp/$2-user.sqlite timeout $7 python3 bench/bench_models.py \
    --out $R/$2 --models $3 --configs $4 --steps $5 --rounds $6 --iters 10 > $R/$2.log 2>&1)
  echo "$2 rc=$?"; grep -A8 "^| model" $R/$2/bench_models.md | cut -c1-200; save
}
bm /tmp/v0 before resnet50 train32-tf32 0 3 150
bm $PWD after resnet50 train32-tf32 20 3 180
bm $PWD after-infer resnet50 infer1-tf32 0 3 90
bm $PWD after-others mobilenet_v2,inception_v3 train32-tf32 0 3 120
