#!/usr/bin/env bash
# Session nov28h, call 5: where the warm FP32 finds that miss issue 18's 3x torch spend their host time. `miofind
# warmup`, then bench_cold's miofind child (one untimed warm-up find per direction first, as bench_cold's warm rows)
# once per row in its own process, each find under cProfile (BENCH_COLD_PROFILE), and once more without it.
# Any sm_90 device. Usage (repo root): bash bench/results/session-nov28h/call5_profile/call.sh
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy
timeout 240 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(el) s"
for row in '["r50_128_28_3x3_n16","fp32","B"]' '["inc_48to64_35_5x5_n16","fp32","F"]' '["inc_160_17_1x7_n16","fp32","F"]' \
           '["inc_160_17_1x7_n16","fp32","B"]' '["inc_160_17_1x7_n16","fp32","W"]'; do
  for prof in 1 0; do
    rm -f /tmp/p.sqlite
    if [ $prof = 1 ]; then export BENCH_COLD_PROFILE=$R/prof; else unset BENCH_COLD_PROFILE; fi
    MIOFIND_DB=sqlite:////tmp/p.sqlite timeout 60 python3 bench/bench_cold.py --child miofind --rows "[$row]" --warmup \
      2>>$R/child.err | tee -a $R/rows_prof$prof.jsonl | python3 -c "
import json,sys
for l in sys.stdin:
    r=json.loads(l); t=r['timing']
    print('$prof', r['shape'], r['direction'], round(r['find_ms'],1), {k: round(t.get(k,0),2) for k in ('lookup_ms','select_ms','setup_ms','configs_ms','compile_ms','verify_ms','timing_ms','store_ms')})"
  done
done
save; echo "done $(el) s"
