#!/usr/bin/env bash
# Prepared (session nov28e, not run: only H200s were lent; supersedes session-nov28d/prepared/call_next.sh): on an H100
# (check r/device.txt). (1) The new solvers' records into a copy of the shipped DB: the swapped-operand ones (FP16/BF16
# NHWC narrow layers), the rounding TF32 ones (NHWC TF32 problems) and the five NCHW wrappers (session nov28e: NCHW
# FP16/BF16 and TF32 problems). All are new kernel files or new solvers, so no other record is distrusted and
# add-solver-records measures them alone, beside the stored records. It is resumable: where one call's --seconds runs
# out, commit r/db.sqlite.gz, then run this again with DB_IN set to that file (gunzipped) until it reports 0 problems
# to measure. (2) The FP16 ratios by the records against the shipped DB. On the CPU afterwards: adopt the final DB
# (finddb/sm_90-132.sqlite), retrain the cost models (`miofind db train-model --db finddb/sm_90-132.sqlite`, then
# `--configs`), `python tests/core/test_trust.py`, and update README's swap, TF32 and NCHW paragraphs with the records.
# EXTRA_SOLVERS: more `--solver ID` arguments (session-nov28f/prepared/call_next.sh passes its two).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
cp "${DB_IN:-finddb/sm_90-132.sqlite}" /tmp/db.sqlite
timeout 540 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperFwdSwap \
  --solver ConvImplicitGemmHopperBwdSwap --solver ConvImplicitGemmHopperFwdTf32Rn --solver ConvImplicitGemmHopperBwdTf32Rn \
  --solver ConvImplicitGemmHopperFwdNchw --solver ConvImplicitGemmHopperBwdNchw --solver ConvImplicitGemmHopperWrwNchw \
  --solver ConvImplicitGemmHopperFwdTf32RnNchw --solver ConvImplicitGemmHopperBwdTf32RnNchw ${EXTRA_SOLVERS:-} \
  --seconds 500 --json $R/add_records.json > $R/add_records.log 2>&1
echo "add records rc=$? $(el) s"; tail -3 $R/add_records.log | cut -c1-200
gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; save
python3 bench/results/session-nov27k/call1/ratios.py finddb/sm_90-132.sqlite /tmp/db.sqlite | tee $R/ratios.txt
gzip -f $R/*.log; save
