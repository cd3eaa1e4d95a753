# Run from the repository root after `git show 8a02c4f:solvers/depthwise_base.py > solvers/_dw_old_tmp.py` (the ranking
# before 8261875); delete that file afterwards. dw_ab.py: old against new ranking time; dw_same.py: the same rankings.
import time, sys
sys.path.insert(0,'.')
from miofind.problem import ProblemDescription
import importlib
new = importlib.import_module("miofind.solvers.depthwise_base")
old = importlib.import_module("miofind.solvers._dw_old_tmp")
keys=[]
for d in "FBW":
    for base in ["480-14-14-3x3-480-14-14-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-%s_g480","120-28-28-5x5-120-28-28-32-2x2-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-%s_g120","72-56-56-5x5-72-28-28-32-2x2-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-%s_g72","96-112-112-3x3-96-56-56-32-1x1-2x2-1x1-0-NCHW-FP32-%s_g96","32-112-112-3x3-32-112-112-32-1x1-1x1-1x1-0-NCHW-FP32-%s_g32"]:
        keys.append(base % d)
tot={"old":0,"new":0}
for k in keys:
    p = ProblemDescription.from_key(k).as_conv()
    best={}
    for rep in range(5):
        for name, m in (("old", old), ("new", new)) if rep % 2 == 0 else (("new", new), ("old", old)):
            ps = m.make_pass(p); m.ranked_configs.cache_clear()
            t=time.perf_counter(); m.ranked_configs(ps); dt=time.perf_counter()-t
            best[name]=min(best.get(name,1e9),dt)
    for n in best: tot[n]+=best[n]
    print(k, " ".join(f"{n} {1e3*v:.1f}" for n,v in best.items()))
print({n:round(1e3*v,1) for n,v in tot.items()})
