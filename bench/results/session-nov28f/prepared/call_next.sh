#!/usr/bin/env bash
# Prepared (session nov28f, not run; supersedes session-nov28e/prepared/call_next.sh): that script on an H100 (check
# r/device.txt), with the swapped-operand NCHW wrappers of session nov28f (rows 45-46) offered and measured too, once
# call_swap_nchw.sh has passed. Resumable as that script is (DB_IN); the CPU steps after it are the same.
MIOFIND_HOPPER_SWAP_NCHW=1 \
  EXTRA_SOLVERS="--solver ConvImplicitGemmHopperFwdSwapNchw --solver ConvImplicitGemmHopperBwdSwapNchw" \
  exec bash bench/results/session-nov28e/prepared/call_next.sh
