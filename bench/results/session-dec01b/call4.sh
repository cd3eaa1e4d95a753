#!/usr/bin/env bash
# Session dec01b, call 4: Inception-v3 AMP train32 under mode="default" (the C++ autograd and CUDA kernels), alone,
# with the time call 3 lacked (call 3 gave it 240 s on a cold kernel cache and it timed out; session dec01a's
# Inception FP32 reduce-overhead row took 267 s, 95 s of compile per side).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupyi MIOFIND_KERNEL_CACHE=/tmp/kci
MIOFIND_DB=sqlite:////tmp/r/u_inc.sqlite timeout 340 python3 bench/bench_compile_step.py --out $R/inc_amp_default \
  --models inception_v3 --configs train32-amp --mode default --iters 20 --rounds 5 > $R/inc_amp_default.log 2>&1
echo "inc default rc=$? $(el) s"; grep "^| inception_v3" $R/inc_amp_default/bench_compile_step.md
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['rows'][0]; s=r['miofind_stats']; \
print({k: s.get(k) for k in ('ops_cpp', 'ops_python', 'ops_autograd_cpp', 'ops_autograd_python', 'problems', \
'finds_run', 'settled')}, 'wall_s', r.get('wall_s'))" $R/inc_amp_default/bench_compile_step.json
save
echo "all $(el) s"
