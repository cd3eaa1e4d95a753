#!/usr/bin/env bash
# Session nov29c, call 3 (the machine of call 2 still warm, its /tmp/warm-kc and /tmp/warm-cupy from call 2's
# `miofind warmup`): bench_cold at call 1's code (the memo; call 2's pipelining reverted in the working tree), FP32 and
# FP16, warm and empty caches, torch beside. Run as one command line (carry .whl):
mkdir -p /tmp/r3 && if [ -d /tmp/warm-kc ]; then R=/tmp/r3; source scripts/device-env; timeout 300 python3 bench/bench_cold.py --out /tmp/r3/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy --timeout 90 > /tmp/r3/cold.log 2>&1; echo "cold rc=$?"; sed -n '/^| layer | type | dir | torch/,/^$/p' /tmp/r3/cold/bench_cold.md; gzip -f /tmp/r3/cold.log; tar czf $OUT/r.tgz -C /tmp r3; else echo "no warm-kc"; fi
