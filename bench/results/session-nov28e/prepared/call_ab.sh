#!/usr/bin/env bash
# Prepared (session nov28e, not run: device time spent): call 8 again with the limits a fresh machine needs (its first
# model run compiles and specialises: over 60 s). CONFIG=train32-tf32 runs PyTorch's default FP32 instead of AMP NCHW.
# After the find fix each process's finds_run should read 0.
RUN_LIMIT=150 STOP_AT=420 exec bash bench/results/session-nov28e/call8/call8.sh
