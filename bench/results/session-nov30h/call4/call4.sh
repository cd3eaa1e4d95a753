#!/usr/bin/env bash
# Session nov30h, call 4 (any sm_90): ResNet-50's W (FP16 NHWC, N = 32, no system DB) tuned as a user would, with
# `miofind tune`'s default budget, which the Hopper W solver now widens to 400 configs / patience 48 (its
# tune_budget); then the same-run W side by side with cuDNN reading that DB; then the tuning GPU tests at this code.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() {
  python3 -c "import sqlite3; c=sqlite3.connect('/tmp/u4.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('PRAGMA journal_mode=DELETE')" 2>/dev/null
  gzip -c /tmp/u4.sqlite > $R/u4.sqlite.gz 2>/dev/null; gzip -kf $R/*.json 2>/dev/null
  tar czf $OUT/r.tgz --exclude='*.json' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy4 MIOFIND_KERNEL_CACHE=/tmp/kc4 MIOFIND_SYSTEM_DB=none MIOFIND_DB=sqlite:////tmp/u4.sqlite
timeout 300 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction W \
  --json-out $R/tune_default.json > $R/tune_default.txt 2>&1
echo "tune rc=$? $(el) s"; tail -1 $R/tune_default.txt; save
python3 - $R/tune_default.json <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1])); agg = collections.defaultdict(lambda: [0, 0, 0.0, None])
for o in d["outcomes"]:
    for s in o["solvers"]:
        a = agg[s["solver_id"]]; a[0] += 1; a[1] += s.get("tried") or 0; a[2] += s.get("seconds") or 0; a[3] = s.get("budget")
for k, (n, t, sec, b) in sorted(agg.items()):
    print(f"{k}: {n} problems, {t} configs, {sec:.1f} s, budget {b}")
PY
MIOFIND_SPECIALIZE=sync timeout 150 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W \
  --set resnet50 --out $R/samerun_W > $R/samerun_W.txt 2>&1
echo "samerun rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_W.txt; save
timeout 100 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 14 tests/tuning > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20 | cut -c1-300; tail -1 $R/tests.log
gzip -f $R/tests.log; save; echo "all $(el) s"
