#!/usr/bin/env bash
# Session nov28b, call 4 (H100): the TF32 backward data (ConvImplicitGemmHopperBwdTf32: w rewritten as each stride
# phase's K-major filter, the phases run by the forward kernel's TF32 build). (1) the TF32 GPU tests (forward and
# backward data); (2) compute-sanitizer on it over every tiny problem it claims; (3) ResNet-50's N=32 NHWC TF32 backward
# layers: its persistent copy-engine configs and default beside cuDNN's TF32 plans (sweep_configs); (4) its records
# added to the shipped DB's TF32 NHWC problems (scripts/add-solver-records), and their ratios.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache SANITIZE_TIMEOUT=80
S=ConvImplicitGemmHopperBwdTf32
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
MIOFIND_DB=sqlite:////tmp/t-user.sqlite timeout 200 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark \
  tests/implicit_gemm_hopper/test_tf32.py > $R/tests_tf32.log 2>&1
echo "tf32 tests rc=$? $(el) s: $(tail -n 1 $R/tests_tf32.log)"; grep -E "^(FAILED|ERROR)|relative error" $R/tests_tf32.log | cut -c1-300 | head; save
OUT=$R/san scripts/sanitize --solvers $S --every 2>&1 | tail -4
echo "sanitize $(el) s"; save
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
timeout 100 scripts/add-solver-records /tmp/db.sqlite --solver $S --seconds 80 --json $R/add_b.json > $R/add_b.log 2>&1
echo "add rc=$? $(el) s"; tail -n 1 $R/add_b.log | cut -c1-300
python3 -c "
import sqlite3; c = sqlite3.connect('/tmp/db.sqlite'); c.execute('pragma journal_mode=DELETE'); c.execute('vacuum'); c.close()"
python3 bench/results/session-nov28b/call3/tf32_nhwc_ratios.py /tmp/db.sqlite | tee $R/ratios.txt
gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; save
left=$(( 585 - $(el) ))
[ $left -gt 40 ] && timeout $left python3 bench/sweep_configs.py --dir B --dtype FP32 --math tf32 --solver $S --layers all \
  --where TMA=1,PERSIST=1 --iters 20 --deadline $(( left - 15 )) --json $R/bwd_tf32.json > $R/bwd_tf32.log 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^geomean" $R/bwd_tf32.log
save
