"""Every registered solver's kernels compile with NVRTC for sm_90, over a matrix of problems.

Needs no GPU: `import cupy` works without a driver and CuPy's low-level NVRTC binding
(cupy_backends.cuda.libs.nvrtc: createProgram, compileProgram with -arch=sm_90, getCUBIN) compiles
without querying a device, with NVRTC from pip (nvidia-cuda-nvrtc). Where CuPy's NVRTC binding is missing this fails rather
than skips when CI=true, so CI cannot pass without compiling the kernels.
"""


import pytest

from nvrtc_check import nvrtc_or_skip
from shapes import DTYPES, SHAPES, layouts_for
from miofind.problem import ProblemDescription
from miofind.registry import solvers


def _matrix():
    probs = []
    for kw in SHAPES.values():
        for lay in layouts_for(kw):
            for dt in DTYPES:
                for d in "FBW":
                    probs.append(ProblemDescription.make(d, layout=lay, dtype=dt, **kw))
    # a tensor of 2^31 elements or more forces 64-bit indexing
    for d in "FBW":
        probs.append(ProblemDescription.make(d, n=64, c=256, k=64, in_size=(384, 384), filter_size=3, pads=1))
    probs.append(ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1))
    # a narrow channels-last FP16 layer (the swapped-operand Hopper forward and backward data), and one of 64-bit
    # indexing
    for d in "FB":
        probs.append(ProblemDescription.make(d, n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1,
                                             layout="NHWC", dtype="FP16"))
    probs.append(ProblemDescription.make("F", n=64, c=256, k=64, in_size=(384, 384), filter_size=3, pads=1,
                                         layout="NHWC", dtype="FP16"))
    # channels-last with wide groups: the float64 reference's warp-per-output forward kernel
    probs.append(ProblemDescription.make("F", n=2, c=64, k=8, in_size=(7, 7), filter_size=3, pads=1, layout="NHWC"))
    # FP32 channels-last with TF32 math: the Hopper TF32 forward and backward data (offered while the matrix is
    # built: _kernels)
    for kw in SHAPES.values():
        if "NHWC" in layouts_for(kw):
            for d in "FB":
                probs.append(ProblemDescription.make(d, layout="NHWC", dtype="FP32", math="tf32", **kw))
    # ... and with input channels of 32 (the rounding Hopper TF32 forward and backward data), one of 64-bit indexing
    for d in "FB":
        probs.append(ProblemDescription.make(d, n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1,
                                             layout="NHWC", dtype="FP32", math="tf32"))
    probs.append(ProblemDescription.make("F", n=64, c=256, k=64, in_size=(384, 384), filter_size=3, pads=1,
                                         layout="NHWC", dtype="FP32", math="tf32"))
    # ... backward weights (the rounding Hopper TF32 backward weights: x's channels % 32 == 0), channels-last and first,
    # split and unsplit, and a 64-bit-indexing one
    for lay in ("NHWC", "NCHW"):
        probs.append(ProblemDescription.make("W", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1,
                                             layout=lay, dtype="FP32", math="tf32"))
        probs.append(ProblemDescription.make("W", n=2, c=32, k=72, in_size=(15, 13), filter_size=3, pads=1,
                                             layout=lay, dtype="FP32", math="tf32"))
    probs.append(ProblemDescription.make("W", n=64, c=256, k=64, in_size=(384, 384), filter_size=3, pads=1,
                                         layout="NHWC", dtype="FP32", math="tf32"))
    # ... channels-first (the rounding solvers' NCHW wrappers)
    for d in "FB":
        probs.append(ProblemDescription.make(d, n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1,
                                             layout="NCHW", dtype="FP32", math="tf32"))
    # ... and a narrow channels-first FP16 layer (the swapped-operand solvers' NCHW wrappers)
    for d in "FB":
        probs.append(ProblemDescription.make(d, n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1,
                                             layout="NCHW", dtype="FP16"))
    # fused forward problems (bias, activation): the solvers with a fused epilogue
    for kw in SHAPES.values():
        for lay in layouts_for(kw):
            for dt in DTYPES:
                for bias, act in ((1, "none"), (1, "relu"), (0, "gelu"), (1, "gelu")):
                    probs.append(ProblemDescription.make("F", layout=lay, dtype=dt, bias=bias, activation=act, **kw))
    return probs


MAX_VARIANTS_PER_SOLVER = 16   # bounds CI time: sizes are macros, so every problem is a new build


def _kernels():
    with pytest.MonkeyPatch.context() as mp:     # the Hopper TF32 solvers offered (off by default) while it is built
        mp.setenv("MIOFIND_HOPPER_TF32", "1")
        return _collect()


COVERED = set()   # solvers with a problem of the matrix whose kernels are all among those compiled here


def _collect():
    seen = {}
    for s in solvers():
        if not getattr(s, "kernel_files", ()):
            continue   # library-only solvers (cuBLAS, cuDNN) compile nothing
        count = 0
        for p in _matrix():
            if count >= MAX_VARIANTS_PER_SOLVER and not (p.n >= 64):   # always keep the 64-bit-index problems
                continue
            if not s.applicability(p):
                continue
            COVERED.add(s.id)      # its kernels: new ones below, or already seen (an NCHW wrapper's, its NHWC solver's)
            variants = [s.get_solution(p)]
            if s.is_reference:
                variants.append(s.get_solution(p, reference=True))
            for sol in variants:
                for k in sol.kernels:
                    key = (k.source, k.name, k.compile_options())
                    if key not in seen:
                        seen[key] = (s.id, p.key(), k)
                        count += 1
    return list(seen.values())


KERNELS = _kernels()


def test_every_solver_has_kernels_in_matrix():
    ids = {sid for sid, _, _ in KERNELS}
    assert ids <= COVERED == {s.id for s in solvers() if getattr(s, "kernel_files", ())}


@pytest.mark.parametrize("sid,key,kinfo", KERNELS, ids=[f"{sid}:{k.name}:{i}" for i, (sid, _, k) in enumerate(KERNELS)])
def test_nvrtc_sm90(sid, key, kinfo):
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile

    cubin = nvrtc_compile(kinfo, arch="sm_90")
    assert cubin[:4] == b"\x7fELF", f"{sid} on {key}: NVRTC did not return an ELF cubin"


def test_compile_error_is_reported():
    nvrtc_or_skip()
    from miofind.compile import CompileError, nvrtc_compile
    from miofind.solver import KernelInfo

    bad = KernelInfo("direct_naive.cu", "naive_conv_fwd", (1, 1, 1), (1, 1, 1), macros=(("DATA_T", "no_such_type"),))
    with pytest.raises(CompileError, match="no_such_type"):
        nvrtc_compile(bad)
