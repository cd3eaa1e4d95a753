"""Compile 16-bit Hopper F and B kernels of a sample of configs; write {name: sha256 of cubin} as JSON."""
import hashlib, json, sys
sys.path.insert(0, 'tests')
from miofind.compile import nvrtc_compile
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb
hb.device_arch = lambda: None
out = {}
for sid, d in (("ConvImplicitGemmHopperFwd", "F"), ("ConvImplicitGemmHopperBwd", "B"), ("ConvImplicitGemmHopperFwdBiasActiv", "F")):
    S = get_solver(sid)
    for dt in ("FP16", "BF16"):
        for kw in (dict(n=2, c=64, k=320, in_size=(12, 12), filter_size=3, pads=1), dict(n=2, c=40, k=72, in_size=(15, 13), filter_size=3, pads=1, strides=2),
                   dict(n=1, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1), dict(n=4, c=128, k=128, in_size=(14, 14), filter_size=1)):
            extra = dict(bias=1, activation="relu") if "Bias" in sid else {}
            p = ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw, **extra)
            if not S.applicability(p):
                continue
            seen = set()
            for cfg in S.config_space(p):
                kind = tuple(cfg[k] for k in ("BN", "WGS", "PERSIST", "WSPEC", "TMA", "PINGPONG")) + (cfg["SPLITK"] > 1,)
                if kind in seen:
                    continue
                seen.add(kind)
                for i, k in enumerate(S.get_solution(p, cfg).kernels):
                    out[f"{sid}|{p.key()}|{sorted(cfg.items())}|{i}"] = hashlib.sha256(nvrtc_compile(k, arch="sm_90")).hexdigest()
json.dump(out, open(sys.argv[1], "w"), indent=0)
print(len(out))
