#!/usr/bin/env bash
# Session stem, call 3: the forward's store width as a tunable (STORE16): the family's GPU tests; bench_small_c.py over
# the space at N = 32 (both store widths in one run); then the shipped DB's records of the two small-C solvers
# (scripts/add-solver-records on a copy: every problem of the file they apply to, the default and the alternates a find
# measures) and ResNet-50 N=32's first layer tuned (FP16, BF16; F and W).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site MIOFIND_DB=sqlite:////tmp/mf-user.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
save() { [ -f /tmp/db.sqlite ] && gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; tar czf $OUT/r.tgz -C $OUT r; }
timeout 120 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_small_c > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|relative error" $R/tests.log | cut -c1-300 | head; save
timeout 200 python3 bench/bench_small_c.py --space --n 32 --dtypes FP16,BF16 --dirs F,W --no-others --deadline 180 --json $R/small_c.json > $R/small_c.log 2>&1
echo "bench rc=$? $(( $(date +%s) - T0 )) s"; grep -vE "^    " $R/small_c.log | tail -25; grep -E "^    " $R/small_c.log | head -5 | cut -c1-300; save
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
timeout 170 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmSmallCFwd --solver ConvImplicitGemmSmallCWrw \
  --seconds 150 --json $R/add_records.json > $R/add_records.log 2>&1
echo "add rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $R/add_records.log | cut -c1-400; save
for d in F W; do
  s=ConvImplicitGemmSmallCFwd; [ $d = W ] && s=ConvImplicitGemmSmallCWrw
  [ "$d" = F ] && left=$(( (560 - ($(date +%s) - T0)) / 2 )) || left=$(( 570 - ($(date +%s) - T0) ))
  MIOFIND_SPECIALIZE=sync MIOFIND_SYSTEM_DB=none timeout $left python3 -m miofind.cli tune --model resnet50 --batch 32 \
    --dtype fp16 --dtype bf16 --layout NHWC --direction $d --tune-solver $s --retune --max-configs 64 --patience 24 \
    --db sqlite:////tmp/db.sqlite --json-out $R/tune_$d.json > $R/tune_$d.log 2>&1
  echo "tune $d rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $R/tune_$d.log | cut -c1-300; save
done
