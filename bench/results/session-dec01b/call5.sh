#!/usr/bin/env bash
# Session dec01b, call 5 (the command given to the device tool, on the machine call 4 left warm: its kernel cache
# /tmp/kci filled by calls 3 and 4): Inception-v3 AMP train32 under mode="reduce-overhead", issue 17's missing
# compiled AMP row.
R=/tmp/r; rm -rf $R; source scripts/device-env; export CUPY_CACHE_DIR=/tmp/cupyi MIOFIND_KERNEL_CACHE=/tmp/kci; MIOFIND_DB=sqlite:////tmp/r/u_inc.sqlite timeout 235 python3 bench/bench_compile_step.py --out $R/inc_amp_ro --models inception_v3 --configs train32-amp --mode reduce-overhead --iters 20 --rounds 5 > $R/inc_amp_ro.log 2>&1; echo rc=$?; grep "^| inception_v3" $R/inc_amp_ro/bench_compile_step.md; tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r
