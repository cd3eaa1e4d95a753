"""(Session nov30d: session nov30c's script, run unchanged on the trees before and after backward data's 192-wide tiles.)
Cubins of the kernels built from implicit_gemm_hopper_fwd.cu (Hopper F, the fused F, B, the TF32 B, the copy-engine
store, the NCHW F and B) before and after the 192-wide tiles (session nov30c), per TREE: every distinct stored Hopper
F/B config of the shipped DB on its first stored problem, and the find configs of other solvers and layers (padded
taps, 32-deep and 32-wide tiles, TF32, split-K, the resident-B twins). BN = 192 configs (new) are left out."""
import hashlib, json, os, sqlite3, sys
T = os.environ["TREE"]
sys.path[:0] = [T, T + "/tests"]
from miofind.compile import nvrtc_compile
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.trust import parse_key, trust_key
from miofind.solvers import implicit_gemm_hopper_base as hb
hb.device_arch = lambda: None
from shapes import PADDED_C, NON_RESNET

IDS = ("Fwd", "FwdBiasActiv", "Bwd", "BwdTf32", "FwdTmaStore", "FwdNchw", "BwdNchw")
S = {i: get_solver("ConvImplicitGemmHopper" + i) for i in IDS}
out = {"__src__": {i: parse_key(trust_key(s))["src"] for i, s in S.items()}}
jobs = []
con = sqlite3.connect(T + "/finddb/sm_90-132.sqlite")
seen = set()
for sid, cfg, pk in con.execute("select solver_id, config, problem_key from find_records where solver_id in "
                                "('ConvImplicitGemmHopperFwd', 'ConvImplicitGemmHopperBwd') order by id"):
    if (sid, cfg) in seen:
        continue
    seen.add((sid, cfg))
    jobs.append((sid.replace("ConvImplicitGemmHopper", ""), ProblemDescription.from_key(pk), json.loads(cfg)))


def mk(d, dt="FP16", layout="NHWC", **kw):
    kw = {k: v for k, v in kw.items() if k != "name"}
    return ProblemDescription.make(d, layout=layout, dtype=dt, **kw)


for name in ("inc_32to32_149_3x3", "inc_80to192_73_3x3", "inc_48to64_35_5x5", "mb2_144to32_28_1x1",
             "dense_160to128_28_1x1"):
    kw = dict(PADDED_C[name], n=32)
    for d in ("F", "B"):
        p = mk(d, **kw)
        jobs += [("Fwd" if d == "F" else "Bwd", p, c) for c in S["Fwd" if d == "F" else "Bwd"].find_configs(p)]
for name in list(NON_RESNET)[:4]:
    p = mk("F", "FP32", math="tf32", **dict(NON_RESNET[name], n=32))
    jobs += [("Fwd", p, c) for c in S["Fwd"].find_configs(p)]
    b = mk("B", "FP32", math="tf32", **dict(NON_RESNET[name], n=32))
    jobs += [("BwdTf32", b, c) for c in S["BwdTf32"].find_configs(b)[:3]]
small = dict(n=2, c=256, k=64, in_size=(14, 14), filter_size=3, pads=1)      # a small grid: split-K defaults
jobs += [("Fwd", mk("F", **small), c) for c in S["Fwd"].find_configs(mk("F", **small))]
jobs += [("FwdBiasActiv", mk("F", bias=1, activation="relu", **dict(small, n=32)), None)]
for name in ("inc_32to32_149_3x3", "dense_160to128_28_1x1"):
    p = mk("F", **dict(PADDED_C[name], n=32))
    jobs += [("FwdTmaStore", p, c) for c in S["FwdTmaStore"].find_configs(p)]
q = mk("F", layout="NCHW", **dict(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1))
jobs += [("FwdNchw", q, None), ("BwdNchw", mk("B", layout="NCHW", **dict(n=32, c=64, k=64, in_size=(56, 56),
                                                                         filter_size=3, pads=1, strides=2)), None)]
n_cfg = 0
for sid, p, cfg in jobs:
    s = S[sid]
    if cfg and cfg.get("BN") == 192:
        continue
    try:
        kerns = s.get_solution(p, cfg).kernels
    except Exception as e:          # not applicable on one tree: recorded, compared as such
        out[f"{sid}|{p.key()}|{json.dumps(cfg, sort_keys=True)}"] = f"error {type(e).__name__}"
        continue
    n_cfg += 1
    for k in kerns:
        key = f"{sid}|{p.key()}|{json.dumps(cfg, sort_keys=True)}|{k.name}|{hashlib.sha1(repr(k.macros).encode()).hexdigest()[:8]}"
        if key not in out:
            out[key] = hashlib.sha1(nvrtc_compile(k, "sm_90a")).hexdigest()[:16]
json.dump(out, open(f"/tmp/cubins_fwd_{os.environ['WHICH']}.json", "w"), indent=0)
print(n_cfg, "solutions,", len(out) - 1, "kernels")
