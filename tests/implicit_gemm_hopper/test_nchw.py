"""The Hopper family on NCHW tensors (solvers/implicit_gemm_hopper_nchw.py): channels-first operands transposed into
the workspace, the NHWC solver's kernels on the copies, the output transposed back. CPU: registration, claims (what
the NHWC solver claims of the channels-last view, NCHW only), the copies each direction makes and skips, the
workspace, the recipe's re-pointed launches and maps, NVRTC builds. GPU: every direction and data type against the
float64 reference on poisoned outputs, find configs included, and bit for bit the NHWC solver's output on the same
data permuted."""

import zlib

import numpy as np
import pytest

from gpu_helpers import FakeKernel, check_solver
from nvrtc_check import nvrtc_or_skip
from miofind.launch import A, B, OUT, WS
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, registry
from miofind.solvers import implicit_gemm_hopper_nchw as nc

# NCHW solver id -> (its NHWC solver's id, directions, data types with their math)
WRAPS = {
    "ConvImplicitGemmHopperFwdNchw": ("ConvImplicitGemmHopperFwd", "F", (("FP16", "strict"), ("BF16", "strict"))),
    "ConvImplicitGemmHopperBwdNchw": ("ConvImplicitGemmHopperBwd", "B", (("FP16", "strict"), ("BF16", "strict"))),
    "ConvImplicitGemmHopperWrwNchw": ("ConvImplicitGemmHopperWrw", "W", (("FP16", "strict"), ("BF16", "strict"))),
    "ConvImplicitGemmHopperFwdTf32RnNchw": ("ConvImplicitGemmHopperFwdTf32Rn", "F", (("FP32", "tf32"),)),
    "ConvImplicitGemmHopperBwdTf32RnNchw": ("ConvImplicitGemmHopperBwdTf32Rn", "B", (("FP32", "tf32"),)),
    "ConvImplicitGemmHopperFwdSwapNchw": ("ConvImplicitGemmHopperFwdSwap", "F", (("FP16", "strict"), ("BF16", "strict"))),
    "ConvImplicitGemmHopperBwdSwapNchw": ("ConvImplicitGemmHopperBwdSwap", "B", (("FP16", "strict"), ("BF16", "strict"))),
    "ConvImplicitGemmHopperWrwTf32RnNchw": ("ConvImplicitGemmHopperWrwTf32Rn", "W", (("FP32", "tf32"),)),
}

# 16-bit cases (C and K multiples of 8): tails in M, N and K, strides (backward data's phases), a strided 1x1 filter
# (its filter needs no copy; stride 1 is left to the GEMM solvers), dilation, several copy-engine K tiles
CASES = {
    "3x3_tail": dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "3x3_s2": dict(n=2, c=64, k=64, in_size=(16, 15), filter_size=3, pads=1, strides=2),
    "1x1_s2": dict(n=2, c=96, k=136, in_size=(14, 13), filter_size=1, strides=2),
    "5x5_dil": dict(n=2, c=16, k=24, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    "c8": dict(n=3, c=8, k=8, in_size=(7, 9), filter_size=3, pads=1),
    # channels not a multiple of 64 (x's 96, dy's 160): the copy engine's padded K tiles in every direction and every
    # find config (forward and backward data: each tap's K tiles padded, TAP_K; backward weights: W_PAD columns)
    "c96_k160": dict(n=8, c=96, k=160, in_size=(28, 28), filter_size=3, pads=1),
}
# FP32 with TF32 math (the rounding solvers: input channels of the forward a multiple of 32; backward data stride 1,
# dy's channels a multiple of 32, dx's of 4; backward weights x's channels a multiple of 32)
TF32_CASES = {
    "F": {"3x3_tail": dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1),
          "1x1_s2": dict(n=3, c=128, k=64, in_size=(9, 9), filter_size=1, strides=2),
          "7x7_s2": dict(n=2, c=32, k=64, in_size=(30, 29), filter_size=7, pads=3, strides=2)},
    "B": {"3x3_c72": dict(n=2, c=72, k=64, in_size=(15, 13), filter_size=3, pads=1),
          "3x3_k256": dict(n=3, c=128, k=256, in_size=(14, 14), filter_size=3, pads=1),
          "5x5_dil": dict(n=2, c=24, k=32, in_size=(17, 16), filter_size=5, pads=3, dilations=2)},
    # backward weights: x's channels a multiple of 32 (tails in dw's rows and columns; an odd count of K tiles)
    "W": {"3x3_tail": dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1),
          "3x3_s2": dict(n=2, c=64, k=64, in_size=(16, 15), filter_size=3, pads=1, strides=2),
          "1x1_s2": dict(n=3, c=128, k=64, in_size=(9, 9), filter_size=1, strides=2)},
}
# the swapped-operand solvers' narrow layers (test_swap.py): forward C a multiple of 64 and K <= 128 (a tail of 8
# channels, a strided 1x1 filter, dilation, several tiles per persistent block); backward data at stride 1, dy's channels
# a multiple of 64 and dx's at most 128 (dilation, no padding, three K tiles)
SWAP_CASES = {
    "F": {"k72_tail": dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1),
          "1x1_s2": dict(n=2, c=128, k=128, in_size=(14, 13), filter_size=1, strides=2),
          "5x5_dil": dict(n=2, c=64, k=24, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
          "many_tiles": dict(n=10, c=64, k=64, in_size=(64, 64), filter_size=3, pads=1)},
    "B": {"b_c72": dict(n=2, c=72, k=64, in_size=(15, 13), filter_size=3, pads=1),
          "b_dil": dict(n=2, c=24, k=64, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
          "b_pad0": dict(n=2, c=64, k=64, in_size=(12, 12), filter_size=3),
          "b_k192": dict(n=2, c=64, k=192, in_size=(32, 32), filter_size=3, pads=1)},
}


@pytest.fixture(autouse=True)
def swap_nchw_default(monkeypatch):
    """MIOFIND_HOPPER_SWAP_NCHW unset: the swapped-operand wrappers offered, as by default."""
    monkeypatch.delenv("MIOFIND_HOPPER_SWAP_NCHW", raising=False)


def _p(direction, dt="FP16", math="strict", layout="NCHW", **kw):
    return ProblemDescription.make(direction, layout=layout, dtype=dt, math=math, **kw)


def _shapes(sid, d, dt):
    """The cases of a wrapper's direction and data type: {name: ProblemDescription.make keywords}."""
    if "Swap" in sid:
        return SWAP_CASES[d]
    return TF32_CASES[d] if dt == "FP32" else CASES


def _first(sid, d, dt):
    """The name of a case every such wrapper takes with copies of x, w and y: tails in M, N and K."""
    if "Swap" in sid:
        return "k72_tail" if d == "F" else "b_c72"
    return "3x3_c72" if dt == "FP32" and d == "B" else "3x3_tail"


def _gpu_cases():
    return [(sid, d, dt, math, name) for sid, (_, d, modes) in WRAPS.items() for dt, math in modes
            for name in sorted(_shapes(sid, d, dt))]


def _kw(sid, d, dt, name):
    return _shapes(sid, d, dt)[name]



def test_registered():
    rows = {r.id: r.number for r in registry()}
    assert [rows[sid] for sid in WRAPS] == [40, 41, 42, 43, 44, 45, 46, 48]
    for sid, (inner, d, _) in WRAPS.items():
        s = get_solver(sid)
        assert s.family == "implicit_gemm_hopper" and s.inner.id == inner and s.directions == frozenset(d)
        assert s.kernel_files == (*get_solver(inner).kernel_files, "implicit_gemm_hopper_nchw.cu")
        assert s.deterministic == s.inner.deterministic and s.library_versions() == s.inner.library_versions()
        assert (s.algorithm, s.dtypes, s.configs_now) == (s.inner.algorithm, s.inner.dtypes, s.inner.configs_now)


@pytest.mark.parametrize("sid,d,dt,math,name", _gpu_cases())
def test_claims_what_the_nhwc_solver_claims_of_its_view(no_gpu_arch, sid, d, dt, math, name):
    s, inner = get_solver(sid), get_solver(WRAPS[sid][0])
    kw = _kw(sid, d, dt, name)
    assert s.applicability(_p(d, dt, math, **kw)) and inner.applicability(_p(d, dt, math, "NHWC", **kw))
    a = s.applicability(_p(d, dt, math, "NHWC", **kw))
    assert not a and "NCHW x, w and y only" in a.reason


@pytest.mark.parametrize("sid,d,kw,dt,math,why", [
    ("ConvImplicitGemmHopperFwdNchw", "F", dict(CASES["c8"], c=12), "FP16", "strict", "multiples of 8"),
    ("ConvImplicitGemmHopperFwdNchw", "F", dict(CASES["c8"], groups=2), "FP16", "strict", "groups"),
    ("ConvImplicitGemmHopperFwdNchw", "F", CASES["c8"], "FP32", "strict", "strict math"),
    ("ConvImplicitGemmHopperBwdTf32RnNchw", "B", dict(TF32_CASES["B"]["3x3_k256"], strides=2), "FP32", "tf32",
     "stride 1"),
    ("ConvImplicitGemmHopperFwdTf32RnNchw", "F", dict(TF32_CASES["F"]["1x1_s2"], c=48), "FP32", "tf32", "48 input"),
    # 1x1, stride 1, no padding: the GEMM solvers' in-place case, every direction
    ("ConvImplicitGemmHopperFwdNchw", "F", dict(CASES["1x1_s2"], strides=1), "FP16", "strict", "batched GEMM"),
    ("ConvImplicitGemmHopperBwdNchw", "B", dict(CASES["1x1_s2"], strides=1), "FP16", "strict", "batched GEMM"),
    ("ConvImplicitGemmHopperWrwNchw", "W", dict(CASES["1x1_s2"], strides=1), "BF16", "strict", "batched GEMM"),
    ("ConvImplicitGemmHopperFwdTf32RnNchw", "F", dict(TF32_CASES["F"]["1x1_s2"], strides=1), "FP32", "tf32",
     "batched GEMM"),
    # the swapped-operand wrappers: narrow layers only, backward data at stride 1
    ("ConvImplicitGemmHopperFwdSwapNchw", "F", dict(SWAP_CASES["F"]["k72_tail"], k=136), "FP16", "strict",
     "more than 128"),
    ("ConvImplicitGemmHopperBwdSwapNchw", "B", dict(SWAP_CASES["B"]["b_pad0"], pads=1, strides=2), "BF16", "strict",
     "stride 1 only"),
    # the transpose's grid: at most 65535 batches (here dy's [N][K][P*Q] with N = 70000)
    ("ConvImplicitGemmHopperBwdNchw", "B", dict(CASES["c8"], n=70000), "FP16", "strict", "transpose's grid"),
])
def test_rejections_name_the_reason(no_gpu_arch, sid, d, kw, dt, math, why):
    a = get_solver(sid).applicability(_p(d, dt, math, **kw))
    assert not a and why in a.reason, a.reason
    assert not get_solver(sid).applicability(_p(d, dt, math, "NHWC", w_layout="NCHW", **kw))


def test_switched_off(no_gpu_arch, monkeypatch):
    p = _p("F", **CASES["3x3_tail"])
    s = get_solver("ConvImplicitGemmHopperFwdNchw")
    monkeypatch.setenv("MIOFIND_HOPPER_NCHW", "0")
    a = s.applicability(p)
    assert not a and "MIOFIND_HOPPER_NCHW=0" in a.reason
    monkeypatch.setenv("MIOFIND_HOPPER_NCHW", "1")
    assert s.applicability(p)


@pytest.mark.parametrize("sid,d", [("ConvImplicitGemmHopperFwdSwapNchw", "F"), ("ConvImplicitGemmHopperBwdSwapNchw", "B")])
def test_swap_wrappers_switched_off(no_gpu_arch, monkeypatch, sid, d):
    p = _p(d, **SWAP_CASES[d][_first(sid, d, "FP16")])
    assert get_solver(sid).applicability(p)
    monkeypatch.setenv("MIOFIND_HOPPER_SWAP_NCHW", "0")
    a = get_solver(sid).applicability(p)
    assert not a and "MIOFIND_HOPPER_SWAP_NCHW=0" in a.reason
    assert get_solver(sid.replace("Swap", "")).applicability(p)      # the plain wrapper still takes it
    monkeypatch.setenv("MIOFIND_HOPPER_SWAP_NCHW", "1")
    monkeypatch.setenv("MIOFIND_HOPPER_NCHW", "0")                  # every NCHW wrapper off, these too
    a = get_solver(sid).applicability(p)
    assert not a and "MIOFIND_HOPPER_NCHW=0" in a.reason


def test_padded_case_takes_padded_copy_engine_configs(no_gpu_arch):
    """Every find config of the 16-bit wrappers on "c96_k160" loads padded K tiles (or W's padded columns) through
    the copy engine (64 deep, or F's and B's 32-deep alternates), so the GPU tests run those kernels on the transposed
    copies."""
    from miofind.solvers import implicit_gemm_hopper_base as hb
    from miofind.solvers import implicit_gemm_hopper_wrw as wrw

    for sid in ("ConvImplicitGemmHopperFwdNchw", "ConvImplicitGemmHopperBwdNchw", "ConvImplicitGemmHopperWrwNchw"):
        s = get_solver(sid)
        p = _p(WRAPS[sid][1], **CASES["c96_k160"])
        q = nc.channels_last(p)
        for cfg in s.find_configs(p):
            cfg = cfg or s.default_config(p)
            assert cfg["TMA"] in (1, 2), (sid, cfg)          # 2: 32-deep K tiles (F and B only)
            if p.direction == "W":
                assert wrw.gemm_cols(q, cfg) == 9 * 128 and wrw.padded_columns(q), (sid, cfg)
            else:
                assert hb.padded_channels(q, 96 if p.direction == "F" else 160), (sid, cfg)


def test_mixed_layouts_rejected(no_gpu_arch):
    p = ProblemDescription.make("F", layout="NCHW", out_layout="NHWC", dtype="FP16", **CASES["3x3_tail"])
    a = get_solver("ConvImplicitGemmHopperFwdNchw").applicability(p)
    assert not a and "NCHW x, w and y only" in a.reason


def test_copies_per_direction():
    """(role, batch, rows, cols) of each channels-first tensor; a 1x1 filter's KCYX is KYXC (no copy), and so is a
    tensor of one pixel."""
    kw = CASES["3x3_s2"]              # n 2, c 64, k 64, 16 x 15 in, 8 x 8 out, 3x3
    assert nc.transposes(_p("F", **kw)) == ((A, 2, 64, 240), (B, 64, 64, 9), (OUT, 2, 64, 64))
    assert nc.transposes(_p("B", **kw)) == ((A, 2, 64, 64), (B, 64, 64, 9), (OUT, 2, 240, 64))
    assert nc.transposes(_p("W", **kw)) == ((A, 2, 64, 64), (B, 2, 64, 240), (OUT, 64, 9, 64))
    one = dict(n=3, c=128, k=64, in_size=(9, 9), filter_size=1)
    assert [t[0] for t in nc.transposes(_p("F", **one))] == [A, OUT]
    assert [t[0] for t in nc.transposes(_p("W", **one))] == [A, B]
    assert nc.transposes(_p("F", n=4, c=64, k=64, in_size=(1, 1), filter_size=1)) == ()


def test_workspace_and_kernels(no_gpu_arch):
    s = get_solver("ConvImplicitGemmHopperFwdNchw")
    p = _p("F", **CASES["3x3_s2"])
    inner = s.inner.workspace_bytes(nc.channels_last(p))
    sol = s.get_solution(p)
    x, w, y = 2 * 64 * 240 * 2, 64 * 64 * 9 * 2, 2 * 64 * 64 * 2
    r = lambda v: -(-v // 256) * 256
    assert sol.workspace_bytes == s.workspace_bytes(p) == r(inner) + r(x) + r(w) + r(y)
    x = "igemm_hopper_nchw_xpose"
    assert [k.name for k in sol.kernels] == [x, x, "igemm_hopper_fwd", x]
    # 64 x 64 tiles: x [2][64][240] in 4 x 1 x 2, w [64][64][9] in 1 x 1 x 64, y back [2][64][64] in 1 x 1 x 2
    assert [k.grid for k in sol.kernels[:2]] + [sol.kernels[-1].grid] == [(4, 1, 2), (1, 1, 64), (1, 1, 2)]
    assert sol.config == s.inner.default_config(nc.channels_last(p)) == s.default_config(p)
    assert s.find_configs(p) == s.inner.find_configs(nc.channels_last(p))
    assert list(s.config_space(p)) == list(s.inner.config_space(nc.channels_last(p)))
    with pytest.raises(ValueError, match="does not apply"):
        s.get_solution(_p("F", "FP16", "strict", "NHWC", **CASES["3x3_s2"]))
    with pytest.raises(ValueError, match="config="):
        s.get_solution(p, dict(s.default_config(p), BN=96))


@pytest.mark.parametrize("sid", list(WRAPS))
def test_recipe_repoints_the_inner_launches(no_gpu_arch, sid):
    """The copies in, the NHWC solution's launches on the copies (its pointers and maps of a, b and out moved to the
    copies' workspace offsets, its own workspace at offset 0), the output copied back."""
    _, d, modes = WRAPS[sid]
    dt, math = modes[0]
    s = get_solver(sid)
    p = _p(d, dt, math, **_kw(sid, d, dt, _first(sid, d, dt)))
    sol = s.get_solution(p)
    isol = s.inner.get_solution(nc.channels_last(p), sol.config)
    isteps, ialign, _ = isol.invoker_factory([FakeKernel() for _ in isol.kernels]).recipe
    steps, align, ws = sol.invoker_factory([FakeKernel() for _ in sol.kernels]).recipe
    copies, total = nc.plan(p, isol.workspace_bytes)
    at = {c.role: c.offset for c in copies}
    assert ws and total == sol.workspace_bytes and len(steps) == len(isteps) + len(copies)
    assert [s[1] for s in steps[:2]] == [((A, 0), (WS, at[A])), ((B, 0), (WS, at[B]))]
    assert steps[-1][1] == ((WS, at[OUT]), (OUT, 0))
    move = lambda r, o: (WS, at[r] + o) if r in at else (r, o)
    for (_, roles, maps), (_, iroles, imaps) in zip(steps[2:-1], isteps):
        assert roles == tuple(move(*r) for r in iroles)
        assert [m[:2] for m in maps] == [move(*m[:2]) for m in imaps] and [m[2].fields for m in maps] == [m[2].fields for m in imaps]
    es = 4 if dt == "FP32" else 2
    assert align == (es, es, es, max(ialign[WS], 16))


def test_nvrtc_sm90a(no_gpu_arch):
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    for sid, (_, d, modes) in WRAPS.items():
        dt, math = modes[0]
        s = get_solver(sid)
        shapes = _shapes(sid, d, dt)
        for name in {_first(sid, d, dt), *({"3x3_s2", "1x1_s2", "3x3_k256"} & set(shapes))}:   # strided: other kernels
            for k in s.get_solution(_p(d, dt, math, **shapes[name])).kernels:
                assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF", (sid, name, k.name)


# -- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("sid,d,dt,math,name", _gpu_cases())
def test_against_float64(sid, d, dt, math, name):
    s = get_solver(sid)
    p = _p(d, dt, math, **_kw(sid, d, dt, name))
    for cfg in s.find_configs(p):
        err, tol = check_solver(s, p, seed=zlib.crc32(f"{sid}{name}{dt}{cfg}".encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{sid} {p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("sid,d,dt,math,name", [c for c in _gpu_cases() if c[2] != "BF16"])
def test_bit_for_bit_the_nhwc_solvers_output(sid, d, dt, math, name):
    """The same kernels in the same order on the transposed data: the NCHW output, permuted, is the NHWC solver's
    output bit for bit (a wrong copy, stride or offset cannot hide in a tolerance)."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.verify import poison, random_array

    s = get_solver(sid)
    kw = _kw(sid, d, dt, name)
    p, q = _p(d, dt, math, **kw), _p(d, dt, math, "NHWC", **kw)
    rng = cupy.random.default_rng(zlib.crc32(f"{sid}{name}".encode()) & 0xFFFF)
    sa, sb, so = p.io_shapes()
    a, b = random_array(sa, dt, rng), random_array(sb, dt, rng)
    cfg = s.default_config(p)
    # channels-first [N][C][...] (and the filter's [K][C][...]) as channels-last [N][...][C]
    cl = lambda t: cupy.ascontiguousarray(cupy.moveaxis(t, 1, -1))
    out = cupy.empty(so, dtype=a.dtype)
    poison(out, dt)
    run_solution(Solution(sid, s.algorithm, 0.0, s.workspace_bytes(p, cfg), cfg, False, p), a, b, out)
    ref = cupy.empty(q.io_shapes()[2], dtype=a.dtype)
    poison(ref, dt)
    run_solution(Solution(s.inner.id, s.algorithm, 0.0, s.inner.workspace_bytes(q, cfg), cfg, False, q),
                 cl(a), cl(b), ref)
    cupy.cuda.get_current_stream().synchronize()
    assert np.isfinite(cupy.asnumpy(out.astype(cupy.float32))).all(), "elements left unwritten"
    assert cupy.array_equal(cl(out).view(cupy.uint16 if dt != "FP32" else cupy.uint32),
                            ref.view(cupy.uint16 if dt != "FP32" else cupy.uint32))


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["FP16", "FP32"])
@pytest.mark.parametrize("b,r,s,shift", [(3, 70, 130, 0),      # edges in both, rows not a multiple of a vector
                                         (2, 64, 256, 0),      # whole tiles, 16-byte vectors both ways
                                         (2, 136, 72, 1),      # vector lengths, bases one element off 16 bytes
                                         (1, 8, 3, 0), (5, 3, 8, 0)])
def test_transpose_kernel(dt, b, r, s, shift):
    """igemm_hopper_nchw_xpose: [b][r][s] -> [b][s][r] exactly, the element-wise edges and unaligned bases included,
    nothing written outside the output (poisoned margins)."""
    import cupy

    from miofind.compile import compile_kernel

    t = cupy.float16 if dt == "FP16" else cupy.float32
    ki = nc.Copy(A, b, r, s, 0).kernel(dt)
    k = compile_kernel(ki)
    n = b * r * s
    src = cupy.random.default_rng(r * s).standard_normal(n + 2 * shift, dtype=cupy.float32).astype(t)
    dst = cupy.full(n + 2 * shift + 16, cupy.nan, dtype=t)
    k(ki.grid, ki.block, (src[shift:], dst[shift:], np.int32(r), np.int32(s)))
    want = src[shift:shift + n].reshape(b, r, s).transpose(0, 2, 1).reshape(-1)
    assert cupy.array_equal(dst[shift:shift + n], want)
    assert cupy.isnan(dst[:shift]).all() and cupy.isnan(dst[shift + n:]).all()
