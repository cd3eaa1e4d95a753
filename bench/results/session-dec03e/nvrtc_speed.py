"""Session dec03e: NVRTC's speed in one fresh process. Compiles kernels START..START+N of `miofind warmup`'s list
(sm_90, one after another, nothing stored) and prints seconds per kernel, with the process's CPU time and the
machine's steal time (/proc/stat) over the compiles. Usage: python nvrtc_speed.py START N"""

import json
import os
import sys
import time

from miofind.compile import nvrtc_compile
from miofind.warmup import warmup_kernels


def steal() -> int:
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


start, n = int(sys.argv[1]), int(sys.argv[2])
ks = warmup_kernels()[start:start + n]
nvrtc_compile(ks[0], "sm_90")   # NVRTC loaded
s0, c0, t0 = steal(), os.times(), time.perf_counter()
for k in ks:
    nvrtc_compile(k, "sm_90")
t1, c1, s1 = time.perf_counter(), os.times(), steal()
print(json.dumps({"start": start, "kernels": len(ks), "s_per_kernel": round((t1 - t0) / len(ks), 4),
                  "cpu_s": round(c1.user + c1.system - c0.user - c0.system, 2), "wall_s": round(t1 - t0, 2),
                  "steal_ticks": s1 - s0}))
