"""Small-C implicit GEMM (ConvImplicitGemmSmallCFwd / Wrw: C <= 4, FP16/BF16, NHWC, mma.sync): what it claims
(CPU, pinned), its configs and workspace (CPU), and on the GPU every claimed case, every config of the space on
several problems and the first layers of real CNNs at N = 2 against the float64 reference with poisoned outputs,
K slices past 64, 1-4 channels, dilation, asymmetric filters and strides, and bitwise-deterministic weights."""

import pytest

from gpu_helpers import accepted, assert_claims_pinned, check_claim, check_solver, claim_grid, params
from shapes import SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import registry, solvers
from miofind.solvers import implicit_gemm_small_c_base as base
from miofind.solvers import implicit_gemm_small_c_wrw as wrw

OURS = [s for s in solvers() if s.family == "implicit_gemm_small_c"]
FWD = next(s for s in OURS if s.id == "ConvImplicitGemmSmallCFwd")
WRW = next(s for s in OURS if s.id == "ConvImplicitGemmSmallCWrw")
MODES = (("FP16", "strict"), ("BF16", "strict"))

FAMILY_SHAPES = {
    "c1_5x5": dict(n=2, c=1, k=16, in_size=(19, 23), filter_size=5, pads=2),
    "c2_3x3_s2": dict(n=3, c=2, k=24, in_size=(17, 33), filter_size=3, pads=1, strides=2),
    "c4_1x1": dict(n=2, c=4, k=8, in_size=(9, 40), filter_size=1),
    "c3_dil2": dict(n=1, c=3, k=16, in_size=(20, 37), filter_size=3, pads=2, dilations=2),
    "c3_k72": dict(n=2, c=3, k=72, in_size=(15, 50), filter_size=3, pads=1),
    "c3_k10": dict(n=1, c=3, k=10, in_size=(13, 17), filter_size=3, pads=1),
    "c3_asym": dict(n=2, c=3, k=32, in_size=(21, 35), filter_size=(3, 5), pads=(1, 2), strides=(2, 1)),
    "c3_11x11_s4": dict(n=1, c=3, k=64, in_size=(67, 71), filter_size=11, pads=2, strides=4),
    "c3_pad0_odd": dict(n=2, c=3, k=32, in_size=(37, 41), filter_size=3, strides=2),
}
# the first layers of real CNNs at N = 2 (bench/bench_small_c.py's layers)
STEMS = {
    "resnet50_7x7s2": dict(n=2, c=3, k=64, in_size=(224, 224), filter_size=7, pads=3, strides=2),
    "mobilenetv2_3x3s2": dict(n=2, c=3, k=32, in_size=(224, 224), filter_size=3, pads=1, strides=2),
    "inception3_3x3s2": dict(n=2, c=3, k=32, in_size=(299, 299), filter_size=3, strides=2),
    "vgg16_3x3": dict(n=2, c=3, k=64, in_size=(224, 224), filter_size=3, pads=1),
}
ALL = {**SHAPES, **FAMILY_SHAPES}
GRID = claim_grid(OURS, ALL, MODES)
ACCEPTED = {"ConvImplicitGemmSmallCFwd": 20, "ConvImplicitGemmSmallCWrw": 18}
ACCEPTED_DIGEST = "3533c5e1"


@pytest.fixture(autouse=True)
def no_gpu_arch(monkeypatch):
    """Claims and configs as on an sm_80+ GPU whether or not one is visible here."""
    monkeypatch.setattr(base, "device_arch", lambda: None)


def test_registered_after_existing():
    rows = {r.id: r.number for r in registry()}
    assert rows["ConvImplicitGemmSmallCFwd"] == 33 and rows["ConvImplicitGemmSmallCWrw"] == 34
    assert [s.id for s in OURS] == ["ConvImplicitGemmSmallCFwd", "ConvImplicitGemmSmallCWrw"]


def test_claims_pinned():
    """2D NHWC FP16/BF16, groups 1, C <= 4; F needs an even K, W K % 8 == 0."""
    assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST)


@pytest.mark.parametrize("why,kw", [
    ("C=8", dict(c=8, k=16, in_size=(9, 9), filter_size=3, pads=1)),
    ("groups", dict(c=4, k=8, in_size=(9, 9), filter_size=3, pads=1, groups=2)),
    ("NCHW", dict(c=3, k=8, in_size=(9, 9), filter_size=3, pads=1, layout="NCHW")),
    ("FP32", dict(c=3, k=8, in_size=(9, 9), filter_size=3, pads=1, dtype="FP32")),
    ("3D", dict(c=3, k=8, in_size=(5, 9, 9), filter_size=3, pads=1, layout="NDHWC")),
])
def test_rejections_name_the_field(why, kw):
    kw = {"n": 1, "layout": "NHWC", "dtype": "FP16", **kw}
    for s, d in ((FWD, "F"), (WRW, "W")):
        a = s.applicability(ProblemDescription.make(d, **kw))
        assert not a
        field = {"C=8": "C=8", "groups": "groups=2", "NCHW": "NCHW", "FP32": "FP32", "3D": "3D"}[why]
        assert field in a.reason, a.reason


def test_odd_k_forward_and_k_not_8_backward_weights():
    kw = dict(n=1, c=3, in_size=(9, 9), filter_size=3, pads=1, layout="NHWC", dtype="FP16")
    assert "K=7" in FWD.applicability(ProblemDescription.make("F", k=7, **kw)).reason
    assert FWD.applicability(ProblemDescription.make("F", k=10, **kw))
    assert "K=10" in WRW.applicability(ProblemDescription.make("W", k=10, **kw)).reason


@pytest.mark.parametrize("name", sorted(FAMILY_SHAPES) + sorted(STEMS))
def test_config_space(name):
    """Every config of the space is valid and builds; the default comes first; W's workspace holds its planes."""
    kw = {**ALL, **STEMS}[name]
    for s, d in ((FWD, "F"), (WRW, "W")):
        p = ProblemDescription.make(d, layout="NHWC", dtype="FP16", **kw)
        if not s.applicability(p):
            continue
        space = list(s.config_space(p))
        assert space and space[0] == s.default_config(p)
        assert len({tuple(sorted(c.items())) for c in space}) == len(space)
        for cfg in space:
            assert s.is_valid_config(p, cfg)
            sol = s.get_solution(p, cfg)
            assert sol.workspace_bytes == s.workspace_bytes(p, cfg)
            if d == "W":
                main, red = sol.kernels
                planes = main.grid[0] * main.grid[1]
                assert sol.workspace_bytes >= planes * 16 * wrw.m_blocks(p) * wrw.ncol(p) * 4
                assert dict(red.macros)["PLANES"] == str(main.grid[0])
        assert not s.is_valid_config(p, dict(space[0], TW=24))
        assert not s.is_valid_config(p, {k: v for k, v in space[0].items() if k != "TH"})


@pytest.mark.gpu
@pytest.mark.parametrize("claim", params(accepted(GRID)))
def test_small_c_solver(claim):
    check_claim(claim)


def _space_cases():
    out = []
    for name in ("c3_asym", "c3_k72", "7x7_s2", "c2_3x3_s2"):
        for sid, d in (("ConvImplicitGemmSmallCFwd", "F"), ("ConvImplicitGemmSmallCWrw", "W")):
            for dt in ("FP16", "BF16"):
                out.append((sid, d, name, dt))
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("sid,direction,name,dtype", _space_cases(), ids=["-".join(c) for c in _space_cases()])
def test_every_config(sid, direction, name, dtype):
    s = FWD if sid == FWD.id else WRW
    p = ProblemDescription.make(direction, layout="NHWC", dtype=dtype, **ALL[name])
    assert s.applicability(p)
    for cfg in s.config_space(p):
        err, tol = check_solver(s, p, config=cfg)
        assert err <= tol, f"{sid} {p.key()} config {cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(STEMS))
@pytest.mark.parametrize("direction", ["F", "W"])
@pytest.mark.parametrize("dtype", ["FP16", "BF16"])
def test_first_layers(name, direction, dtype):
    s = FWD if direction == "F" else WRW
    p = ProblemDescription.make(direction, layout="NHWC", dtype=dtype, **STEMS[name])
    err, tol = check_solver(s, p)
    assert err <= tol, f"{s.id} {p.key()}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["FP16", "BF16"])
def test_wrw_bitwise_deterministic(dtype):
    """The partial planes are summed in a fixed order, no atomics: repeated runs give identical bits."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.verify import random_array

    p = ProblemDescription.make("W", layout="NHWC", dtype=dtype, **STEMS["resnet50_7x7s2"])
    rng = cupy.random.default_rng(3)
    sa, sb, so = p.io_shapes()
    a, b = random_array(sa, dtype, rng), random_array(sb, dtype, rng)
    sol = Solution(WRW.id, WRW.algorithm, 0.0, WRW.workspace_bytes(p), WRW.default_config(p), False, p)
    outs = []
    for _ in range(3):
        out = cupy.empty(so, dtype=a.dtype)
        run_solution(sol, a, b, out)
        outs.append(cupy.asnumpy(out).view("u2"))
    assert all((o == outs[0]).all() for o in outs[1:])


@pytest.mark.parametrize("name", sorted(STEMS))
def test_find_configs(name):
    """A find measures the default, then up to three valid alternates (later: configs_now = 1)."""
    for s, d in ((FWD, "F"), (WRW, "W")):
        p = ProblemDescription.make(d, layout="NHWC", dtype="FP16", **STEMS[name])
        cfgs = s.find_configs(p)
        assert cfgs[0] is None and 1 <= len(cfgs) - 1 <= 3 and s.configs_now == 1
        assert all(s.is_valid_config(p, c) and c != s.default_config(p) for c in cfgs[1:])
        assert s.find_configs(p, limit=1) == [None]
