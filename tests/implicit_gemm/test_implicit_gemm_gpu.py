"""Implicit-GEMM family: what it claims over tests/shapes.py x dtype (FP32, FP16, BF16, FP32 with TF32
math) x layout, pinned on the CPU, and on the GPU every claimed case against the float64 reference
with poisoned outputs. Family checks: sampled tile configs (stages, BK, thread/warp tiles, vector widths,
the 16-bit register path), mixed layouts, transposed problems, backward-weights split-K, pointwise
vector loads, multi-tile GEMMs, alignment errors; and CPU checks of the index algebra (numpy
emulation from the kernels' own macros) and of the thread mappings."""

import itertools
import zlib

import numpy as np
import pytest

from gpu_helpers import STRICT, accepted, assert_claims_pinned, check_claim, check_solver, claim_grid, params
from shapes import DTYPES, SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import solvers

IDS = ("ConvImplicitGemmFwd", "ConvImplicitGemmBwd", "ConvImplicitGemmWrw")
IGEMM = [s for s in solvers() if s.family == "implicit_gemm"]
BY_DIR = {d: s for s in IGEMM for d in s.directions}
MODES = [*STRICT, ("FP32", "tf32")]
GRID = claim_grid(IGEMM, SHAPES, MODES)
# what the claim grid's solvers accept: how many cases each, and which (gpu_helpers.claims_digest)
ACCEPTED = {"ConvImplicitGemmFwd": 104, "ConvImplicitGemmBwd": 104, "ConvImplicitGemmWrw": 104}
ACCEPTED_DIGEST = "9ac9e5fe"


def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode()) & 0xFFFF


def _make(d, dt="FP32", mode="strict", **kw):
    return ProblemDescription.make(d, dtype=dt, math=mode, **kw)


def _run(solver, p, config=None, seed=0):
    a = solver.applicability(p)
    assert a, f"{solver.id} rejected {p.key()}: {a.reason}"
    err, tol = check_solver(solver, p, seed=seed, config=config)
    assert err <= tol, f"{solver.id} {p.key()} config={config}: relative error {err:.3g} > {tol:.1g}"
    return err


def test_family_registered():
    assert sorted(s.id for s in IGEMM) == sorted(IDS)


def test_igemm_claims_pinned():
    """Implicit GEMM takes every case of the grid."""
    assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST)


@pytest.mark.gpu
@pytest.mark.parametrize("claim", params(accepted(GRID)))
def test_igemm_solver(claim):
    check_claim(claim)


# -- tile configs -------------------------------------------------------------------------------
# A problem with several tiles in M, N and K (so that the pipeline wraps and edges are partial).
MULTI = dict(n=2, c=40, k=72, in_size=(15, 13), filter_size=3, pads=1)


def _sample_configs(solver, p, count=6):
    space = list(solver.config_space(p))
    assert space, f"{solver.id}: empty config space for {p.key()}"
    rng = np.random.default_rng(_seed(solver.id, p.key()))
    picks = {0, len(space) - 1, *rng.choice(len(space), size=min(count, len(space)), replace=False).tolist()}
    return [space[i] for i in sorted(picks)]


CFG_CASES = [(d, dt, mode, lay) for d in "FBW" for dt, mode in MODES for lay in ("NCHW", "NHWC")]


@pytest.mark.gpu
@pytest.mark.parametrize("d,dtype,mode,layout", CFG_CASES, ids=[f"{d}-{dt}-{m}-{lay}" for d, dt, m, lay in CFG_CASES])
def test_igemm_config_sample(d, dtype, mode, layout):
    s = BY_DIR[d]
    p = _make(d, dtype, mode, layout=layout, **MULTI)
    for cfg in _sample_configs(s, p):
        assert s.is_valid_config(p, cfg)
        _run(s, p, cfg, seed=_seed(d, dtype, layout, sorted(cfg.items())))


@pytest.mark.gpu
@pytest.mark.parametrize("d", "FBW")
@pytest.mark.parametrize("dtype,mode", MODES)
def test_igemm_stages_and_bk(d, dtype, mode):
    """Every pipeline depth and K step the space offers, on an odd-sized problem."""
    s = BY_DIR[d]
    p = _make(d, dtype, mode, **SHAPES["3x3_odd"])
    seen = set()
    for cfg in s.config_space(p):
        key = (cfg["STAGES"], cfg["BK"])
        if key in seen:
            continue
        seen.add(key)
        _run(s, p, cfg)
    assert len(seen) >= 2


# -- layouts, transposed, special paths ---------------------------------------------------------
MIXED = [("NCHW", "NHWC", "NCHW"), ("NHWC", "NCHW", "NHWC"), ("NCHW", "NCHW", "NHWC"), ("NHWC", "NHWC", "NCHW")]


@pytest.mark.gpu
@pytest.mark.parametrize("d", "FBW")
@pytest.mark.parametrize("dtype,mode", MODES)
@pytest.mark.parametrize("lays", MIXED, ids=["-".join(m) for m in MIXED])
def test_igemm_mixed_layouts(d, dtype, mode, lays):
    p = ProblemDescription.make(d, n=2, c=8, k=12, in_size=(9, 10), filter_size=3, pads=1, strides=(2, 1),
                                groups=2, layout=lays[0], w_layout=lays[1], out_layout=lays[2], dtype=dtype, math=mode)
    _run(BY_DIR[d], p)


@pytest.mark.gpu
@pytest.mark.parametrize("d", "FBW")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ("NCHW", "NHWC"))
def test_igemm_transposed(d, dtype, layout):
    t = ProblemDescription.make(d, n=2, c=6, k=4, in_size=(7, 6), filter_size=3, pads=1, strides=2,
                                transposed=True, output_padding=1, groups=2, dtype=dtype, layout=layout)
    _run(BY_DIR[t.as_conv().direction], t)


@pytest.mark.gpu
@pytest.mark.parametrize("d", "FBW")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ("NCHW", "NHWC", "NCDHW"))
def test_igemm_pointwise_vectors(d, dtype, layout):
    """1x1 stride-1 problems whose pixel count allows vector loads along pixels (NCHW)."""
    size = (4, 4, 6) if layout == "NCDHW" else (8, 8)
    p = _make(d, dtype, layout=layout, n=2, c=16, k=32, in_size=size, filter_size=1)
    _run(BY_DIR[d], p)


# (shape, x/w/y layouts) of the same rank
XPOSE_LAYOUTS = {2: {"NCHW": ("NCHW",) * 3, "NCHW-NHWC-NCHW": ("NCHW", "NHWC", "NCHW")},
                 3: {"NCDHW": ("NCDHW",) * 3}}
XPOSE_CASES = [pytest.param(shape, lays, id=f"{shape}-{name}")
               for shape in ("3x3_odd", "stride2", "n1_1x1", "3d_stride2")
               for name, lays in XPOSE_LAYOUTS[len(SHAPES[shape]["in_size"])].items()]
XPOSE_MODES = [("FP16", "strict"), ("BF16", "strict"), ("FP32", "tf32")]


def _xpose_configs(d, dtype, mode, shape, lays):
    """The problem and its default configuration with XPOSE = 0 and, where valid, 1."""
    s = BY_DIR[d]
    p = ProblemDescription.make(d, layout=lays[0], w_layout=lays[1], out_layout=lays[2], dtype=dtype, math=mode,
                                **SHAPES[shape])
    cfgs = [dict(s.default_config(p), XPOSE=xp) for xp in (0, 1)]
    return s, p, [cfg for cfg in cfgs if s.is_valid_config(p, cfg)]


@pytest.mark.parametrize("shape,lays", XPOSE_CASES)
def test_igemm_xpose_configs(shape, lays):
    """Channels-first problems are claimed and XPOSE = 0 is always a valid configuration."""
    for d, (dtype, mode) in itertools.product("FBW", XPOSE_MODES):
        s, p, cfgs = _xpose_configs(d, dtype, mode, shape, lays)
        assert s.applicability(p) and cfgs and cfgs[0]["XPOSE"] == 0, p.key()


@pytest.mark.gpu
@pytest.mark.parametrize("d", "FBW")
@pytest.mark.parametrize("dtype,mode", XPOSE_MODES)
@pytest.mark.parametrize("shape,lays", XPOSE_CASES)
def test_igemm_xpose(d, dtype, mode, shape, lays):
    """XPOSE = 0 and 1 (channels-last copies in the workspace) on channels-first tensors."""
    s, p, cfgs = _xpose_configs(d, dtype, mode, shape, lays)
    for cfg in cfgs:
        _run(s, p, cfg)


@pytest.mark.gpu
@pytest.mark.parametrize("d", "FBW")
def test_igemm_strided_dilated_3d(d):
    for dt in DTYPES:
        for lay in ("NCDHW", "NDHWC"):
            p = _make(d, dt, layout=lay, n=2, c=6, k=9, in_size=(6, 7, 8), filter_size=(2, 3, 2), pads=(1, 0, 2),
                      strides=(2, 1, 3), dilations=(1, 2, 1), groups=3)
            _run(BY_DIR[d], p)


def _splitk(splitk, dtype):
    s = BY_DIR["W"]
    p = _make("W", dtype, **MULTI)
    return s, p, dict(s.default_config(p), SPLITK=splitk)


@pytest.mark.parametrize("splitk", [1, 2, 3, 7, 64])
@pytest.mark.parametrize("dtype", DTYPES)
def test_igemm_wrw_splitk_workspace(splitk, dtype):
    from miofind.solvers.implicit_gemm_base import ImplicitGemmPlan, split_geometry

    s, p, cfg = _splitk(splitk, dtype)
    assert s.is_valid_config(p, cfg)
    eff, _ = split_geometry(ImplicitGemmPlan.of(p, cfg), cfg)
    # split-K partials need workspace; so does the XPOSE channels-last staging of 16-bit inputs
    assert (s.get_solution(p, cfg).workspace_bytes > 0) == (eff > 1 or bool(cfg.get("XPOSE")))


@pytest.mark.gpu
@pytest.mark.parametrize("splitk", [1, 2, 3, 7, 64])
@pytest.mark.parametrize("dtype", DTYPES)
def test_igemm_wrw_splitk(splitk, dtype):
    s, p, cfg = _splitk(splitk, dtype)
    _run(s, p, cfg)


@pytest.mark.gpu
def test_igemm_large_multi_tile():
    """A ResNet-like layer (batch 4): many blocks, full tiles, FP32/FP16/BF16, both layouts."""
    for d in "FBW":
        for dt, mode in MODES:
            for lay in ("NCHW", "NHWC"):
                p = _make(d, dt, mode, layout=lay, n=4, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1)
                _run(BY_DIR[d], p)


@pytest.mark.gpu
def test_igemm_misaligned_input_rejected():
    import cupy

    from miofind.invokers import call, get_invoker

    s = BY_DIR["F"]
    p = _make("F", "FP16", layout="NHWC", n=1, c=16, k=16, in_size=(6, 6), filter_size=3, pads=1)
    cfg = s.default_config(p)
    inv, _ = get_invoker(p, s.id, cfg)
    xs, ws, ys = p.io_shapes()
    x = cupy.zeros(int(np.prod(xs)) + 1, dtype=cupy.float16)[1:].reshape(xs)
    w = cupy.zeros(ws, dtype=cupy.float16)
    y = cupy.zeros(ys, dtype=cupy.float16)
    with pytest.raises(ValueError, match="aligned"):
        call(inv, p, x, w, y, None)


# -- CPU checks of the algebra and the thread mappings -------------------------------------------
ALGEBRA = dict(SHAPES, g3=dict(n=2, c=6, k=9, in_size=(8, 7), filter_size=(3, 2), pads=(2, 1), strides=(3, 2),
                               dilations=(1, 2), groups=3))


@pytest.mark.parametrize("shape", sorted(ALGEBRA))
def test_igemm_emulated_algebra(shape):
    from miofind.reference import conv_reference
    from implicit_gemm.emulate import emulate

    kw = ALGEBRA[shape]
    nd = len(kw["in_size"])
    lays = ("NCDHW", "NDHWC") if nd == 3 else ("NCHW", "NHWC")
    rng = np.random.default_rng(0)
    for (lx, lw, ly), d, dt in itertools.product(itertools.product(lays, repeat=3), "FBW", ("FP32", "FP16")):
        p = ProblemDescription.make(d, layout=lx, w_layout=lw, out_layout=ly, dtype=dt, **kw)
        sa, sb, _ = p.io_shapes()
        a, b = rng.uniform(-1, 1, sa), rng.uniform(-1, 1, sb)
        ref = conv_reference(p, a, b)
        got = emulate(p, a, b)
        assert np.allclose(got, ref, rtol=1e-12, atol=1e-12), (p.key(), np.abs(got - ref).max())


@pytest.mark.parametrize("d", "FBW")
def test_igemm_thread_mappings(d):
    from implicit_gemm.emulate import check_tiles

    for (dt, mode), lay in itertools.product(MODES, ("NCHW", "NHWC")):
        p = _make(d, dt, mode, layout=lay, **MULTI)
        for cfg in BY_DIR[d].config_space(p):
            check_tiles(p, cfg)
