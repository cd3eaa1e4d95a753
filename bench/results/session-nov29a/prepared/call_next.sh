#!/usr/bin/env bash
# Prepared (session nov29a, not run: only H200s were lent; supersedes session-nov28f/prepared/call_next.sh): that script
# on an H100 (check r/device.txt), with session nov29a's rounding TF32 backward weights (rows 47-48: NHWC and its NCHW
# wrapper) measured too. Resumable as that script is (DB_IN); the CPU steps after it are the same (adopt the DB, retrain
# the cost models, tests/core/test_trust.py, README's figures).
MIOFIND_HOPPER_SWAP_NCHW=1 \
  EXTRA_SOLVERS="--solver ConvImplicitGemmHopperFwdSwapNchw --solver ConvImplicitGemmHopperBwdSwapNchw --solver ConvImplicitGemmHopperWrwTf32Rn --solver ConvImplicitGemmHopperWrwTf32RnNchw" \
  exec bash bench/results/session-nov28e/prepared/call_next.sh
