#!/usr/bin/env bash
# Prepared (session nov28g). Whether the bridge GEMM should also stand in while cuBLASLt answers its first query of a
# GEMM's own kind (FP16 94-120 ms after the FP32 set-up: call5_lt_probe): bridge_kind.patch (CPU-tested) applied, its
# GPU tests (tests/gemm: the bridge in fresh processes, the kinds), then bridge_kind_ab.py in alternating fresh
# processes with and without it. If the first run drops by about the FP16 query and the tests pass, commit the patch
# (and say so in README's bridge paragraph and MIOFIND_LT_BRIDGE's description). Any sm_90; about 4 minutes.
set -uo pipefail
R=/tmp/r; rm -rf $R
source scripts/device-env
P=bench/results/session-nov28g/prepared
export MIOFIND_KERNEL_CACHE=/tmp/bk-kc
git apply $P/bridge_kind.patch || { echo "patch does not apply"; exit 1; }
timeout 150 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider -p no:benchmark tests/gemm > $R/tests.log 2>&1
echo "tests (patched) rc=$?: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)" $R/tests.log | head
timeout 60 python3 $P/bridge_kind_ab.py store /tmp/bk.sqlite 2>&1 | tail -n 1
for round in 1 2 3; do
  timeout 30 python3 $P/bridge_kind_ab.py run /tmp/bk.sqlite patched 2>&1 | grep -E "^patched|Error" | tee -a $R/ab.txt
  git apply -R $P/bridge_kind.patch
  timeout 30 python3 $P/bridge_kind_ab.py run /tmp/bk.sqlite plain 2>&1 | grep -E "^plain|Error" | tee -a $R/ab.txt
  git apply $P/bridge_kind.patch
done
git apply -R $P/bridge_kind.patch
gzip -f $R/*.log; tar czf $OUT/r.tgz -C /tmp r
