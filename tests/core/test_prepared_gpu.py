"""Prepared solutions on the GPU: correct on any caller stream, from torch and CuPy arrays, and
inside CUDA-graph capture (torch.cuda.graph and CuPy's stream capture) for F, B and W of every
family: a graph replayed on new data written into the same buffers matches the eager result."""

from __future__ import annotations

import pytest

from miofind.find import candidates
from miofind.problem import ProblemDescription as P

# one small problem per direction that every family can take (Winograd/FFT: 3x3; depthwise: groups)
DENSE = dict(n=2, c=16, k=16, in_size=(12, 12), filter_size=3, pads=1)
DEPTHWISE = dict(n=2, c=16, k=16, in_size=(12, 12), filter_size=3, pads=1, groups=16)


def _cases():
    out = []
    for kw, tag in ((DENSE, "dense"), (DEPTHWISE, "depthwise")):
        for d in "FBW":
            p = P.make(d, **kw)
            for s in candidates(p, with_naive=True)[0]:
                if (tag == "depthwise") == (s.family == "depthwise"):
                    out.append(pytest.param(p, s.id, id=f"{s.id}-{d}-{tag}"))
    return out


CASES = _cases()


def _torch_io(p, torch, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    shapes = p.io_shapes()
    a = torch.rand(shapes[0], device="cuda", generator=g) * 2 - 1
    b = torch.rand(shapes[1], device="cuda", generator=g) * 2 - 1
    return a, b, torch.full(shapes[2], float("nan"), device="cuda")


def _reference(p, a, b, torch):
    kw = dict(stride=p.strides, padding=p.pads, dilation=p.dilations, groups=p.groups)
    a64, b64 = a.double(), b.double()
    if p.direction == "F":
        return torch.nn.functional.conv2d(a64, b64, **kw)
    if p.direction == "B":
        return torch.nn.grad.conv2d_input(p.x_shape, b64, a64, **kw)
    return torch.nn.grad.conv2d_weight(b64, p.w_shape, a64, **kw)


def _rel(out, ref) -> float:
    return float((out.double() - ref).norm() / ref.norm())


@pytest.mark.gpu
def test_every_family_is_covered():
    fams = {}
    for prm in CASES:
        p, sid = prm.values
        from miofind.registry import get_solver
        fams.setdefault(get_solver(sid).family, set()).add(p.direction)
    want = {"direct", "gemm", "implicit_gemm", "depthwise", "cudnn"}
    assert want <= set(fams) and all(fams[f] == set("FBW") for f in want), fams
    assert fams.get("winograd") == set("FB") and fams.get("fft") == set("FB"), fams


@pytest.mark.gpu
@pytest.mark.parametrize("p,sid", CASES)
def test_side_stream_and_graph_capture(p, sid):
    torch = pytest.importorskip("torch")
    from miofind import find_solutions

    (sol,) = [s for s in find_solutions(p, mode="benchmark", solvers=[sid], store=False) if s.solver_id == sid]
    pr = sol.prepare()
    side = torch.cuda.Stream()
    ws = torch.empty(max(1, pr.workspace_bytes), dtype=torch.uint8, device="cuda")

    # eager, on a side stream: inputs are written on the current stream, so the side stream waits
    a, b, out = _torch_io(p, torch, 1)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        pr(a, b, out, workspace=ws)                  # the current stream is the side stream
        pr(a, b, out, workspace=ws)                  # and warms it up (plans made for this stream)
    torch.cuda.current_stream().wait_stream(side)
    ref = _reference(p, a, b, torch)
    tol = 5e-3 if sid.startswith(("ConvWinograd", "ConvFFT", "ConvCudnn")) else 1e-4
    assert _rel(out, ref) < tol

    # torch.cuda.graph on the warmed side stream; replay on new data in the same buffers
    g = torch.cuda.CUDAGraph()
    out.fill_(float("nan"))
    torch.cuda.synchronize()
    with torch.cuda.graph(g, stream=side):
        pr(a, b, out, workspace=ws)
    a2, b2, _ = _torch_io(p, torch, 2)
    a.copy_(a2)
    b.copy_(b2)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    eager = torch.full_like(out, float("nan"))
    pr(a, b, eager, workspace=ws)
    torch.cuda.synchronize()
    # (cuDNN's backward-weights plans may sum in another order from run to run)
    assert torch.isfinite(out).all() and _rel(out, eager.double()) < 1e-5, f"replay differs: {_rel(out, eager.double())}"
    assert _rel(out, _reference(p, a, b, torch)) < tol


@pytest.mark.gpu
@pytest.mark.parametrize("p,sid", [c for c in CASES if c.values[1] in ("ConvImplicitGemmFwd", "GemmBwdRest",
                                                                        "ConvFFTFwd", "ConvDepthwiseWrw")])
def test_cupy_stream_capture(p, sid):
    cupy = pytest.importorskip("cupy")
    from miofind import find_solutions
    from miofind.verify import random_array

    (sol,) = [s for s in find_solutions(p, mode="benchmark", solvers=[sid], store=False) if s.solver_id == sid]
    pr = sol.prepare()
    s = cupy.cuda.Stream(non_blocking=True)
    rng = cupy.random.default_rng(3)
    shapes = p.io_shapes()
    with s:
        a, b = random_array(shapes[0], "FP32", rng), random_array(shapes[1], "FP32", rng)
        out = cupy.full(shapes[2], cupy.nan, dtype=cupy.float32)
        pr.workspace_for(s.ptr)
        pr(a, b, out, stream=s)                      # warm this stream (plans, workspace)
        eager = out.copy()
        out.fill(cupy.nan)
        s.begin_capture()
        pr(a, b, out, stream=s)
        graph = s.end_capture()
        graph.launch(s)
    s.synchronize()
    assert bool(cupy.isfinite(out).all()) and float(cupy.linalg.norm(out - eager) / cupy.linalg.norm(eager)) < 1e-6


@pytest.mark.gpu
def test_square_channels_last_tensors_are_told_from_contiguous_ones():
    """NHWC with C == H == W: torch's (N, C, H, W) shape equals the memory shape (N, H, W, C), so the
    memory format decides; a torch.nn.Parameter is taken like the tensor it is. channels_last tensors run as the NHWC problem and run_solution returns a
    channels_last output; the result matches the float64 reference in either form."""
    torch = pytest.importorskip("torch")
    import miofind

    p = P.make("F", n=2, c=8, k=8, in_size=(8, 8), filter_size=3, pads=1, layout="NHWC")
    sol = miofind.find_solutions(p, mode="benchmark", store=False, solvers=["ConvDirectNaiveConvFwd"])[0]
    pr = sol.prepare()
    g = torch.Generator(device="cuda").manual_seed(7)
    x = (torch.rand(2, 8, 8, 8, device="cuda", generator=g) * 2 - 1).contiguous(memory_format=torch.channels_last)
    w = (torch.rand(8, 8, 3, 3, device="cuda", generator=g) * 2 - 1).contiguous(memory_format=torch.channels_last)
    ref = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
    y = torch.full((2, 8, 8, 8), float("nan"), device="cuda").contiguous(memory_format=torch.channels_last)
    pr(x, torch.nn.Parameter(w, requires_grad=False), y)        # a Tensor subclass (a module's weight)
    y2 = miofind.run_solution(sol, x, w)
    torch.cuda.synchronize()
    assert y2.is_contiguous(memory_format=torch.channels_last) and not y2.is_contiguous()
    assert _rel(y, ref) < 1e-5 and _rel(y2, ref) < 1e-5
    # the same data as dense (N, H, W, C) tensors
    yd = torch.full((2, 8, 8, 8), float("nan"), device="cuda")
    pr(x.permute(0, 2, 3, 1).contiguous(), w.permute(0, 2, 3, 1).contiguous(), yd)
    torch.cuda.synchronize()
    assert _rel(yd.permute(0, 3, 1, 2), ref) < 1e-5


# the families whose every solution runs as one native call (launch.replayer): declared recipes without tensor maps
# and traced invokers (their cuBLASLt matmuls and cuFFT calls included; cuDNN's plans through the backend API,
# solvers/cudnn_execute.py); the naive solvers do not
REPLAYED = {"gemm", "winograd", "fft", "implicit_gemm", "depthwise", "cudnn"}


def _stepwise(pr):
    """A second Prepared of ``pr``'s invoker that runs it step by step (no native replay)."""
    from miofind.invokers import Prepared

    step = Prepared(pr.problem, pr.solver_id, pr.config, pr.invoker, pr.workspace_bytes)
    step._replay = False
    return step


@pytest.mark.gpu
@pytest.mark.parametrize("p,sid", CASES)
def test_replayed_call_equals_the_step_by_step_call(p, sid):
    """A prepared call replayed as one native call (``Prepared.replays``) writes what the invoker's own
    step-by-step launches write, bit for bit, on fresh inputs and poisoned outputs, on the current and a side
    stream; its output matches the float64 reference; an address off the recipe's alignment takes the invoker."""
    torch = pytest.importorskip("torch")
    from miofind import find_solutions, launch
    from miofind.registry import get_solver

    if launch.native() is None:
        pytest.skip("miofind._native is not built: nothing is replayed")
    (sol,) = [s for s in find_solutions(p, mode="benchmark", solvers=[sid], store=False) if s.solver_id == sid]
    pr = sol.prepare()
    fam = get_solver(sid).family
    s0 = torch.cuda.current_stream().cuda_stream
    step = _stepwise(pr)
    a, b, out = _torch_io(p, torch, 11)
    out2 = out.clone()
    pr(a, b, out)
    replays = pr.replays(s0)
    expect = (fam in REPLAYED or sid == "ConvDirectTiledFwd") and not getattr(pr.invoker, "private_work_bytes", 0)
    assert replays == expect, (fam, replays)
    step(a, b, out2)
    torch.cuda.synchronize()
    tol = 5e-3 if sid.startswith(("ConvWinograd", "ConvFFT", "ConvCudnn")) else 1e-4
    assert torch.isfinite(out).all() and _rel(out, _reference(p, a, b, torch)) < tol
    # bit for bit where the solver is deterministic; cuDNN's plans are not all (split-K engines with atomics:
    # two calls of one plan differed by 7e-9 in session-suite call 5), so theirs agree within the tolerance
    det = get_solver(sid).deterministic
    same = (lambda x, y: torch.equal(x, y)) if det else (lambda x, y: _rel(x, y.double()) < tol)
    assert same(out, out2), f"replayed and step-by-step differ: {_rel(out, out2.double())}"
    # a side stream: its own replay (a traced one's library calls carry their stream)
    side = torch.cuda.Stream()
    out3 = torch.full_like(out, float("nan"))      # before the wait: the side stream must see it filled
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        pr(a, b, out3)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    assert pr.replays(side.cuda_stream) == expect and same(out3, out2)
    # inputs 4 bytes off a 256-byte boundary: the replay refuses (-1) and the invoker runs (or raises its own error)
    if replays:
        buf = torch.empty(a.numel() + 64, device="cuda")
        a_off = buf[1:1 + a.numel()].view(a.shape)
        a_off.copy_(a)
        out4 = torch.full_like(out, float("nan"))
        try:
            pr(a_off, b, out4)
        except Exception as e:      # noqa: BLE001  a vectorised kernel's own alignment check
            assert "align" in str(e).lower(), e
        else:
            torch.cuda.synchronize()
            assert _rel(out4, _reference(p, a, b, torch)) < tol


@pytest.mark.gpu
@pytest.mark.parametrize("sid,d", [("GemmFwdRest", "F"), ("GemmBwdRest", "B"), ("GemmWrwUniversal", "W"),
                                   ("GemmFwd1x1_0_1", "F"), ("GemmBwd1x1_stride1", "B"), ("GemmWrw1x1_stride1", "W")])
def test_gemm_replays_cublaslt_kernels_not_the_library_call(sid, d):
    """FP32 im2col-GEMM: the replay launches the kernels read from a graph capture of its cuBLASLt matmul (kind 2
    steps, no library call left), and writes what the cuBLASLt call writes, bit for bit, on new buffers."""
    torch = pytest.importorskip("torch")
    from miofind import find_solutions, launch

    if launch.native() is None:
        pytest.skip("miofind._native is not built: nothing is replayed")
    kw = dict(DENSE, filter_size=1, pads=0) if "1x1" in sid else DENSE
    p = P.make(d, **kw)
    (sol,) = [s for s in find_solutions(p, mode="benchmark", solvers=[sid], store=False) if s.solver_id == sid]
    pr = sol.prepare()
    s0 = torch.cuda.current_stream().cuda_stream
    a, b, out = _torch_io(p, torch, 21)
    pr(a, b, out)
    kinds = pr._runs[s0][2]
    assert 2 in kinds and 1 not in kinds, kinds
    step = _stepwise(pr)
    for seed in (22, 23):
        a, b, out = _torch_io(p, torch, seed)
        out2 = out.clone()
        pr(a, b, out)
        step(a, b, out2)
        torch.cuda.synchronize()
        assert torch.isfinite(out).all() and torch.equal(out, out2)
        assert _rel(out, _reference(p, a, b, torch)) < 1e-4
