#!/usr/bin/env bash
# Prepared (session nov28c, not run: only H200s were lent): on an H100 (kind nvidia-h100-x1 where it is lent; check
# r/device.txt), the swapped-operand solvers' records into a copy of the shipped DB, so that the shipped problems they
# apply to (FP16/BF16 NHWC, narrow layers: U-Net's and VGG-16's 64-channel layers above all) can answer with them.
# The new solvers are new kernel files: no other record is distrusted, so only theirs are measured (add-solver-records
# measures the named solvers alone, beside the stored records). Then ResNet-50's, U-Net's and VGG-16's N=32 FP16 ratios
# by the records (session-nov27k/call1/ratios.py) against the shipped DB. On the CPU afterwards: adopt r/db.sqlite.gz
# (finddb/sm_90-132.sqlite), retrain the cost models (`miofind db train-model --db finddb/sm_90-132.sqlite`, then
# `--configs`), `python tests/core/test_trust.py`, and update README's issue-19 swap paragraph with the records' ratios.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
timeout 420 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperFwdSwap \
  --solver ConvImplicitGemmHopperBwdSwap --seconds 400 --json $R/add_records.json > $R/add_records.log 2>&1
echo "add records rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $R/add_records.log | cut -c1-200
gzip -c /tmp/db.sqlite > $R/db.sqlite.gz
python3 bench/results/session-nov27k/call1/ratios.py finddb/sm_90-132.sqlite /tmp/db.sqlite | tee $R/ratios.txt
save
