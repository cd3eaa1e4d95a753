import sys, time
t0 = time.perf_counter()
import miofind.api
from miofind.device import device_from_string
dev = device_from_string("sm_90-132")
t1 = time.perf_counter()
res = miofind.api.get_solutions("64-56-56-1x1-256-56-56-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-W", device=dev, db="sqlite:////tmp/nj/imm-user.sqlite")
t2 = time.perf_counter()
res2 = miofind.api.get_solutions("256-14-14-3x3-256-14-14-32-1x1-1x1-1x1-0-NCHW-FP32-F", device=dev, db="sqlite:////tmp/nj/imm-user.sqlite")
t3 = time.perf_counter()
print(f"import {1e3*(t1-t0):.1f} first {1e3*(t2-t1):.1f} second {1e3*(t3-t2):.1f} ms; {res.source} {res[0].solver_id if len(res) else None}; {res2.source}")
