#!/usr/bin/env bash
# Session nov29b, call 7 (the machine of calls 5 and 6 still warm, its /tmp/warm-kc and /tmp/warm-cupy from call 5's
# `miofind warmup`): bench_cold at the final code (the timing in sets; find.Early reverted), FP32 and FP16, warm and
# empty caches, torch beside. Run as one command line:
mkdir -p /tmp/r2 && if [ -f /tmp/warm-kc/.miofind-warmup.json ] || ls /tmp/warm-kc >/dev/null 2>&1; then R=/tmp/r2; source scripts/device-env; timeout 230 python3 bench/bench_cold.py --out /tmp/r2/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy --timeout 90 > /tmp/r2/cold.log 2>&1; echo "cold rc=$?"; sed -n '/^| layer | type | dir | torch/,/^$/p' /tmp/r2/cold/bench_cold.md; gzip -f /tmp/r2/cold.log; tar czf $OUT/r.tgz -C /tmp r2; else echo "no warm-kc"; fi
