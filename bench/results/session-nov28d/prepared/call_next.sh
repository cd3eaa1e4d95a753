#!/usr/bin/env bash
# Prepared (session nov28d, not run: only H200s were lent; supersedes session-nov28c/prepared/call_next.sh): on an H100
# (check r/device.txt), (0) the C++ path's tensor-map tests (the rounding TF32 cases added in session nov28d, not yet
# run on a GPU), (1) the new solvers' records into a copy of the shipped DB: the swapped-operand ones (FP16/BF16
# NHWC narrow layers) and the rounding TF32 ones (ResNet-50's N=32 NHWC TF32 problems). They are new kernel files (the
# swap kernel's source moved two helpers into implicit_gemm_hopper_pixels.cuh since session nov28c: it has no shipped
# records either), so no other record is distrusted and add-solver-records measures them alone, beside the stored
# records. (2) The rounding TF32 solvers' sweep on ResNet-50 (as session nov28d's call 5, on the H100). (3) The FP16
# ratios by the records against the shipped DB. On the CPU afterwards: adopt r/db.sqlite.gz (finddb/sm_90-132.sqlite),
# retrain the cost models (`miofind db train-model --db finddb/sm_90-132.sqlite`, then `--configs`),
# `python tests/core/test_trust.py`, and update README's swap and TF32 paragraphs with the records.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:benchmark tests/torch/test_fast.py -k tensor_map \
  > $R/fast.log 2>&1
echo "C++ path tensor-map tests rc=$? $(el) s: $(tail -n 1 $R/fast.log)"; grep -E "^(FAILED|ERROR)" $R/fast.log | head
cp finddb/sm_90-132.sqlite /tmp/db.sqlite
timeout 270 scripts/add-solver-records /tmp/db.sqlite --solver ConvImplicitGemmHopperFwdSwap \
  --solver ConvImplicitGemmHopperBwdSwap --solver ConvImplicitGemmHopperFwdTf32Rn --solver ConvImplicitGemmHopperBwdTf32Rn \
  --seconds 250 --json $R/add_records.json > $R/add_records.log 2>&1
echo "add records rc=$? $(el) s"; tail -3 $R/add_records.log | cut -c1-200
gzip -c /tmp/db.sqlite > $R/db.sqlite.gz; save
python3 bench/results/session-nov27k/call1/ratios.py finddb/sm_90-132.sqlite /tmp/db.sqlite | tee $R/ratios.txt
MIOFIND_HOPPER_TF32=1 timeout $(( 580 - $(el) )) python3 bench/sweep_configs.py --dir F --dtype FP32 --math tf32 --layers all \
  --solver ConvImplicitGemmHopperFwdTf32Rn --others ConvImplicitGemmHopperFwd --iters 20 --deadline $(( 560 - $(el) )) \
  --json $R/sweep_f.json > $R/sweep_f.log 2>&1
echo "sweep F rc=$? $(el) s"; grep -E "^geomean" $R/sweep_f.log
gzip -f $R/*.log; save
