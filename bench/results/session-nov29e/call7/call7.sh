#!/usr/bin/env bash
# Calls 5 and 6 stopped each search after 8 configs without a gain (the tuner's --patience): this one searches the whole space.
# Session nov29e, call 7 (any sm_90; an H200 here, so a user's own tuning, not the shipped DB's): what tuning the
# copy-engine-store forward adds. `miofind tune` of ConvImplicitGemmHopperFwdTmaStore alone over its space (exhaustive,
# at most 12 s a problem) on ResNet-50's N=32 FP16 NHWC forward problems into an empty user DB, then the same-run
# side-by-side of the forward reading that DB (bench_convs --cudnn-harness: every own solver at its find configs or
# tuned config, every cuDNN plan, one benchmark-mode find per problem).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc7 MIOFIND_DB=sqlite:////tmp/u7.sqlite
timeout 400 python3 -m miofind tune --model resnet50 --batch 32 --dtype fp16 --layout NHWC --direction F \
  --tune-solver ConvImplicitGemmHopperFwdTmaStore --strategy exhaustive --max-configs 400 --max-seconds 30 --patience 400 --json-out $R/tune.json \
  > $R/tune.txt 2>&1
echo "tune rc=$? $(el) s"; tail -3 $R/tune.txt; save
left=$(( 560 - $(el) ))
MIOFIND_SPECIALIZE=sync timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs F \
  --set resnet50 --out $R/samerun > $R/samerun_F.txt 2>&1
echo "samerun rc=$? $(el) s"; grep -E "geometric mean" $R/samerun_F.txt
sqlite3 /tmp/u7.sqlite "select problem_key, config, time_ms, default_time_ms, configs_tried from perf_records" > $R/perf.txt 2>/dev/null \
  || python3 -c "import sqlite3;[print(*r, sep='|') for r in sqlite3.connect('/tmp/u7.sqlite').execute('select problem_key, config, time_ms, default_time_ms, configs_tried from perf_records')]" > $R/perf.txt
save; echo "all $(el) s"
