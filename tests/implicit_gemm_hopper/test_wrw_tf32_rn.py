"""The Hopper TF32 backward-weights solver (ConvImplicitGemmHopperWrwTf32Rn): dy and x land MN-major by the copy engine;
the consumers load dy's register fragments and transpose x's im2col tile into a K-major one, rounding every element by
cvt.rna. CPU: what it claims and rejects, configs, shared memory, splits (even K tiles a chunk), workspace, recipes,
NVRTC builds of every config for sm_90a and ptxas's verdict on the wgmma pipeline. GPU: tails in output channels,
columns and the reduction (an odd count of K tiles: the zero filler), strides, dilation, padding, split and unsplit,
every config on two problems, against the float64 reference at the TF32 tolerance with poisoned outputs; and that the
operands are rounded, not truncated."""

import zlib

import numpy as np
import pytest

from gpu_helpers import FakeKernel, check_solver
from nvrtc_check import nvrtc_or_skip, ptxas_log
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, registry
from miofind.solvers import implicit_gemm_hopper_base as hb
from miofind.solvers import implicit_gemm_hopper_wrw_tf32_rn as wt

WRW = get_solver("ConvImplicitGemmHopperWrwTf32Rn")

CASES = {
    # K not a multiple of 64; 9 x 32 columns (a tile's columns past N); J = 2*15*13 = 390: 13 K tiles (odd: filler)
    "k72_tail": dict(n=2, c=32, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "k4": dict(n=3, c=64, k=4, in_size=(9, 7), filter_size=3, pads=1),
    "1x1_s2": dict(n=2, c=96, k=136, in_size=(14, 13), filter_size=1, strides=2),
    "1x1": dict(n=4, c=128, k=256, in_size=(14, 14), filter_size=1),
    "5x5_dil": dict(n=2, c=32, k=24, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    "7x7_s2": dict(n=2, c=32, k=64, in_size=(30, 29), filter_size=7, pads=3, strides=2),
    "pad0": dict(n=2, c=64, k=64, in_size=(12, 12), filter_size=3),
    # a long reduction: split by default (J = 8 * 32 * 32 = 8192, 256 K tiles)
    "deep": dict(n=8, c=64, k=128, in_size=(32, 32), filter_size=3, pads=1),
    "r50_7x7": dict(n=4, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1),
}


def _p(dt="FP32", math="tf32", **kw):
    return ProblemDescription.make("W", layout="NHWC", dtype=dt, math=math, **kw)


def test_registered():
    rows = {r.id: r.number for r in registry()}
    assert rows["ConvImplicitGemmHopperWrwTf32Rn"] == 47 and WRW.family == "implicit_gemm_hopper"
    assert WRW.directions == frozenset("W") and WRW.dtypes == frozenset({"FP32"})


def test_claims(no_gpu_arch):
    for kw in CASES.values():
        assert WRW.applicability(_p(**kw)), kw


@pytest.mark.parametrize("kw,dt,math,why", [
    (CASES["k72_tail"], "FP32", "strict", "strict math"),
    (CASES["k72_tail"], "FP16", "strict", "FP16"),
    (dict(CASES["k72_tail"], c=48), "FP32", "tf32", "48 input channels"),
    (dict(CASES["k72_tail"], k=70), "FP32", "tf32", "K=70"),
    (dict(CASES["k72_tail"], groups=2, c=64, k=64), "FP32", "tf32", "groups"),
])
def test_rejections(no_gpu_arch, kw, dt, math, why):
    a = WRW.applicability(_p(dt, math, **kw))
    assert not a and why in a.reason, a
    assert not WRW.applicability(ProblemDescription.make("W", layout="NCHW", dtype="FP32", math="tf32",
                                                         **CASES["k4"]))
    assert not WRW.applicability(ProblemDescription.make("F", layout="NHWC", dtype="FP32", math="tf32",
                                                         **CASES["k4"]))


def test_split_geometry():
    """Chunks of an even count of K tiles (the kernel takes them in pairs), none empty; the last may be shorter."""
    p = _p(**CASES["deep"])
    assert wt.j_tiles(p) == 256
    for s in range(1, 80):
        eff, per = wt.split_geometry(p, s)
        assert per % 2 == 0 and (eff - 1) * per < 256 <= eff * per
    odd = _p(**CASES["k72_tail"])
    assert wt.j_tiles(odd) == 13 and wt.split_geometry(odd, 1) == (1, 14) and wt.split_geometry(odd, 3) == (3, 6)


def test_configs(no_gpu_arch):
    p = _p(**CASES["deep"])
    space = list(WRW.config_space(p))
    assert {(c["WG_M"], c["BN"]) for c in space} == {(1, 128), (2, 128), (1, 256), (2, 256)}
    assert all(wt.smem_bytes(c) + 16 * c["STAGES"] <= hb.SMEM_LIMIT and WRW.is_valid_config(p, c) for c in space)
    assert {"WG_M": 2, "BN": 256, "STAGES": 3, "SPLITK": 1} in space
    assert not WRW.is_valid_config(p, {"WG_M": 2, "BN": 256, "STAGES": 4, "SPLITK": 1})     # 240 KiB
    assert not WRW.is_valid_config(p, {"WG_M": 2, "BN": 64, "STAGES": 4, "SPLITK": 1})
    assert not WRW.is_valid_config(p, {"WG_M": 2, "BN": 128, "STAGES": 4})
    d = WRW.default_config(p)
    assert (d["WG_M"], d["BN"], d["STAGES"]) == (2, 256, 3) and d["SPLITK"] > 1
    assert [(c["WG_M"], c["BN"], c["STAGES"]) for c in WRW.alternatives(p)] == [(1, 128, 4), (2, 128, 4), (1, 256, 4)]
    assert (lambda c: (c["WG_M"], c["BN"]))(WRW.default_config(_p(**CASES["k4"]))) == (1, 256)       # K = 4, N = 576
    assert (lambda c: (c["WG_M"], c["BN"]))(WRW.default_config(_p(**CASES["pad0"]))) == (1, 256)     # K = 64
    assert (lambda c: (c["WG_M"], c["BN"]))(WRW.default_config(_p(**CASES["1x1"]))) == (2, 128)      # N = 128
    assert WRW.find_configs(p)[0] is None and len(WRW.find_configs(p)) == 4
    # the workspace: the split's FP32 partial planes, 256-byte aligned; none unsplit
    eff = wt.split_geometry(p, d["SPLITK"])[0]
    assert WRW.workspace_bytes(p) == eff * 128 * 576 * 4
    assert WRW.workspace_bytes(p, dict(d, SPLITK=1)) == 0
    sol = WRW.get_solution(p)
    assert [k.name for k in sol.kernels] == ["igemm_hopper_wrw_tf32_rn", "igemm_hopper_wrw_tf32_reduce"]
    assert sol.kernels[0].block == (384, 1, 1) and sol.kernels[0].grid == (wt.tiles(p, d), eff, 1)
    assert ("JT_PER", str(wt.split_geometry(p, d["SPLITK"])[1])) in sol.kernels[0].macros
    with pytest.raises(ValueError, match="does not apply"):
        WRW.get_solution(_p(**dict(CASES["k72_tail"], c=48)))


def test_recipes(no_gpu_arch):
    """The launches a caller replays: unsplit, the kernel on (a, b, out, out); split, on (a, b, out, workspace) and the
    reduce on (workspace, out); the maps of a (dy) and b (x)."""
    from miofind.launch import A, B, OUT, WS
    p = _p(**CASES["deep"])
    for cfg, want in ((dict(WRW.default_config(p), SPLITK=1), [((A, 0), (B, 0), (OUT, 0), (OUT, 0))]),
                      (WRW.default_config(p), [((A, 0), (B, 0), (OUT, 0), (WS, 0)), ((WS, 0), (OUT, 0))])):
        sol = WRW.get_solution(p, cfg)
        steps, _, ws = sol.invoker_factory([FakeKernel() for _ in sol.kernels]).recipe
        assert [s[1] for s in steps] == want and bool(ws) == (len(want) == 2)
        assert [m[:2] for m in steps[0][2]] == [(A, 0), (B, 0)]


def test_nvrtc_sm90a_every_config(no_gpu_arch):
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    p = _p(**CASES["k72_tail"])
    for cfg in WRW.config_space(p):
        for k in WRW.get_solution(p, cfg).kernels:
            assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF"


def test_ptxas_keeps_the_wgmma_pipeline(no_gpu_arch):
    """No serialised register-A wgmma, no injected wait and no spill (ptxas's verbose log) for the tiles a find
    measures; the 2 x 256 tile, at 128 accumulators and 64 fragment registers a thread, is allowed a few bytes."""
    nvrtc_or_skip()
    p = _p(**CASES["deep"])
    for cfg in [WRW.default_config(p)] + WRW.alternatives(p):
        log = ptxas_log(WRW.get_solution(p, cfg).kernels[0])
        assert "Performance Loss" not in log and "is injected" not in log and "spill stores" in log, (cfg, log)
        if (cfg["WG_M"], cfg["BN"]) != (2, 256):
            assert " 0 bytes spill stores" in log, (cfg, log)


# -- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_find_configs(name):
    """The default (split where estimated) and the alternates, each unsplit too."""
    p = _p(**CASES[name])
    cfgs = [WRW.default_config(p)] + WRW.alternatives(p)
    for cfg in cfgs + [dict(c, SPLITK=1) for c in cfgs]:
        err, tol = check_solver(WRW, p, seed=zlib.crc32(f"{name}{cfg}".encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
def test_every_config():
    for name in ("k72_tail", "deep"):
        p = _p(**CASES[name])
        for cfg in WRW.config_space(p):
            err, tol = check_solver(WRW, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
            assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


# v = 1 + 2^-11 + 2^-12: its TF32 rounding (10 mantissa bits) is 1 + 2^-10, its truncation 1
V = 1.0 + 2.0**-11 + 2.0**-12
R = 1.0 + 2.0**-10


@pytest.mark.gpu
@pytest.mark.parametrize("split", [False, True])
def test_operands_rounded_not_truncated(split):
    """Every element of dy and x is V; a 1x1 filter over J = 2 x 9 x 9 pixels gives J x R^2 (rounded operands), where
    truncation would give J x 1 and exact FP32 J x V^2: a relative step of 2e-3 either way, far above the FP32 sums'
    rounding."""
    import cupy

    from miofind.api import Solution, run_solution
    p = _p(n=2, c=64, k=64, in_size=(9, 9), filter_size=1)
    sa, sb, so = p.io_shapes()
    a, b = cupy.full(sa, V, dtype=cupy.float32), cupy.full(sb, V, dtype=cupy.float32)
    out = cupy.full(so, np.nan, dtype=cupy.float32)
    cfg = dict(WRW.default_config(p), SPLITK=3 if split else 1)
    assert (wt.split_geometry(p, cfg["SPLITK"])[0] > 1) == split
    sol = Solution(WRW.id, WRW.algorithm, 0.0, WRW.workspace_bytes(p, cfg), cfg, False, p)
    run_solution(sol, a, b, out)
    got = cupy.asnumpy(out)
    assert np.allclose(got, 162 * R * R, rtol=1e-6, atol=0), (got.min(), got.max(), 162 * R * R)
