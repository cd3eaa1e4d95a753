import hashlib, os, sys
sys.path.insert(0, os.environ["TREE"])
from miofind.compile import nvrtc_compile, _kernels_dir
from miofind.problem import ProblemDescription as P
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb
hb.device_arch = lambda: None
print(_kernels_dir())
for d, sid, kw in (("F", "ConvImplicitGemmHopperFwd", dict(c=96, k=96)), ("B", "ConvImplicitGemmHopperBwd", dict(c=64, k=160)),
                   ("F", "ConvImplicitGemmHopperFwdTmaStore", dict(c=160, k=128))):
    p = P.make(d, layout="NHWC", dtype="FP16", n=32, in_size=(35, 35), filter_size=3, pads=1, **kw)
    s = get_solver(sid)
    c = {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 0}
    if sid.endswith("TmaStore"): c = s.default_config(p)
    print(sid, s.is_valid_config(p, c), [hashlib.sha1(nvrtc_compile(k, arch="sm_90")).hexdigest()[:12] for k in s.get_solution(p, c).kernels])
