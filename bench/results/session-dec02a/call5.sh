#!/usr/bin/env bash
# Session dec02a, call 5 (an H200): call 4's timelines answered from the user DBs call 3 left on the same machine
# (/tmp/tl*.sqlite), so they timed no find; again with fresh DB files: three BENCH_COLD_TIMELINE children of the
# ResNet-50 3x3 FP32 B row with the cuDNN prefetch thread's calls wrapped (the kernel caches as call 4 left them).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
rm -f /tmp/*.sqlite
child() {  # folder, name, rows, then env assignments
  local dir=$1 name=$2 rows=$3; shift 3
  env MIOFIND_DB=sqlite:////tmp/$name.sqlite "$@" timeout 150 python3 bench/bench_cold.py --child miofind --rows "$rows" \
    --warmup > $dir/$name.jsonl 2> $dir/$name.err
  echo "$name rc=$? $(el) s"
}
mkdir -p $R/diag
[ -d /tmp/kcd ] || child $R/diag sync '[["r50_128_28_3x3_n16","fp32","B"]]' MIOFIND_SPECIALIZE=sync
R2='[["r50_128_28_3x3_n16","fp32","B"]]'
for i in 1 2 3; do child $R/diag t5l$i "$R2" BENCH_COLD_TIMELINE=$R/diag/tl$i; done
for f in $R/diag/tl*/*.txt; do head -1 $f; grep -E "cudnn|prefetch|run_poisoned" $f | head -24; done
gzip -f $R/diag/*.err; save; echo "all $(el) s"
