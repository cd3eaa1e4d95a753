#!/usr/bin/env bash
# Session dec03e, call 1: the background drain after ResNet-50's first AMP training step (MIOFIND_EXIT_WAIT=inf),
# miofind.procpool's compile pool (this checkout) against the multiprocessing pool before it (this checkout with
# old_pool.patch applied: miofind/ as at b3f2f1f5), alternating on one machine, one warmed kernel cache copied fresh
# for each process. probe/sitecustomize.py times the background's steps. Usage (repo root): bash call1.sh [ORDER]
# ORDER: the runs, e.g. "new old" (default); with SKIP_WARMUP=1 the cache /tmp/e-kc of an earlier call is reused.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
S=bench/results/session-dec03e
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz --exclude='*.sqlite' -C /tmp r; }
python3 --version > $R/python.txt; nproc > $R/nproc.txt
rm -rf /tmp/old && mkdir -p /tmp/old && cp -r miofind solvers kernels_src finddb /tmp/old/ \
  && patch -s -d /tmp/old -p1 < $S/old_pool.patch && echo "old tree ok"
for v in new old; do
  p=$PWD; [ $v = old ] && p=/tmp/old
  (cd /tmp && PYTHONPATH=$p:/tmp/site python3 -c "import miofind, miofind.tiered as t, inspect; \
print('$v', miofind.__file__, 'mp' if 'ProcessPoolExecutor(' in inspect.getsource(t) else 'procpool')")
done | tee $R/trees.txt
if [ "${SKIP_WARMUP:-0}" != 1 ] || [ ! -d /tmp/e-kc ]; then
  rm -rf /tmp/e-kc /tmp/e-cupy
  MIOFIND_KERNEL_CACHE=/tmp/e-kc CUPY_CACHE_DIR=/tmp/e-cupy timeout 200 python3 -m miofind warmup --arch sm_90 \
    > $R/warmup.log 2>&1
  echo "warmup rc=$? $(el) s"; tail -3 $R/warmup.log
else
  echo "warmup skipped: /tmp/e-kc kept from an earlier call" | tee $R/warmup.log
fi
save
i=0
for v in ${1:-new old}; do
  i=$((i + 1)); p=$PWD; [ $v = old ] && p=/tmp/old
  timeout $(( 585 - $(el) )) python3 bench/results/session-dec03c/resume_check.py train48-amp /tmp/e-kc /tmp/e-cupy \
    "$v:MIOFIND_EXIT_WAIT=inf,PYTHONPATH=$p:/tmp/site:$PWD/$S/probe,PROBE_OUT=$R/probe-$i-$v" \
    > $R/run$i-$v.jsonl 2> $R/run$i-$v.err
  echo "run $i $v rc=$? $(el) s"; cut -c1-400 $R/run$i-$v.jsonl; save
done
gzip -f $R/*.err; save
echo "all $(el) s"
