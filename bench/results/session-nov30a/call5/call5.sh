#!/usr/bin/env bash
# Session nov30a, call 5 (any sm_90; an H200): call 4's details page has no stall breakdown. The same stem problem,
# ncu's raw page of WarpStateStats and the memory sections (per-warp stall reasons, L2 sectors, TMA traffic), for our
# 256 x 32 32-deep config and cuDNN's plan's kernel.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc5 MIOFIND_DB=sqlite:////tmp/u5.sqlite CUPY_CACHE_DIR=/tmp/cupy5
P="python3 bench/hopper_wrw_profile.py F 32 32 149 3 1 32"
SEC="--section WarpStateStats --section MemoryWorkloadAnalysis_Tables --section SpeedOfLight"
NCU="ncu --clock-control none --csv --page raw"
C32='{"BM": 256, "BN": 32, "WGS": 2, "STAGES": 6, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 2, "PINGPONG": 0}'
timeout 150 $NCU $SEC -k regex:igemm_hopper_fwd --launch-skip 2 --launch-count 1 $P "$C32" > $R/raw_row64_bn32.csv 2> $R/raw_row64_bn32.err
echo "1 rc=$? $(el) s"; save
timeout 150 $NCU $SEC -k regex:sm90_xmma --launch-skip 1 --launch-count 1 $P --solver ConvCudnnFwd > $R/raw_cudnn.csv 2> $R/raw_cudnn.err
echo "2 rc=$? $(el) s"; save
python3 - <<'PY' > $R/stalls.txt
import csv
out = {}
for name in ("row64_bn32", "cudnn"):
    rows = list(csv.reader(open(f"/tmp/r/raw_{name}.csv")))
    rows = [r for r in rows if r]
    if len(rows) < 3: print(name, "no rows"); continue
    h, units, vals = rows[0], rows[1], rows[2]
    out[name] = {k: (v, u) for k, u, v in zip(h, units, vals)}
keys = sorted(set().union(*[set(d) for d in out.values()]))
for k in keys:
    if any(s in k for s in ("stalled", "l2", "lts__t_sectors", "dram__bytes", "duration", "tma", "smsp__inst_executed.sum")):
        print(f"{k[:90]:90s} " + " | ".join(f"{n}: {out[n].get(k, ('-', ''))[0]} {out[n].get(k, ('', ''))[1]}" for n in out))
PY
grep -c . $R/stalls.txt; grep -E "warp_latency_issue_stalled|pcsamp" $R/stalls.txt | head -60; save; echo "all $(el) s"
