#!/usr/bin/env bash
# Session nov30e, call 2 (any sm_90): the memory-bound 1x1 forward layers of ResNet-50 at 56 x 56 (FP16 NHWC, N = 32):
# our find configs and cuDNN's plans beside a kernel that moves exactly the layer's bytes (f_bw.py), then ncu's DRAM
# counters of each layer's fastest of each kind.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_SYSTEM_DB=none
D=bench/results/session-nov30e/call2
timeout 240 python3 $D/f_bw.py $R/f_bw.json > $R/f_bw.txt 2>&1
echo "probe rc=$? $(el) s"; grep -v "^\s*$" $R/f_bw.txt | tail -30
timeout 200 ncu --clock-control none --launch-count 400 --csv --metrics \
  gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum \
  python3 $D/f_bw.py $R/f_bw.json --ncu > $R/ncu.csv 2> $R/ncu.err
echo "ncu rc=$? $(el) s"
python3 - <<'PY'
import csv, collections
rows = [r for r in csv.reader(open("/tmp/r/ncu.csv")) if len(r) > 10]
hdr = rows[0]; ix = {k: hdr.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")}
k = collections.OrderedDict()
for r in rows[1:]:
    d = k.setdefault(r[ix["ID"]], {"name": r[ix["Kernel Name"]][:60]})
    d[r[ix["Metric Name"]]] = (r[ix["Metric Value"]], r[ix["Metric Unit"]])
for i, d in k.items():
    if any(s in d["name"] for s in ("move", "igemm", "sm90", "xmma", "cutlass", "nvjet", "conv")):
        print(i, d["name"], {m.split("__")[1][:22]: " ".join(v) for m, v in d.items() if m != "name"})
PY
gzip -f $R/*.json $R/ncu.csv; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
