"""Cubins of implicit_gemm_hopper_fwd.cu's kernels whose filter tiles tma_filter_tile issues (session nov30d's helper
for tma_fill's and tma_fill_b's filter boxes), before and after, per TREE: on every PADDED_C layer and the NON_RESNET
layers with C or dx's channels % 192 == 0, F and B at N = 32, FP16: up to three configs of each solver's tuning space
(every seventh, in order) of each kind the helper serves: resident B (PERSIST = 2), 192-wide (BN = 192), and copy-engine
configs with padded taps (TMA = 1, channels % 64 != 0) or backward data's MN-major tiles (TMA = 1 or 2)."""
import hashlib, json, os, sys
T = os.environ["TREE"]
sys.path[:0] = [T, T + "/tests"]
from miofind.compile import nvrtc_compile
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb
hb.device_arch = lambda: None
from shapes import NON_RESNET, PADDED_C

S = {"F": get_solver("ConvImplicitGemmHopperFwd"), "B": get_solver("ConvImplicitGemmHopperBwd")}
layers = dict(PADDED_C)
layers.update({k: v for k, v in NON_RESNET.items() if v["c"] % 192 == 0 or v["k"] % 192 == 0})
KINDS = {"resident": lambda c: c["PERSIST"] == 2, "bn192": lambda c: c["BN"] == 192,
         "tma": lambda c: c["TMA"] in (1, 2) and c["PERSIST"] != 2 and c["BN"] != 192}
out = {}
for name, kw in layers.items():
    for d, s in S.items():
        p = ProblemDescription.make(d, layout="NHWC", dtype="FP16", **dict(kw, n=32))
        if not s.applicability(p):
            continue
        space = list(s.config_space(p))
        for kind, keep in KINDS.items():
            for cfg in [c for c in space if keep(c)][::7][:3]:
                for k in s.get_solution(p, cfg).kernels:
                    key = f"{d}|{name}|{kind}|{json.dumps(cfg, sort_keys=True)}|{k.name}"
                    out[key] = hashlib.sha1(nvrtc_compile(k, "sm_90a")).hexdigest()[:16]
json.dump(out, open(f"/tmp/cubins_ft_{os.environ['WHICH']}.json", "w"), indent=0)
print(len(out), "kernels")
