"""Hopper implicit GEMM (wgmma, sm_90a): what it claims (CPU, pinned), its configs, its NVRTC build
for sm_90a (CPU), and on the GPU every claimed case and sampled tile configs against the float64
reference with poisoned outputs, odd tails in M, N and K included."""

import zlib

import numpy as np
import pytest

from gpu_helpers import assert_claims_pinned, check_solver, claim_grid, params, accepted, check_claim
from nvrtc_check import nvrtc_or_skip
from shapes import SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import registry, solvers
from miofind.solvers import implicit_gemm_hopper_base as hb

HOPPER = [s for s in solvers() if s.family == "implicit_gemm_hopper"]
FWD = next(s for s in HOPPER if s.id == "ConvImplicitGemmHopperFwd")
BWD = next(s for s in HOPPER if s.id == "ConvImplicitGemmHopperBwd")
WRW = next(s for s in HOPPER if s.id == "ConvImplicitGemmHopperWrw")
MODES = (("FP16", "strict"), ("BF16", "strict"))

# tails: M, N (K) and the GEMM K (C*taps) not multiples of any tile; one tap of few channels; strides
TAILS = {
    "tail_mnk": dict(n=2, c=40, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "c8_k8": dict(n=3, c=8, k=8, in_size=(7, 9), filter_size=3, pads=1),
    "wide_c": dict(n=1, c=264, k=200, in_size=(9, 11), filter_size=3, pads=1, strides=2),
    "1x1_s2": dict(n=2, c=96, k=136, in_size=(14, 13), filter_size=1, strides=2),
    "5x5_dil": dict(n=2, c=16, k=24, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    "k320": dict(n=2, c=64, k=320, in_size=(12, 12), filter_size=3, pads=1),
}
GRID = claim_grid(HOPPER, {**SHAPES, **TAILS}, MODES)
ACCEPTED = {"ConvImplicitGemmHopperFwd": 18, "ConvImplicitGemmHopperBwd": 14, "ConvImplicitGemmHopperWrw": 18}
ACCEPTED_DIGEST = "a0f25076"


def _nhwc(dt="FP16", **kw):
    return ProblemDescription.make("F", layout="NHWC", dtype=dt, **kw)


@pytest.fixture
def no_gpu_arch(monkeypatch):
    monkeypatch.setattr(hb, "device_arch", lambda: None)


def test_registered_after_existing():
    rows = {r.id: r.number for r in registry()}
    assert rows["ConvImplicitGemmHopperFwd"] == 29 and rows["ConvImplicitGemmHopperBwd"] == 30
    assert rows["ConvImplicitGemmHopperWrw"] == 31
    assert max(n for i, n in rows.items() if "Hopper" not in i) == 28
    assert [s.id for s in HOPPER] == ["ConvImplicitGemmHopperFwd", "ConvImplicitGemmHopperBwd",
                                      "ConvImplicitGemmHopperWrw"]


def test_claims_pinned(no_gpu_arch):
    assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST)


@pytest.mark.parametrize("kw,why", [
    (dict(layout="NCHW"), "layouts"),
    (dict(dt="FP32"), "data type"),
    (dict(c=12), "multiples of 8"),
    (dict(k=20), "multiples of 8"),
    (dict(groups=2), "groups"),
])
def test_rejections(no_gpu_arch, kw, why):
    base = dict(n=2, c=16, k=24, in_size=(8, 8), filter_size=3, pads=1)
    lay = kw.pop("layout", "NHWC")
    dt = kw.pop("dt", "FP16")
    p = ProblemDescription.make("F", layout=lay, dtype=dt, **{**base, **kw})
    a = FWD.applicability(p)
    assert not a and why in a.reason


def test_rejected_off_hopper(monkeypatch):
    p = _nhwc(n=2, c=16, k=24, in_size=(8, 8), filter_size=3, pads=1)
    monkeypatch.setattr(hb, "device_arch", lambda: "sm_80")
    a = FWD.applicability(p)
    assert not a and "sm_90a" in a.reason
    monkeypatch.setattr(hb, "device_arch", lambda: "sm_90")
    assert FWD.applicability(p)


def test_configs_valid_and_targeted():
    p = _nhwc(n=32, c=64, k=256, in_size=(56, 56), filter_size=3, pads=1)
    space = list(FWD.config_space(p))
    assert len(space) > 10 and FWD.default_config(p) in space
    for cfg in space:
        assert FWD.is_valid_config(p, cfg) and hb.smem_bytes(p, cfg) <= hb.SMEM_LIMIT
    assert not FWD.is_valid_config(p, dict(space[0], BM=192))
    assert not FWD.is_valid_config(p, dict(space[0], STAGES=2))
    assert not FWD.is_valid_config(p, {"BM": 128, "BN": 256, "WGS": 2, "STAGES": 6, "PERSIST": 0})  # shared memory
    assert not FWD.is_valid_config(p, {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4, "PERSIST": 1})  # N > BN
    assert not any(c["PERSIST"] for c in space)       # B of 9 K tiles x 256 rows does not fit
    p64 = _nhwc(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
    assert FWD.is_valid_config(p64, {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8, "PERSIST": 1})
    big = _nhwc(n=120, c=64, k=64, in_size=(512, 512), filter_size=3, pads=1)
    per = {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8, "PERSIST": 1}
    assert FWD.default_config(big) == dict(per, STAGES=4, PERSIST=0)
    assert FWD.get_solution(big, per).kernels[0].grid[0] <= 2 * 132       # persistent: the blocks that fit
    k = FWD.get_solution(p).kernels[0]
    assert "-arch=sm_90a" in k.compile_options() and k.block[0] == FWD.default_config(p)["WGS"] * 128
    with pytest.raises(ValueError, match="config="):
        FWD.get_solution(p, dict(space[0], BN=96))


def test_nvrtc_sm90a_configs():
    """Every (BM, BN, WGS) shape of the space builds for sm_90a, FP16 and BF16 (NVRTC, no GPU)."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    seen = set()
    for dt, k in (("FP16", 264), ("BF16", 264), ("FP16", 64), ("BF16", 120)):
        p = _nhwc(dt, n=2, c=40, k=k, in_size=(15, 13), filter_size=3, pads=1)
        for cfg in FWD.config_space(p):
            shape = (dt, cfg["BM"], cfg["BN"], cfg["WGS"], cfg["PERSIST"])
            if shape in seen:
                continue
            seen.add(shape)
            cubin = nvrtc_compile(FWD.get_solution(p, cfg).kernels[0], arch="sm_90")
            assert cubin[:4] == b"\x7fELF"
    assert len(seen) >= 20 and any(sh[-1] for sh in seen)


# -- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("claim", params(accepted(GRID)))
def test_hopper_solver(claim):
    check_claim(claim)


def _sample(p, count=8):
    space = list(FWD.config_space(p))
    rng = np.random.default_rng(zlib.crc32(p.key().encode()))
    picks = {0, len(space) - 1, *rng.choice(len(space), size=min(count, len(space)), replace=False).tolist()}
    return [space[i] for i in sorted(picks)]


CFG_CASES = [(name, dt) for name in ("tail_mnk", "k320", "wide_c") for dt in ("FP16", "BF16")]


@pytest.mark.gpu
@pytest.mark.parametrize("name,dt", CFG_CASES, ids=[f"{n}-{d}" for n, d in CFG_CASES])
def test_hopper_config_sample(name, dt):
    p = _nhwc(dt, **TAILS[name])
    for cfg in _sample(p):
        err, tol = check_solver(FWD, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
def test_hopper_multi_wave():
    """A GEMM of many blocks in M and several in N (the pipeline wraps over 9 K tiles)."""
    p = _nhwc("FP16", n=4, c=64, k=384, in_size=(28, 28), filter_size=3, pads=1)
    for cfg in (None, {"BM": 256, "BN": 128, "WGS": 2, "STAGES": 3, "PERSIST": 0},
                {"BM": 64, "BN": 256, "WGS": 1, "STAGES": 3, "PERSIST": 0}):
        err, tol = check_solver(FWD, p, seed=7, config=cfg)
        assert err <= tol, f"config={cfg}: relative error {err:.3g} > {tol:.1g}"


PERSIST_CASES = [
    # several M tiles per persistent block (tiles > blocks that fit), tails in M, N and K
    (dict(n=7, c=24, k=40, in_size=(61, 67), filter_size=3, pads=1), {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 8}),
    (dict(n=10, c=64, k=64, in_size=(64, 64), filter_size=3, pads=1), {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8}),
    (dict(n=10, c=64, k=64, in_size=(64, 64), filter_size=3, pads=1), {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 3}),
    (dict(n=4, c=32, k=120, in_size=(70, 66), filter_size=1), {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 5}),
    (TAILS["tail_mnk"], {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 6}),
]


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("kw,cfg", PERSIST_CASES, ids=[f"persist{i}" for i in range(len(PERSIST_CASES))])
def test_hopper_persistent(kw, cfg, dt):
    p = _nhwc(dt, **kw)
    cfg = dict(cfg, PERSIST=1)
    assert FWD.is_valid_config(p, cfg)
    err, tol = check_solver(FWD, p, seed=11, config=cfg)
    assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


# -- backward data (stride 1): the forward kernel on dy with the flipped, transposed filter ---------

BWD_CASES = {**{k: v for k, v in TAILS.items() if k not in ("wide_c", "1x1_s2")},
             "r50_3x3": dict(n=2, c=64, k=64, in_size=(14, 14), filter_size=3, pads=1),
             "1x7": dict(n=2, c=16, k=24, in_size=(9, 17), filter_size=(1, 7), pads=(0, 3))}


def _flip_like_kernel(w):
    """kernels_src/implicit_gemm_hopper_bwd.cu's index formula, element by element (KYXC -> CYXK)."""
    fk, fy, fx, fc = w.shape
    flat, out = w.reshape(-1), np.empty(w.size, w.dtype)
    for i in range(w.size):
        q = i
        k = q % fk; q //= fk
        s = q % fx; q //= fx
        r = q % fy
        c = q // fy
        out[i] = flat[((k * fy + (fy - 1 - r)) * fx + (fx - 1 - s)) * fc + c]
    return out.reshape(fc, fy, fx, fk)


@pytest.mark.parametrize("name", sorted(BWD_CASES))
def test_bwd_forward_view_matches_reference(no_gpu_arch, name):
    """CPU: the forward problem of forward_view on the flipped filter gives the float64 dx."""
    from miofind.reference import conv_reference
    from miofind.solvers.implicit_gemm_hopper_bwd import forward_view

    p = ProblemDescription.make("B", layout="NHWC", dtype="FP16", **BWD_CASES[name])
    assert BWD.applicability(p), BWD.applicability(p).reason
    pf = forward_view(p)
    assert pf.y_shape == p.x_shape and pf.x_shape == p.y_shape
    rng = np.random.default_rng(3)
    dy, w = (rng.uniform(-1, 1, sh) for sh in p.io_shapes()[:2])
    wf = _flip_like_kernel(w)
    assert wf.shape == pf.w_shape
    np.testing.assert_allclose(conv_reference(pf, dy, wf), conv_reference(p, dy, w), rtol=1e-12, atol=1e-12)


def test_bwd_rejections(no_gpu_arch):
    base = dict(n=2, c=16, k=24, in_size=(9, 9), filter_size=3, pads=1)
    for kw, why in ((dict(strides=2), "strides"), (dict(filter_size=1), "pads"), (dict(c=12), "multiples of 8")):
        a = BWD.applicability(ProblemDescription.make("B", layout="NHWC", dtype="FP16", **{**base, **kw}))
        assert not a and why in a.reason
    assert not BWD.applicability(ProblemDescription.make("F", layout="NHWC", dtype="FP16", **base))
    sol = BWD.get_solution(ProblemDescription.make("B", layout="NHWC", dtype="BF16", **base))
    assert [k.name for k in sol.kernels] == ["igemm_hopper_flip", "igemm_hopper_fwd"]
    assert sol.workspace_bytes >= 16 * 24 * 9 * 2 and "-arch=sm_90a" in sol.kernels[1].compile_options()


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(BWD_CASES))
def test_hopper_bwd(name, dt):
    p = ProblemDescription.make("B", layout="NHWC", dtype=dt, **BWD_CASES[name])
    err, tol = check_solver(BWD, p, seed=5)
    assert err <= tol, f"{p.key()}: relative error {err:.3g} > {tol:.1g}"


def test_index_width_at_the_boundary(no_gpu_arch):
    """32-bit offsets while every tensor has fewer than 2^31 - 1 elements, 64-bit from there (F and B)."""
    # largest tensor: n x 256 x 256 x 64 elements (x for F; dy and dx alike for B)
    for d, solver in (("F", FWD), ("B", BWD), ("W", WRW)):
        for n, index_t in ((511, "int"), (512, "long long")):
            p = ProblemDescription.make(d, n=n, c=64, k=64, in_size=(256, 256), filter_size=3, pads=1,
                                        layout="NHWC", dtype="FP16")
            assert solver.applicability(p)
            assert {dict(k.macros)["INDEX_T"] for k in solver.get_solution(p).kernels if "INDEX_T" in dict(k.macros)} == {index_t}


# -- backward weights: MN-major wgmma operands, split-K over the output pixels ------------------------

def _w(dt="FP16", **kw):
    return ProblemDescription.make("W", layout="NHWC", dtype=dt, **kw)


def test_wrw_configs_and_split():
    from miofind.solvers import implicit_gemm_hopper_wrw as hw
    p = _w(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
    d = WRW.default_config(p)
    assert d == {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 5, "SPLITK": d["SPLITK"]} and d["SPLITK"] > 8
    space = list(WRW.config_space(p))
    assert len(space) > 20 and d in space and all(WRW.is_valid_config(p, c) for c in space)
    assert {c["SPLITK"] for c in space} >= {1, d["SPLITK"]}
    assert not WRW.is_valid_config(p, dict(d, STAGES=7)) and not WRW.is_valid_config(p, dict(d, BN=96))
    assert not WRW.is_valid_config(p, dict(d, SPLITK=0)) and not WRW.is_valid_config(p, dict(d, PERSIST=0))
    # effective split: every chunk non-empty, chunks x tiles per chunk cover the 64-pixel tiles
    jt = -(-32 * 56 * 56 // 64)
    for sk in (1, 3, 7, 100, 256):
        eff, per = hw.split_geometry(p, sk)
        assert eff <= sk and (eff - 1) * per < jt <= eff * per
    # the measured default rule: 1x1 stride 1 on one warpgroup, 3x3 on two; no split for a 1568-pixel reduction
    d1 = WRW.default_config(_w(n=32, c=512, k=128, in_size=(28, 28), filter_size=1))
    assert (d1["BM"], d1["WGS"]) == (64, 1) and 1 < d1["SPLITK"] <= 392 // hw.MIN_JT_PER_SPLIT
    d3 = WRW.default_config(_w(n=32, c=256, k=256, in_size=(14, 14), filter_size=3, pads=1))
    assert (d3["BM"], d3["BN"], d3["WGS"]) == (128, 128, 2)
    assert WRW.default_config(_w(n=32, c=2048, k=512, in_size=(7, 7), filter_size=1))["SPLITK"] == 1
    sol = WRW.get_solution(p, dict(d, SPLITK=1))
    assert [k.name for k in sol.kernels] == ["igemm_hopper_wrw"] and sol.workspace_bytes == 0
    sol = WRW.get_solution(p, d)
    eff = hw.split_geometry(p, d["SPLITK"])[0]
    assert [k.name for k in sol.kernels] == ["igemm_hopper_wrw", "igemm_hopper_wrw_reduce"]
    assert sol.kernels[0].grid == (1 * 5, eff, 1) and sol.workspace_bytes >= eff * 64 * 576 * 4
    assert "-arch=sm_90a" in sol.kernels[0].compile_options() and WRW.workspace_bytes(p, d) == sol.workspace_bytes


def test_wrw_rejections(no_gpu_arch):
    base = dict(n=2, c=16, k=24, in_size=(9, 9), filter_size=3, pads=1)
    for kw, why in ((dict(c=12), "multiples of 8"), (dict(groups=2), "groups")):
        a = WRW.applicability(_w(**{**base, **kw}))
        assert not a and why in a.reason
    assert not WRW.applicability(ProblemDescription.make("B", layout="NHWC", dtype="FP16", **base))
    assert WRW.applicability(_w(**dict(base, strides=2)))


def test_nvrtc_sm90a_wrw_configs():
    """Every (BM, BN, WGS) shape of the backward-weights space builds for sm_90a (NVRTC, no GPU)."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    seen = set()
    for dt in ("FP16", "BF16"):
        p = _w(dt, n=4, c=64, k=256, in_size=(15, 13), filter_size=3, pads=1)
        for cfg in WRW.config_space(p):
            shape = (dt, cfg["BM"], cfg["BN"], cfg["WGS"], cfg["SPLITK"] > 1)
            if shape in seen:
                continue
            seen.add(shape)
            for k in WRW.get_solution(p, cfg).kernels:
                assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF"
    assert len(seen) >= 20


WRW_CASES = {**TAILS, "r50_1x1": dict(n=4, c=64, k=256, in_size=(14, 14), filter_size=1),
             "1x7": dict(n=2, c=16, k=24, in_size=(9, 17), filter_size=(1, 7), pads=(0, 3))}


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(WRW_CASES))
def test_hopper_wrw(name, dt):
    p = _w(dt, **WRW_CASES[name])
    err, tol = check_solver(WRW, p, seed=9)
    assert err <= tol, f"{p.key()}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("name,dt", CFG_CASES, ids=[f"{n}-{d}" for n, d in CFG_CASES])
def test_hopper_wrw_config_sample(name, dt):
    """Sampled configs, the smallest and largest split of every sampled tile included."""
    p = _w(dt, **TAILS[name])
    space = list(WRW.config_space(p))
    rng = np.random.default_rng(zlib.crc32(p.key().encode()))
    picks = {0, len(space) - 1, *rng.choice(len(space), size=min(8, len(space)), replace=False).tolist()}
    for cfg in [space[i] for i in sorted(picks)]:
        err, tol = check_solver(WRW, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
def test_hopper_wrw_long_reduction():
    """A ResNet-sized reduction (25088 pixels), split and unsplit, several N and M tiles."""
    p = _w("FP16", n=8, c=64, k=192, in_size=(56, 56), filter_size=3, pads=1)
    for cfg in (None, {"BM": 128, "BN": 256, "WGS": 2, "STAGES": 3, "SPLITK": 1},
                {"BM": 256, "BN": 128, "WGS": 2, "STAGES": 4, "SPLITK": 64}):
        err, tol = check_solver(WRW, p, seed=13, config=cfg)
        assert err <= tol, f"config={cfg}: relative error {err:.3g} > {tol:.1g}"
