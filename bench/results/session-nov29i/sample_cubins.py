"""Cubins of padded and 32-wide configs (the builds the live k steps and BN = 32 change), per TREE."""
import hashlib, json, os, sys
T = os.environ["TREE"]
sys.path[:0] = [T, T + "/tests", T + "/tests/implicit_gemm_hopper"]
from miofind.compile import nvrtc_compile
from miofind.solvers import implicit_gemm_hopper_base as hb
hb.device_arch = lambda: None
import test_bn32 as b, test_tma_padded as t
out = {}
def add(solver, p, cfg):
    if not solver.is_valid_config(p, cfg): return
    for k in solver.get_solution(p, cfg).kernels:
        key = f"{solver.id}|{p.key()}|{json.dumps(cfg, sort_keys=True)}|{k.name}"
        out[key] = hashlib.sha1(nvrtc_compile(k, "sm_90a")).hexdigest()[:16]
for dt in ("FP16", "BF16"):
    for name, kw in t.CASES.items():
        p = t._p("F", dt, **kw)
        for c in (t._fcfg(128, 64, 2, 4), t._fcfg(128, 128, 2, 4, per=1), t._fcfg(128, 128, 2, 4, per=1, pp=1),
                  t._fcfg(64, 64, 1, 5, per=1)):
            add(t.FWD, p, c)
        if t.TSTORE.applicability(p): add(t.TSTORE, p, t.TSTORE.default_config(p))
    for name, kw in t.BWD_CASES.items():
        p = t._p("B", dt, **kw)
        for c in (t._fcfg(128, 64, 2, 4), t._fcfg(128, 128, 2, 4, per=1)):
            add(t.BWD, p, c)
    for name, kw in b.CASES.items():
        p = b._p("F", dt, **kw)
        for c in b.KINDS: add(b.FWD, p, c)
    f = b._p("F", dt, bias=1, activation="relu", **b.MANY)
    add(b.FUSED, f, b._cfg(128, 2, 4, per=1, wsp=1, tma=1))
json.dump(out, open(f"/tmp/cubins3/{os.environ['WHICH']}.json", "w"))
print(len(out), "kernels")
