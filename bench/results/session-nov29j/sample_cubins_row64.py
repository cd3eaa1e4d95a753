"""Cubins of the 32-deep (TMA = 2) and backward-data 32-wide configs, per TREE (the review's one desc_sw64 in place of
two identical descriptors): every kind of test_row64.py on its F and B cases, test_bn32.py's backward-data kinds and
cases, FP16 and BF16. Writes /tmp/cubins4/<WHICH>.json: kernel -> sha1 of its cubin (NVRTC, sm_90a, no GPU).
    TREE=<tree> WHICH=before|after python sample_cubins_row64.py"""
import hashlib, json, os, sys
T = os.environ["TREE"]
sys.path[:0] = [T, T + "/tests", T + "/tests/implicit_gemm_hopper"]
from miofind.compile import nvrtc_compile  # noqa: E402
from miofind.solvers import implicit_gemm_hopper_base as hb  # noqa: E402
hb.device_arch = lambda: None
import test_bn32 as b, test_row64 as r  # noqa: E402
out = {}


def add(solver, p, cfg):
    if not solver.is_valid_config(p, cfg):
        return
    for k in solver.get_solution(p, cfg).kernels:
        key = f"{solver.id}|{p.key()}|{json.dumps(cfg, sort_keys=True)}|{k.name}|{len(out)}"
        out[key] = hashlib.sha1(nvrtc_compile(k, "sm_90a")).hexdigest()[:16]


for dt in ("FP16", "BF16"):
    for kw in r.CASES.values():
        for c in r.KINDS:
            add(r.FWD, r._p("F", dt, **kw), c)
    for kw in r.BWD_CASES.values():
        for c in r.BWD_KINDS:
            add(r.BWD, r._p("B", dt, **kw), c)
    for kw in b.BWD_CASES.values():
        for c in b.BWD_KINDS:
            add(b.BWD, b._p("B", dt, **kw), c)
os.makedirs("/tmp/cubins4", exist_ok=True)
json.dump(out, open(f"/tmp/cubins4/{os.environ['WHICH']}.json", "w"))
print(len(out), "kernels")
