#!/usr/bin/env bash
# Session nov30i, call 4 (any sm_90; an H200): (1) why wav2vec2_base AMP's second process found two problems again:
# one fresh process's first step (bench_models --first), its find log, then why_refind.py on the two keys call 3
# named; a second fresh process's first step with its find log; (2) r3d_18 AMP training (0.90x in call 3, 1.03x in
# call 2): three rounds with --profile (GPU busy, host queue, miofind's picks), the gradients after ONE step.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy4 MIOFIND_KERNEL_CACHE=/tmp/kc4
K1=512-1-99-1x2-512-1-199-8-0x0-1x2-1x1-0-NHWC-NHWC-NHWC-FP16-B
K2=512-1-199-1x2-512-1-399-8-0x0-1x2-1x1-0-NHWC-NHWC-NHWC-FP16-B
export MIOFIND_DB=sqlite:////tmp/r/u_w2v.sqlite
for i in 1 2; do
  MIOFIND_LOG_LEVEL=info timeout 150 python3 bench/bench_models.py --first wav2vec2_base train8-amp miofind \
    > $R/w2v_first$i.json 2> $R/w2v_first$i.err
  echo "first$i rc=$? $(el) s"; python3 -c "
import json; d=json.load(open('$R/w2v_first$i.json')); print(d['first_s'], d['stats'], [k for k,s in d['sources'] if s!='db'][:5], d['background_pending'])"
  timeout 60 python3 bench/results/session-nov30i/call4/why_refind.py $MIOFIND_DB $K1 $K2 > $R/why$i.jsonl 2>&1
  echo "why$i rc=$?"; cut -c1-1500 $R/why$i.jsonl; save
done
grep -E "$K1|$K2" $R/w2v_first*.err | cut -c1-400 > $R/w2v_keys_log.txt; gzip -f $R/w2v_first*.err
unset MIOFIND_DB
MIOFIND_DB=sqlite:////tmp/r/u_r3d.sqlite timeout 200 python3 bench/bench_models.py --out $R/r3d_amp --models r3d_18 \
  --configs train8-amp --iters 10 --rounds 3 --warmup 3 --steps 1 --skip-first --profile > $R/r3d_amp.log 2>&1
echo "r3d amp rc=$? $(el) s"; grep -E "^\| r3d" $R/r3d_amp/bench_models.md; save
echo "all $(el) s"
