#!/usr/bin/env bash
# Session dec02a, call 3 (an H200): where ResNet-50's 128-channel 3x3 FP32 B find (call 2's one row over 3x torch:
# 48.1 ms against 15.3 ms, 14.1 ms of it outside the find's timed parts, 6-7 ms in session dec01d's runs too) spends
# its time: a MIOFIND_SPECIALIZE=sync child fills the caches, then three BENCH_COLD_TIMELINE children on its F/B/W
# warm finds; then the GPU tests of the kept code's find paths (deferral, isolation, first runs, finds, verification).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyd MIOFIND_KERNEL_CACHE=/tmp/kcd
child() {  # folder, name, rows, then env assignments
  local dir=$1 name=$2 rows=$3; shift 3
  env MIOFIND_DB=sqlite:////tmp/$name.sqlite "$@" timeout 150 python3 bench/bench_cold.py --child miofind --rows "$rows" \
    --warmup > $dir/$name.jsonl 2> $dir/$name.err
  echo "$name rc=$? $(el) s"
}
mkdir -p $R/diag
R2='[["r50_128_28_3x3_n16","fp32","B"],["r50_128_28_3x3_n16","fp32","F"],["r50_128_28_3x3_n16","fp32","W"]]'
child $R/diag sync "$R2" MIOFIND_SPECIALIZE=sync
for i in 1 2 3; do child $R/diag tl$i "$R2" BENCH_COLD_TIMELINE=$R/diag/tl$i; done
python3 - $R/diag <<'PY'
import json, glob, sys
for p in sorted(glob.glob(sys.argv[1] + "/*.jsonl")):
    for ln in open(p):
        if ln.startswith("{"):
            r = json.loads(ln); t = r.get("timing") or {}
            parts = ("lookup_ms", "select_ms", "setup_ms", "configs_ms", "compile_ms", "isolate_ms", "measure_ms", "store_ms")
            other = t["total_ms"] - sum(t.get(k, 0) for k in parts) if "total_ms" in t else float("nan")
            print(p.rsplit("/", 1)[1], r["direction"], "find %.1f other %.1f" % (r["find_ms"], other),
                  "prefetch_wait %.1f ref_wait %.1f" % (t.get("prefetch_wait_ms", -1), t.get("reference_wait_ms", -1)))
PY
gzip -f $R/diag/*.err; save
export MIOFIND_KERNEL_CACHE=/tmp/kct CUPY_CACHE_DIR=/tmp/cupyt MIOFIND_DB=sqlite:////tmp/t-user.sqlite
timeout $(( 400 - $(el) )) python3 -m pytest -v -p no:cacheprovider -m gpu tests/core/test_tiered_gpu.py \
  tests/core/test_isolate_gpu.py tests/core/test_api_gpu.py tests/core/test_verify_gpu.py tests/gemm/test_first_run.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E " FAILED| ERROR|passed|failed" $R/tests.log | tail -12; gzip -f $R/tests.log; save
echo "all $(el) s"
