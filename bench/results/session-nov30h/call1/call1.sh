#!/usr/bin/env bash
# Session nov30h, call 1 (any sm_90): the GPU tests at the previous session's final code (618c2c09's mend was not run
# on a GPU); the device's streaming-read floor (bw.py); ncu's DRAM counters of the W 1x1 56 x 56 layers' best kernels
# (w56_ncu.py) and of the read kernel.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
D=bench/results/session-nov30h/call1
export CUPY_CACHE_DIR=/tmp/cupy1 MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite MIOFIND_SYSTEM_DB=none
python3 $D/bw.py > $R/bw.txt 2>&1; echo "bw rc=$? $(el) s"; cat $R/bw.txt
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
timeout 150 ncu --clock-control none --csv --metrics $M python3 $D/w56_ncu.py > $R/ncu.csv 2> $R/ncu.err
echo "ncu rc=$? $(el) s"
python3 - $R/ncu.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10 and r[0].isdigit()]
hdr = None
for r in csv.reader(open(sys.argv[1])):
    if r and r[0] == "ID":
        hdr = r; break
i_k, i_m, i_v = hdr.index("Kernel Name"), hdr.index("Metric Name"), hdr.index("Metric Value")
cur = {}
for r in rows:
    cur.setdefault((r[0], r[i_k][:60]), {})[r[i_m]] = r[i_v]
for (i, k), m in cur.items():
    if "random" in k or "fill" in k.lower():
        continue
    print(f"{i:>3} {k:60s} " + " ".join(f"{n.split('__')[1].split('.')[0][:14]}={v}" for n, v in m.items()))
PY
tail -3 $R/ncu.err
timeout 60 ncu --clock-control none --csv -k rd -c 3 --metrics $M python3 $D/bw.py > $R/ncu_bw.csv 2>&1
grep -E '^"[0-9]' $R/ncu_bw.csv | awk -F'","' '{print $(NF-2)" "$NF}' | head -15
timeout 240 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 14 tests/tuning tests/core/test_api_gpu.py \
  tests/core/test_tiered_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head -20 | cut -c1-300; tail -1 $R/tests.log
gzip -f $R/tests.log $R/ncu.csv; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
