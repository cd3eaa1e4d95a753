#!/usr/bin/env bash
# Session nov29a, call 7 (any sm_90): compute-sanitizer memcheck and racecheck on both TF32 W solvers after call 6's
# transpose change (calls 2 and 4 ran the first transpose), split (default) and unsplit.
set -uo pipefail
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/kc
for S in ConvImplicitGemmHopperWrwTf32Rn ConvImplicitGemmHopperWrwTf32RnNchw; do
  OUT=$R/san_$S SANITIZE_TIMEOUT=60 timeout 120 scripts/sanitize --solvers $S --every 2>&1 | tail -3
done
OUT=$R/san_unsplit SANITIZE_TIMEOUT=60 timeout 120 scripts/sanitize --solvers ConvImplicitGemmHopperWrwTf32Rn --every \
  --config '{"WG_M": 2, "BN": 256, "STAGES": 3, "SPLITK": 1}' 2>&1 | tail -3
tar czf $OUT/r.tgz -C /tmp r
