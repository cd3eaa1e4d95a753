"""The Hopper forward with swapped operands (ConvImplicitGemmHopperFwdSwap: the filter as wgmma's A, 64 output channels
a tile, BM output pixels as the N side; persistent, copy-engine producer, ping-pong consumers), and the backward data
that runs it at stride 1 on a rewritten filter (ConvImplicitGemmHopperBwdSwap). CPU: what they claim and reject, configs
and shared memory, the forward view of backward data, NVRTC builds of every config for sm_90a. GPU: tails in pixels,
output channels and the reduction, strides, dilation, several tiles per persistent block, every config on one problem,
backward data with dilation and unpadded filters, against the float64 reference with poisoned outputs."""

import zlib

import pytest

from gpu_helpers import check_solver
from nvrtc_check import nvrtc_or_skip
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, registry
from miofind.solvers import implicit_gemm_hopper_base as hb
from miofind.solvers import implicit_gemm_hopper_fwd_swap as sw

SWAP = get_solver("ConvImplicitGemmHopperFwdSwap")
BSWAP = get_solver("ConvImplicitGemmHopperBwdSwap")

CASES = {
    # pixels not a multiple of a tile; a second 64-channel tile with 8 channels; two K tiles
    "k72_tail": dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "k8": dict(n=3, c=64, k=8, in_size=(9, 7), filter_size=3, pads=1),
    "1x1_s2": dict(n=2, c=128, k=128, in_size=(14, 13), filter_size=1, strides=2),
    "5x5_dil": dict(n=2, c=64, k=24, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    "7x7_s2": dict(n=2, c=64, k=64, in_size=(30, 29), filter_size=7, pads=3, strides=2),
    # more tiles than blocks: each persistent block's two warpgroups take several tiles in turn
    "many_tiles": dict(n=10, c=64, k=64, in_size=(64, 64), filter_size=3, pads=1),
    "k128_28": dict(n=8, c=128, k=128, in_size=(28, 28), filter_size=3, pads=1),
}


# backward data (c: dx's channels, <= 128; k: dy's, a multiple of 64)
B_CASES = {
    "b_c72": dict(n=2, c=72, k=64, in_size=(15, 13), filter_size=3, pads=1),
    "b_k192": dict(n=2, c=64, k=192, in_size=(32, 32), filter_size=3, pads=1),
    "b_dil": dict(n=2, c=24, k=64, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    "b_1x1": dict(n=3, c=128, k=128, in_size=(14, 14), filter_size=1),
    "b_pad0": dict(n=2, c=64, k=64, in_size=(12, 12), filter_size=3),
    "b_many": dict(n=10, c=64, k=64, in_size=(64, 64), filter_size=3, pads=1),
}


def _p(dt="FP16", direction="F", **kw):
    return ProblemDescription.make(direction, layout="NHWC", dtype=dt, **kw)



def test_registered():
    rows = {r.id: r.number for r in registry()}
    assert rows["ConvImplicitGemmHopperFwdSwap"] == 36 and SWAP.family == "implicit_gemm_hopper"
    assert rows["ConvImplicitGemmHopperBwdSwap"] == 37 and BSWAP.family == "implicit_gemm_hopper"


def test_bwd_forward_view(no_gpu_arch):
    """dx as the forward of dy: dy's channels in, dx's out, pads (taps - 1) x dilation - pad, dx's size out."""
    p = _p(direction="B", **B_CASES["b_dil"])
    f = BSWAP.forward_problem(p)
    assert (f.direction, f.c, f.k, f.in_size, f.out_size) == ("F", 64, 24, p.out_size, p.in_size)
    assert f.pads == (5, 5) and f.dilations == (2, 2)
    for name, kw in B_CASES.items():
        assert BSWAP.applicability(_p(direction="B", **kw)), name
    assert BSWAP.workspace_bytes(p) == 64 * 24 * 25 * 2        # 256-byte aligned already
    a = BSWAP.applicability(_p(direction="B", **dict(B_CASES["b_1x1"], strides=2)))
    assert not a and "stride 1 only" in a.reason
    a = BSWAP.applicability(_p(direction="B", **dict(B_CASES["b_pad0"], pads=3)))
    assert not a and "reach" in a.reason
    a = BSWAP.applicability(_p(direction="B", **dict(B_CASES["b_pad0"], k=96)))
    assert not a and "96 input channels" in a.reason
    a = BSWAP.applicability(_p(direction="B", **dict(B_CASES["b_pad0"], c=136)))
    assert not a and "136 output channels" in a.reason
    # a solution asked for a problem it does not take: one clear error, before any compile
    for solver, p in ((BSWAP, _p(direction="B", **dict(B_CASES["b_1x1"], strides=2))),
                      (SWAP, _p(**dict(CASES["k72_tail"], c=40)))):
        with pytest.raises(ValueError, match="does not apply"):
            solver.get_solution(p)


def test_claims(no_gpu_arch):
    for kw in CASES.values():
        for dt in ("FP16", "BF16"):
            assert SWAP.applicability(_p(dt, **kw)), kw


@pytest.mark.parametrize("kw,dt,why", [
    (dict(CASES["k72_tail"], k=136), "FP16", "136 output channels"),
    (dict(CASES["k72_tail"], c=40), "FP16", "40 input channels"),
    (CASES["k72_tail"], "FP32", "FP32"),
    (dict(CASES["k72_tail"], k=68), "FP16", "K=68"),
])
def test_rejections(no_gpu_arch, kw, dt, why):
    p = ProblemDescription.make("F", layout="NHWC", dtype=dt, math="tf32" if dt == "FP32" else "strict", **kw)
    a = SWAP.applicability(p)
    assert not a and why in a.reason
    assert not SWAP.applicability(ProblemDescription.make("F", layout="NCHW", dtype="FP16", **CASES["k8"]))


def test_configs(no_gpu_arch):
    p = _p(**CASES["many_tiles"])
    space = list(SWAP.config_space(p))
    assert {c["BM"] for c in space} == {128, 256} and {c["COOP"] for c in space} == {0}     # 64 channels: no COOP
    assert all(sw.smem_bytes(c) + 16 * c["STAGES"] <= hb.SMEM_LIMIT for c in space)
    assert {"BM": 256, "STAGES": 4, "COOP": 0} in space and {"BM": 256, "STAGES": 5, "COOP": 0} not in space
    assert {"BM": 128, "STAGES": 8, "COOP": 0} in space
    assert SWAP.find_configs(p)[0] is None and len(SWAP.find_configs(p)) == 2
    assert not SWAP.is_valid_config(p, {"BM": 192, "STAGES": 4, "COOP": 0})
    assert not SWAP.is_valid_config(p, {"BM": 256, "STAGES": 4})
    assert SWAP.workspace_bytes(p) == 0
    big = _p(n=120, c=64, k=64, in_size=(512, 512), filter_size=3, pads=1)
    assert SWAP.default_config(big) == {"BM": 256, "STAGES": 4, "COOP": 0}
    assert SWAP.default_config(_p(**CASES["k8"]))["BM"] == 128
    # more than 64 channels: cooperative 128-channel tiles (fewer stages fit) among the alternates
    wide = _p(**CASES["k128_28"])
    assert {c["COOP"] for c in SWAP.config_space(wide)} == {0, 1}
    assert SWAP.default_config(wide) == {"BM": 128, "STAGES": 8, "COOP": 0}
    assert SWAP.find_configs(wide)[1:] == [{"BM": 256, "STAGES": 4, "COOP": 0}, {"BM": 128, "STAGES": 6, "COOP": 1}]
    assert sw.tiles(wide, {"BM": 128, "COOP": 1}) == 49 and sw.tiles(wide, {"BM": 128, "COOP": 0}) == 98
    sol = SWAP.get_solution(big)
    assert sol.kernels[0].block == (384, 1, 1) and sol.kernels[0].grid[0] == hb.sm_count()


def test_nvrtc_sm90a_every_config(no_gpu_arch):
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    for dt in ("FP16", "BF16"):
        p = _p(dt, **CASES["k72_tail"])
        for cfg in SWAP.config_space(p):
            assert nvrtc_compile(SWAP.get_solution(p, cfg).kernels[0], arch="sm_90")[:4] == b"\x7fELF"
        for k in BSWAP.get_solution(_p(dt, direction="B", **B_CASES["b_dil"])).kernels:
            assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF"


# -- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_swap_find_configs(name, dt):
    """The default and the alternate (both tile widths) of every case."""
    p = _p(dt, **CASES[name])
    for cfg in SWAP.find_configs(p):
        err, tol = check_solver(SWAP, p, seed=zlib.crc32(f"{name}{cfg}".encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
def test_swap_every_config():
    """Every (BM, STAGES, COOP) on a problem of several tiles per block, and on one of two channel tiles."""
    for name in ("many_tiles", "k72_tail"):
        p = _p("FP16", **CASES[name])
        for cfg in SWAP.config_space(p):
            err, tol = check_solver(SWAP, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
            assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(B_CASES))
def test_swap_bwd(name, dt):
    """Backward data's default and alternate configs (the filter rewritten in a poisoned-free workspace each run)."""
    p = _p(dt, direction="B", **B_CASES[name])
    for cfg in BSWAP.find_configs(p):
        err, tol = check_solver(BSWAP, p, seed=zlib.crc32(f"{name}{cfg}".encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


def test_recipes(no_gpu_arch):
    """The launches a caller replays (miofind.torch's C++ path, which encodes the tensor maps itself; on the GPU:
    tests/torch/test_fast.py's tensor-map cases): the forward one launch on (a, b, out) with the maps of a and b;
    backward data the flip from b into the workspace, then the forward kernel on (a, workspace, out) with the map of
    the rewritten filter at the workspace."""
    from gpu_helpers import FakeKernel
    from miofind.launch import A, B, OUT, WS
    p = _p(**CASES["k72_tail"])
    steps, _, ws = SWAP.get_solution(p).invoker_factory([FakeKernel()]).recipe
    assert not ws and len(steps) == 1 and steps[0][1] == ((A, 0), (B, 0), (OUT, 0))
    assert [m[:2] for m in steps[0][2]] == [(A, 0), (B, 0)]
    sol = BSWAP.get_solution(_p(direction="B", **B_CASES["b_dil"]))
    steps, _, ws = sol.invoker_factory([FakeKernel() for _ in sol.kernels]).recipe
    assert ws and [s[1] for s in steps] == [((B, 0), (WS, 0)), ((A, 0), (WS, 0), (OUT, 0))]
    assert [m[:2] for m in steps[1][2]] == [(A, 0), (WS, 0)]

