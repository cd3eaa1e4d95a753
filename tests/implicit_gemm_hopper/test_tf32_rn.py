"""The Hopper TF32 solvers that round their operands to nearest (ConvImplicitGemmHopperFwdTf32Rn: the im2col tile of x
through registers and cvt.rna into the register-A wgmma, w rounded into the workspace first; and
ConvImplicitGemmHopperBwdTf32Rn: backward data at stride 1 as its forward of dy on the rewritten filter, rounded as it is
written). CPU: what they claim and reject (strict FP32, the 16-bit types, channel counts, strides), configs and shared
memory, workspace, recipes, NVRTC builds of every config for sm_90a. GPU: tails in pixels, output channels and the
reduction, strides, dilation, several tiles per persistent block, every config on one problem, against the float64
reference at the TF32 tolerance with poisoned outputs; and that the operands are rounded, not truncated: inputs whose
TF32 rounding and truncation differ give the rounded products exactly. They are on by default (no
MIOFIND_HOPPER_TF32)."""

import zlib

import numpy as np
import pytest

from gpu_helpers import FakeKernel, check_solver
from nvrtc_check import nvrtc_or_skip, ptxas_log
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, registry
from miofind.solvers import implicit_gemm_hopper_base as hb
from miofind.solvers import implicit_gemm_hopper_fwd_tf32_rn as rn

FWD = get_solver("ConvImplicitGemmHopperFwdTf32Rn")
BWD = get_solver("ConvImplicitGemmHopperBwdTf32Rn")

CASES = {
    # pixels not a multiple of a tile; output channels past a 64-channel tile; several K tiles
    "k72_tail": dict(n=2, c=32, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "k4": dict(n=3, c=64, k=4, in_size=(9, 7), filter_size=3, pads=1),
    "1x1_s2": dict(n=2, c=96, k=136, in_size=(14, 13), filter_size=1, strides=2),
    "1x1": dict(n=4, c=128, k=256, in_size=(14, 14), filter_size=1),
    "5x5_dil": dict(n=2, c=32, k=24, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    "7x7_s2": dict(n=2, c=32, k=64, in_size=(30, 29), filter_size=7, pads=3, strides=2),
    # more tiles than blocks: each persistent block's two warpgroups take several tiles in turn
    "many_tiles": dict(n=10, c=64, k=128, in_size=(64, 64), filter_size=3, pads=1),
    "r50_7x7": dict(n=2, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1),
}

# backward data (c: dx's channels, a multiple of 4; k: dy's, a multiple of 32)
B_CASES = {
    "b_c72": dict(n=2, c=72, k=64, in_size=(15, 13), filter_size=3, pads=1),
    "b_k288": dict(n=2, c=260, k=288, in_size=(16, 16), filter_size=3, pads=1),
    "b_dil": dict(n=2, c=24, k=32, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    "b_1x1": dict(n=3, c=128, k=256, in_size=(14, 14), filter_size=1),
    "b_pad0": dict(n=2, c=64, k=64, in_size=(12, 12), filter_size=3),
}


def _p(direction="F", dt="FP32", math="tf32", **kw):
    return ProblemDescription.make(direction, layout="NHWC", dtype=dt, math=math, **kw)



def test_registered():
    rows = {r.id: r.number for r in registry()}
    assert rows["ConvImplicitGemmHopperFwdTf32Rn"] == 38 and FWD.family == "implicit_gemm_hopper"
    assert rows["ConvImplicitGemmHopperBwdTf32Rn"] == 39 and BWD.family == "implicit_gemm_hopper"


def test_claims_on_by_default(no_gpu_arch, monkeypatch):
    monkeypatch.delenv("MIOFIND_HOPPER_TF32", raising=False)
    for kw in CASES.values():
        assert FWD.applicability(_p(**kw)), kw
    for kw in B_CASES.values():
        assert BWD.applicability(_p("B", **kw)), kw
    # the truncating build stays off
    assert not get_solver("ConvImplicitGemmHopperFwd").applicability(_p(**CASES["k72_tail"]))


@pytest.mark.parametrize("solver,direction,kw,dt,math,why", [
    (FWD, "F", CASES["k72_tail"], "FP32", "strict", "strict math"),
    (FWD, "F", CASES["k72_tail"], "FP16", "strict", "FP16"),
    (FWD, "F", dict(CASES["k72_tail"], c=48), "FP32", "tf32", "48 input channels"),
    (FWD, "F", dict(CASES["k72_tail"], k=70), "FP32", "tf32", "K=70"),
    (BWD, "B", dict(B_CASES["b_1x1"], strides=2), "FP32", "tf32", "stride 1 only"),
    (BWD, "B", dict(B_CASES["b_pad0"], pads=3), "FP32", "tf32", "reach"),
    (BWD, "B", dict(B_CASES["b_pad0"], k=48), "FP32", "tf32", "48 input channels"),
])
def test_rejections(no_gpu_arch, solver, direction, kw, dt, math, why):
    a = solver.applicability(_p(direction, dt, math, **kw))
    assert not a and why in a.reason
    assert not solver.applicability(ProblemDescription.make(direction, layout="NCHW", dtype="FP32", math="tf32",
                                                            **CASES["k4"]))


def test_configs(no_gpu_arch):
    p = _p(**CASES["many_tiles"])
    space = list(FWD.config_space(p))
    assert {(c["WG_M"], c["BN"], c["WN"], c["CW"]) for c in space} == {
        (1, 64, 1, 2), (1, 128, 1, 2), (1, 256, 1, 2), (2, 64, 1, 2), (2, 128, 1, 2),      # both consumers, own rows
        (1, 128, 2, 2), (1, 256, 2, 2), (2, 128, 2, 2), (2, 256, 2, 2),                    # both, own channels
        (1, 64, 1, 1), (1, 128, 1, 1)}                                                     # one consumer, one m64 block
    one = {"WG_M": 1, "BN": 128, "WN": 1, "CW": 1, "STAGES": 4}     # 96 KiB: two blocks to an SM
    k = FWD.get_solution(p, one).kernels[1]
    assert k.block == (256, 1, 1) and k.grid[0] == 2 * hb.sm_count()
    assert FWD.get_solution(p, dict(one, STAGES=6)).kernels[1].grid[0] == hb.sm_count()
    assert all(rn.smem_bytes(c) + 16 * c["STAGES"] <= hb.SMEM_LIMIT for c in space)
    assert {"WG_M": 1, "BN": 128, "WN": 1, "CW": 2, "STAGES": 7} in space and {"WG_M": 1, "BN": 128, "WN": 1, "CW": 2, "STAGES": 8} not in space
    assert {"WG_M": 2, "BN": 128, "WN": 1, "CW": 2, "STAGES": 4} in space and {"WG_M": 1, "BN": 256, "WN": 1, "CW": 2, "STAGES": 5} not in space
    assert FWD.default_config(p) == {"WG_M": 1, "BN": 128, "WN": 1, "CW": 2, "STAGES": 7}
    assert FWD.find_configs(p) == [None, {"WG_M": 1, "BN": 128, "WN": 1, "CW": 1, "STAGES": 8},
                                   {"WG_M": 1, "BN": 256, "WN": 1, "CW": 2, "STAGES": 4}]
    # 128 x 256 tiles for a long reduction (32 K tiles or more) where they still give most SMs one
    big = _p(n=32, c=1024, k=512, in_size=(14, 14), filter_size=1)
    assert FWD.default_config(big) == {"WG_M": 1, "BN": 256, "WN": 1, "CW": 2, "STAGES": 4}
    assert FWD.default_config(_p(n=32, c=256, k=512, in_size=(28, 28), filter_size=1))["BN"] == 128    # 8 K tiles
    # few pixels: one consumer's 64 x 128 tiles, two blocks an SM
    assert FWD.default_config(_p(**CASES["r50_7x7"])) == {"WG_M": 1, "BN": 128, "WN": 1, "CW": 1, "STAGES": 8}
    assert FWD.default_config(_p(**CASES["k4"]))["BN"] == 64
    assert not FWD.is_valid_config(p, {"WG_M": 2, "BN": 256, "WN": 1, "CW": 2, "STAGES": 4})
    assert not FWD.is_valid_config(p, {"WG_M": 2, "BN": 128, "WN": 1, "CW": 2})
    # the workspace: the rounded filter (backward data: the rewritten one), 256-byte aligned
    assert FWD.workspace_bytes(p) == 128 * 64 * 9 * 4
    assert BWD.workspace_bytes(_p("B", **B_CASES["b_dil"])) == 24 * 32 * 25 * 4
    sol = FWD.get_solution(p)
    assert [k.name for k in sol.kernels] == ["igemm_tf32_round", "igemm_hopper_fwd_tf32_rn"]
    assert sol.kernels[1].block == (384, 1, 1) and sol.kernels[1].grid[0] == min(hb.sm_count(), rn.tiles(p, FWD.default_config(p)))
    with pytest.raises(ValueError, match="does not apply"):
        FWD.get_solution(_p(**dict(CASES["k72_tail"], c=48)))
    with pytest.raises(ValueError, match="does not apply"):
        BWD.get_solution(_p("B", **dict(B_CASES["b_1x1"], strides=2)))
    flip = BWD.get_solution(_p("B", **B_CASES["b_dil"])).kernels[0]
    assert flip.name == "igemm_hopper_bwd_flip" and ("ROUND_TF32", "1") in flip.macros


def test_bwd_forward_view(no_gpu_arch):
    """dx as the forward of dy: dy's channels in, dx's out, pads (taps - 1) x dilation - pad, dx's size out."""
    p = _p("B", **B_CASES["b_dil"])
    f = BWD.forward_problem(p)
    assert (f.direction, f.c, f.k, f.in_size, f.out_size, f.pads) == ("F", 32, 24, p.out_size, p.in_size, (5, 5))


def test_recipes(no_gpu_arch):
    """The launches a caller replays: the rounding (forward) or the rewrite (backward data) from b into the workspace,
    then the kernel on (a, workspace, out) with the maps of a and of the workspace's filter."""
    from miofind.launch import A, B, OUT, WS
    for solver, p in ((FWD, _p(**CASES["k72_tail"])), (BWD, _p("B", **B_CASES["b_dil"]))):
        sol = solver.get_solution(p)
        steps, _, ws = sol.invoker_factory([FakeKernel() for _ in sol.kernels]).recipe
        assert ws and [s[1] for s in steps] == [((B, 0), (WS, 0)), ((A, 0), (WS, 0), (OUT, 0))]
        assert [m[:2] for m in steps[1][2]] == [(A, 0), (WS, 0)]


def test_nvrtc_sm90a_every_config(no_gpu_arch):
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    p = _p(**CASES["k72_tail"])
    for cfg in FWD.config_space(p):
        assert nvrtc_compile(FWD.get_solution(p, cfg).kernels[1], arch="sm_90")[:4] == b"\x7fELF"
    for k in FWD.get_solution(p).kernels + BWD.get_solution(_p("B", **B_CASES["b_dil"])).kernels:
        assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF"


# -- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_fwd_find_configs(name):
    p = _p(**CASES[name])
    for cfg in FWD.find_configs(p):
        err, tol = check_solver(FWD, p, seed=zlib.crc32(f"{name}{cfg}".encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
def test_fwd_every_config():
    for name in ("many_tiles", "k72_tail"):
        p = _p(**CASES[name])
        for cfg in FWD.config_space(p):
            err, tol = check_solver(FWD, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
            assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(B_CASES))
def test_bwd(name):
    p = _p("B", **B_CASES[name])
    for cfg in BWD.find_configs(p):
        err, tol = check_solver(BWD, p, seed=zlib.crc32(f"{name}{cfg}".encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


# v = 1 + 2^-11 + 2^-12: its TF32 rounding (10 mantissa bits) is 1 + 2^-10, its truncation 1
V = 1.0 + 2.0**-11 + 2.0**-12
R = 1.0 + 2.0**-10


@pytest.mark.gpu
@pytest.mark.parametrize("solver,direction", [(FWD, "F"), (BWD, "B")])
def test_operands_rounded_not_truncated(solver, direction):
    """Every element of both inputs is V; a 1x1 filter over C input channels gives C x R^2 (rounded operands), where
    truncation would give C x 1 and exact FP32 C x V^2: a relative step of 2e-3 either way, far above the FP32 sums'
    rounding (1e-6 here)."""
    import cupy

    from miofind.api import Solution, run_solution
    p = _p(direction, n=2, c=64, k=64, in_size=(9, 9), filter_size=1)
    sa, sb, so = p.io_shapes()
    a, b = cupy.full(sa, V, dtype=cupy.float32), cupy.full(sb, V, dtype=cupy.float32)
    out = cupy.full(so, np.nan, dtype=cupy.float32)
    sol = Solution(solver.id, solver.algorithm, 0.0, solver.workspace_bytes(p), solver.default_config(p), False, p)
    run_solution(sol, a, b, out)
    got = cupy.asnumpy(out)
    assert np.allclose(got, 64 * R * R, rtol=1e-6, atol=0), (got.min(), got.max(), 64 * R * R)


def test_ptxas_keeps_the_wgmma_pipeline(no_gpu_arch):
    """ptxas serialises register-A wgmma (or injects waits) where it cannot prove that no register of an in-flight group
    is written; it says so in its verbose log ("Potential Performance Loss", "wgmma.wait_group is injected"). The
    kernel must compile without either for every config, on K-tile counts even, odd and 1 (the odd count's peeled first
    K tile)."""
    nvrtc_or_skip()
    for c, f in ((256, 3), (32, 3), (32, 1)):
        p = _p(n=4, c=c, k=256, in_size=(14, 14), filter_size=f, pads=f // 2)
        for cfg in FWD.config_space(p):
            if cfg["STAGES"] != 3:
                continue
            log = ptxas_log(FWD.get_solution(p, cfg).kernels[1])
            assert "Performance Loss" not in log and "is injected" not in log and "spill stores" in log, (c, f, cfg, log)
            assert " 0 bytes spill stores" in log, (c, f, cfg, log)


@pytest.mark.gpu
def test_rounding_does_not_compound_over_a_deep_chain():
    """A chain of 24 variance-preserving 3x3 convolutions (as a deep network's, without its normalisation), each layer's
    output the next one's input, against the same chain in float64: truncated TF32 operands shrink every product
    toward zero, a bias that compounds layer after layer (about 6e-4 of gain a layer: bench/tf32_rounding.py), while
    rounded ones leave random errors that add in quadrature. The rounding forward ends within 3e-3 of float64; the
    truncating build (ConvImplicitGemmHopperFwd's TF32, the negative control) ends over 5x further off."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.reference import conv_reference
    from miofind.verify import random_array, rel_error
    p = _p(n=4, c=64, k=64, in_size=(16, 16), filter_size=3, pads=1)
    sa, sb, so = p.io_shapes()
    rng = cupy.random.default_rng(7)
    x0 = random_array(sa, "FP32", rng)
    ws = [random_array(sb, "FP32", rng, scale=float(np.sqrt(3.0 / (9 * 64)))) for _ in range(24)]

    def chain(solver):
        x = x0
        sol = Solution(solver.id, solver.algorithm, 0.0, solver.workspace_bytes(p), solver.default_config(p), False, p)
        for w in ws:
            out = cupy.full(so, np.nan, dtype=cupy.float32)
            run_solution(sol, x, w, out)
            x = out
        return x.astype(cupy.float64)

    x64 = x0.astype(cupy.float64)
    for w in ws:
        x64 = cupy.asarray(conv_reference(p, x64, w.astype(cupy.float64)))
    err_rn = rel_error(chain(FWD), x64)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MIOFIND_HOPPER_TF32", "1")
        err_trunc = rel_error(chain(get_solver("ConvImplicitGemmHopperFwd")), x64)
    assert err_rn < 3e-3, (err_rn, err_trunc)
    assert err_trunc > 5 * err_rn, (err_rn, err_trunc)


def test_index_width(no_gpu_arch):
    """32-bit offsets while every tensor has fewer than 2^31 - 1 elements, 64-bit from there (forward: x is the
    largest, n x 256 x 256 x 64; backward data: dy and dx alike), in the kernel and the filter's rounding alike."""
    for d, solver in (("F", FWD), ("B", BWD)):
        for n, index_t in ((511, "int"), (512, "long long")):
            p = _p(d, n=n, c=64, k=64, in_size=(256, 256), filter_size=3, pads=1)
            assert solver.applicability(p)
            got = {dict(k.macros)["INDEX_T"] for k in solver.get_solution(p).kernels if "INDEX_T" in dict(k.macros)}
            assert got == {index_t}, (d, n, got)
