"""Cubins of the copy-engine-store forward's 64-deep configs (those that existed before the session's edit), per TREE."""
import hashlib, json, os, sys
T = os.environ["TREE"]
sys.path[:0] = [T, T + "/tests"]
from miofind.compile import nvrtc_compile
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.trust import parse_key, trust_key
from miofind.solvers import implicit_gemm_hopper_base as hb
hb.device_arch = lambda: None
from shapes import PADDED_C
S = get_solver("ConvImplicitGemmHopperFwdTmaStore")
out = {"__src__": parse_key(trust_key(S))["src"]}
probs = []
for dt in ("FP16", "BF16"):
    for kw in (dict(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1),
               dict(n=32, c=256, k=64, in_size=(56, 56), filter_size=1),
               dict(n=32, c=128, k=128, in_size=(28, 28), filter_size=3, pads=1),
               dict(n=32, c=512, k=2048, in_size=(7, 7), filter_size=1),
               dict(n=3, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1)):
        probs.append(ProblemDescription.make("F", layout="NHWC", dtype=dt, **kw))
for name in ("inc_32to32_149_3x3", "inc_80to192_73_3x3", "dense_160to128_28_1x1", "mb2_144to32_28_1x1"):
    sh = PADDED_C[name]
    kw = sh if isinstance(sh, dict) else sh._asdict()
    kw = {k: v for k, v in kw.items() if k not in ("name",)}
    try:
        probs.append(ProblemDescription.make("F", layout="NHWC", dtype="FP16", **dict(kw, n=32)))
    except TypeError as e:
        print("skip", name, e)
for p in probs:
    if not S.applicability(p):
        continue
    cfgs = [c or S.default_config(p) for c in S.find_configs(p)]
    space = [c for c in S.config_space(p) if c["TMA"] == 1]
    cfgs += space[::max(1, len(space) // 6)]
    for cfg in cfgs:
        if cfg["TMA"] != 1:
            continue
        for k in S.get_solution(p, cfg).kernels:
            key = f"{p.key()}|{json.dumps(cfg, sort_keys=True)}|{k.name}"
            if key not in out:
                out[key] = hashlib.sha1(nvrtc_compile(k, "sm_90a")).hexdigest()[:16]
json.dump(out, open(f"/tmp/cubins_tstore_{os.environ['WHICH']}.json", "w"), indent=0)
print(len(out) - 1, "kernels")
