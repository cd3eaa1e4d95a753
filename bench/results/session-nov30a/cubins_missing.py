import hashlib, json, sys
from miofind.compile import nvrtc_compile
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb
hb.device_arch = lambda: None
S = get_solver("ConvImplicitGemmHopperFwdTmaStore")
a = json.load(open('/tmp/cubins_tstore_before.json')); b = json.load(open('/tmp/cubins_tstore_after.json'))
for key in sorted(set(a) - set(b)):
    pk, cfg, name = key.split("|")
    p = ProblemDescription.from_key(pk)
    for k in S.get_solution(p, json.loads(cfg)).kernels:
        b[f"{pk}|{cfg}|{k.name}"] = hashlib.sha1(nvrtc_compile(k, "sm_90a")).hexdigest()[:16]
json.dump(b, open('/tmp/cubins_tstore_after.json', 'w'), indent=0)
ka = set(a) - {"__src__"}
print(len(ka), sum(a[k] == b.get(k) for k in ka), "identical of the before tree's")
