"""The Hopper forward with a fused epilogue (ConvImplicitGemmHopperFwdBiasActiv): y = act(conv + bias) in
the kernel's epilogue. CPU: it claims fused forward problems only (and the plain solvers none), its
macros and launch arguments, and its builds for sm_90a (unsplit, split-K with the epilogue in the reduce
kernel, persistent, producer warpgroup). GPU: bias, ReLU and GELU, alone and together, on tails, tile
shapes, split and persistent configs, FP16 and BF16, against the float64 reference with poisoned outputs
and a fresh random bias."""

import zlib

import pytest

from gpu_helpers import check_solver
from nvrtc_check import assert_cubins, nvrtc_or_skip
from miofind.problem import ProblemDescription
from miofind.registry import get_solver

FUSED = get_solver("ConvImplicitGemmHopperFwdBiasActiv")
FWD = get_solver("ConvImplicitGemmHopperFwd")
EPILOGUES = ((1, "none"), (0, "relu"), (1, "relu"), (0, "gelu"), (1, "gelu"))
CASES = {
    "tail_mnk": dict(n=2, c=40, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "k320": dict(n=2, c=64, k=320, in_size=(12, 12), filter_size=3, pads=1),
    "1x1_s2": dict(n=2, c=96, k=136, in_size=(14, 13), filter_size=1, strides=2),
    "r50_7x7": dict(n=1, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1),     # split by default
}


def _p(dt="FP16", bias=1, act="relu", **kw):
    return ProblemDescription.make("F", layout="NHWC", dtype=dt, bias=bias, activation=act, **kw)


def _cfg(bm, bn, wgs, st, sk=1, wspec=0, per=0, tma=0):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": sk, "WSPEC": wspec, "TMA": tma}



def test_claims_fused_forward_only(no_gpu_arch):
    plain = _p(bias=0, act="none", **CASES["tail_mnk"])
    a = FUSED.applicability(plain)
    assert not a and "no fused epilogue" in a.reason
    for bias, act in EPILOGUES:
        p = _p(bias=bias, act=act, **CASES["tail_mnk"])
        assert FUSED.applicability(p), (bias, act)
        a = FWD.applicability(p)
        assert not a and "fused epilogue" in a.reason and (act in a.reason or act == "none")
    assert not FUSED.applicability(_p("FP32", **CASES["tail_mnk"]))              # FP16/BF16 only
    nchw = ProblemDescription.make("F", dtype="FP16", bias=1, activation="relu", **CASES["tail_mnk"])
    assert "layouts" in FUSED.applicability(nchw).reason
    # the plain problem's other directions stay with the plain solvers
    assert FUSED.directions == frozenset("F")


def test_macros_and_configs(no_gpu_arch):
    """Same tiles and split rule as the plain forward; the epilogue only in the macros."""
    for bias, act in EPILOGUES:
        p = _p(bias=bias, act=act, **CASES["r50_7x7"])
        assert FUSED.default_config(p) == FWD.default_config(p.unfused())
        assert list(FUSED.config_space(p)) == list(FWD.config_space(p.unfused()))
        ks = FUSED.get_solution(p).kernels
        mac = dict(ks[0].macros)
        assert mac["EPI_BIAS"] == str(bias) and mac["EPI_ACT"] == {"none": "0", "relu": "1", "gelu": "2"}[act]
        assert [k.name for k in ks] == ["igemm_hopper_fwd", "igemm_hopper_fwd_reduce"]       # split by default
        assert dict(ks[1].macros) == mac
        assert FUSED.workspace_bytes(p) == FWD.workspace_bytes(p.unfused()) > 0
    plain = FWD.get_solution(_p(bias=0, act="none", **CASES["r50_7x7"])).kernels[0]
    assert "EPI_BIAS" not in dict(plain.macros) and "EPI_ACT" not in dict(plain.macros)


def test_recipe_names_the_bias_pointer_last_in_each_launch(no_gpu_arch):
    """The fused forward's recipe (miofind.torch's C++ path launches it): each launch takes the bias pointer last,
    as the ``launch.BIAS`` role (a null pointer for an activation alone), the reduce of a split config too; the
    plain forward's recipe names no bias."""
    from gpu_helpers import FakeKernel
    from miofind import launch as L

    for case, bias, act in (("tail_mnk", 1, "none"), ("r50_7x7", 1, "relu"), ("r50_7x7", 0, "gelu")):
        p = _p(bias=bias, act=act, **CASES[case])
        sol = FUSED.get_solution(p)
        steps, align, ws = sol.invoker_factory([FakeKernel() for _ in sol.kernels]).recipe
        assert len(steps) == len(sol.kernels) and ws == (len(steps) > 1), case
        for launch, roles, _ in steps:
            assert roles[-1] == (L.BIAS, 0) and [r for r, _ in roles].count(L.BIAS) == 1, (case, roles)
        # the native replay (miofind._native, the non-torch hot path) takes no bias: no native steps
        assert L._native_steps(sol.invoker_factory([FakeKernel() for _ in sol.kernels]), True, 0) is None
    p = _p(bias=0, act="none", **CASES["r50_7x7"])
    sol = FWD.get_solution(p)
    steps, _, _ = sol.invoker_factory([FakeKernel() for _ in sol.kernels]).recipe
    assert all(r != L.BIAS for _, roles, _ in steps for r, _ in roles)


def test_nvrtc_sm90a_fused_builds(no_gpu_arch):
    nvrtc_or_skip()
    builds = []
    for dt in ("FP16", "BF16"):
        for bias, act in EPILOGUES:
            p = _p(dt, bias=bias, act=act, **CASES["tail_mnk"])
            builds += FUSED.get_solution(p, _cfg(64, 128, 1, 4, sk=3)).kernels       # split: main + reduce
            builds += FUSED.get_solution(p, _cfg(128, 128, 2, 4, per=1, wspec=1)).kernels
    assert_cubins(builds, "sm_90")


def _configs(p):
    out = [None, _cfg(64, 64, 1, 3), _cfg(128, 256, 2, 3), _cfg(128, 128, 2, 4, wspec=1), _cfg(64, 128, 1, 4, sk=3),
           _cfg(128, 64, 2, 4, sk=2, wspec=1), _cfg(64, 128, 1, 5, per=1), _cfg(128, 128, 2, 4, per=1, wspec=1),
           _cfg(128, 128, 2, 4, wspec=1, tma=1), _cfg(128, 64, 2, 4, sk=2, wspec=1, tma=1),    # TMA: C % 64 only
           dict(_cfg(128, 128, 2, 4, per=1, wspec=1, tma=1), PINGPONG=1),          # ping-pong: the epilogue per warpgroup
           dict(_cfg(64, 128, 2, 6, per=1, wspec=1, tma=1), PINGPONG=1)]
    return [c for c in out if c is None or FUSED.is_valid_config(p, c)]


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("bias,act", EPILOGUES, ids=[f"b{b}-{a}" for b, a in EPILOGUES])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_epilogue(name, bias, act, dt):
    p = _p(dt, bias=bias, act=act, **CASES[name])
    cfgs = _configs(p)
    assert len(cfgs) >= 4
    for cfg in cfgs:
        err, tol = check_solver(FUSED, p, seed=zlib.crc32(repr((name, bias, act, cfg)).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
def test_fused_find_and_prepared(tmp_db):
    """A find of a fused problem verifies and times the fused solvers (ours and cuDNN's graph) on the same
    buffers and stores them under the fused key (a second find answers from the DB); a prepared fused
    solution refuses a missing or wrong bias by name."""
    import cupy

    from miofind.api import find_solutions
    from miofind.verify import random_array

    p = _p("FP16", bias=1, act="relu", **CASES["k320"])
    sols = find_solutions(p, db=tmp_db, cut_factor=0, defer=False)
    ids = {s.solver_id for s in sols}
    again = find_solutions(p, db=tmp_db)
    assert again.source == "db" and {s.solver_id for s in again} == ids
    assert "ConvImplicitGemmHopperFwdBiasActiv" in ids and ids <= {"ConvImplicitGemmHopperFwdBiasActiv", "ConvCudnnFwd"}
    sol = next(s for s in sols if s.solver_id == "ConvImplicitGemmHopperFwdBiasActiv")
    pr = sol.prepare()
    rng = cupy.random.default_rng(3)
    x, w = random_array(p.x_shape, "FP16", rng), random_array(p.w_shape, "FP16", rng)
    y = cupy.empty(p.y_shape, dtype=cupy.float16)
    with pytest.raises(ValueError, match=r"bias: .* has a fused bias; pass a bias of k=320"):
        pr(x, w, y)
    with pytest.raises(ValueError, match=r"bias: got shape \(319,\)"):
        pr(x, w, y, bias=cupy.zeros(319, dtype=cupy.float16))
    pr(x, w, y, bias=random_array((p.k,), "FP16", rng))
    cupy.cuda.get_current_stream().synchronize()
    assert bool(cupy.all(y >= 0))
