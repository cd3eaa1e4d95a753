"""miofind.torch on the GPU: F/B/W against PyTorch's cuDNN convolution (FP32 with TF32 off, FP16
channels_last, autocast), a converted CNN trained like eager, torch.compile without graph breaks,
CUDA-graph capture and replay, deterministic mode, and a second process that runs no benchmark.

Every test uses a temporary user FindDB and no system DB (``tmp_db``), so that each problem is
benchmarked once in the test; the ResNet-50 test reads the shipped DB beneath it."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

_spec = importlib.util.find_spec("torch")
if _spec is None or _spec.origin is None:
    pytest.skip("PyTorch is not installed (pip install \"miofind[torch]\")", allow_module_level=True)
torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu


@pytest.fixture
def mt(tmp_db):
    """miofind.torch with an empty table and counters, TF32 off (restored after)."""
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    import miofind.torch as mt

    tf32, bench = torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark
    torch.backends.cudnn.allow_tf32 = False
    mt.clear()
    mt.reset_stats()
    yield mt
    torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = tf32, bench
    mt.clear()
    mt.reset_stats()


def rel(a, b) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def _fbw(conv, x, w, b, **kw):
    xr, wr, br = (t.detach().clone().requires_grad_() for t in (x, w, b))
    y = conv(xr, wr, br, **kw)
    g = torch.randn_like(y)
    y.backward(g)
    return y, xr.grad, wr.grad, br.grad, g


@pytest.mark.parametrize("dtype,cl", [(torch.float32, False), (torch.float16, True)], ids=["fp32", "fp16-cl"])
def test_repeated_calls_take_the_forward_plan_and_match_cudnn(mt, dtype, cl):
    """Calls after the first take ``functional``'s forward plan (one dict lookup, raw launch): on new
    data each time, with and without autograd, with bias, under autocast, they match cuDNN."""
    from miofind.torch import functional as MF

    fmt = torch.channels_last if cl else torch.contiguous_format
    torch.manual_seed(2)
    w = torch.randn(24, 16, 3, 3, device="cuda", dtype=dtype).contiguous(memory_format=fmt)
    b = torch.randn(24, device="cuda", dtype=dtype)
    tol = 1e-4 if dtype is torch.float32 else 2e-3
    for i in range(8):
        x = torch.randn(3, 16, 17, 15, device="cuda", dtype=dtype).contiguous(memory_format=fmt)
        grad = i % 2 == 1
        # i = 5 and 7: a first layer's call (dw only), twice, so its backward is learned then repeated
        xr, wr = x.clone().requires_grad_(grad and i < 5), w.clone().requires_grad_(grad)
        y = mt.conv2d(xr, wr, b, padding=1)
        ref = F.conv2d(x, w, b, padding=1)
        assert y.shape == ref.shape and y.is_contiguous(memory_format=fmt), i
        assert rel(y, ref) < tol, (i, rel(y, ref))
        if grad:
            g = torch.randn_like(y)
            y.backward(g)
            xr2, wr2 = x.clone().requires_grad_(), w.clone().requires_grad_()
            F.conv2d(xr2, wr2, b, padding=1).backward(g)
            assert (xr.grad is None if i >= 5 else rel(xr.grad, xr2.grad) < tol), i
            assert rel(wr.grad, wr2.grad) < 10 * tol, i
    assert len(MF._plans) >= 1
    # the backward learned its B and W Entries (i = 1, then launched directly at i = 3) and the dw-only ones
    learned = [sig[1:] for p in MF._plans.values() for sig in p.bwd]
    assert (True, True) in learned, learned
    # the dw-only calls (i = 5, 7): learned by the Python path, or launched by a C++ plan made from the (True, True)
    # Entries whose dw has a recipe (then no Python backward runs to learn them)
    from miofind.torch import _fast
    cpp = [p for p in MF._plans.values() if type(p.fast) is int and p._fast_with and p._fast_with[1] is not None]
    assert (False, True) in learned or (cpp and any(_fast._module.counts(p.fast)[0] > 0 for p in cpp)), \
        (learned, [(p.entry.solver_id, p.fast) for p in MF._plans.values()])
    if dtype is torch.float32:
        # autocast: FP32 inputs cast to FP16 before the plan's key, as nn.Conv2d casts
        with torch.autocast("cuda", dtype=torch.float16):
            for _ in range(3):
                x = torch.randn(3, 16, 17, 15, device="cuda")
                y = mt.conv2d(x, w, b, padding=1)
                ref = F.conv2d(x, w, b, padding=1)
                assert y.dtype is torch.float16 and rel(y, ref) < 2e-3
        # autocast with autograd: a planned call casts w outside autograd and its gradient back to FP32 (no
        # ToCopyBackward node per call); dw as eager autocast's
        for i in range(3):
            x = torch.randn(3, 16, 17, 15, device="cuda")
            wr, wr2 = w.clone().requires_grad_(), w.clone().requires_grad_()
            with torch.autocast("cuda", dtype=torch.float16):
                y = mt.conv2d(x, wr, None, padding=1)
                ref = F.conv2d(x, wr2, None, padding=1)
            g = torch.randn_like(y)
            y.backward(g)
            ref.backward(g)
            assert wr.grad.dtype is torch.float32 and rel(wr.grad, wr2.grad) < 2e-2, i
        nodes = {type(f).__name__ for f, _ in y.grad_fn.next_functions if f is not None}
        assert type(y.grad_fn).__name__ in ("PlannedConvBackward", "CppFunction") and nodes == {"AccumulateGrad"}, nodes
    assert mt.stats()["lookups"] <= 8


def test_a_deferred_solution_replaces_a_slower_entry(mt):
    """A faster solution that a find left to the background (``miofind.tiered``), once stored, replaces the
    problem's Entry and the forward plan holding it on the next call; the results still match cuDNN."""
    from miofind.api import find_solutions
    from miofind.torch import _policy
    from miofind.torch import functional as MF

    torch.manual_seed(0)
    cl = torch.channels_last
    x = torch.randn(8, 32, 20, 20, device="cuda", dtype=torch.float16).to(memory_format=cl)
    w = (torch.randn(64, 32, 3, 3, device="cuda", dtype=torch.float16) * 0.1).to(memory_format=cl)
    for _ in range(2):
        mt.conv2d(x, w, padding=1)
    # what the find itself deferred is measured and applied first, so that only the replacement below counts
    from miofind import tiered
    tiered.wait(600)
    mt.conv2d(x, w, padding=1)
    mt.reset_stats()
    ((key, old),) = [(k, e) for k, e in _policy._table.items() if k[0] == "F"]
    assert any(p.entry is old for p in MF._plans.values())
    others = [s for s in find_solutions(old.pr.problem) if s.solver_id != old.solver_id and not s.cut]
    if not others:
        pytest.skip("one solution only")
    old.time_ms = float("inf")          # as if the deferred solution were faster
    _policy._heard(old.pr.problem, others[0])
    mt.conv2d(x, w, padding=1)          # applies the replacement (this call still runs the old Entry)
    new = _policy._table[key]
    assert mt.stats()["replaced"] == 1 and new is not old
    assert new.solver_id == others[0].solver_id and new.source == "deferred"
    assert not any(p.entry is old for p in MF._plans.values())
    assert any(p.entry is new for p in MF._plans.values())
    for _ in range(2):      # the first call on a stream takes the checked launch, the second the raw one
        x = torch.randn(8, 32, 20, 20, device="cuda", dtype=torch.float16).to(memory_format=cl)
        y = mt.conv2d(x, w, padding=1)
        assert rel(y, F.conv2d(x, w, padding=1)) < 2e-2
    # the same solution again is not faster than the Entry it made: nothing is replaced
    _policy._heard(old.pr.problem, others[0])
    mt.conv2d(x, w, padding=1)
    assert mt.stats()["replaced"] == 1
    # under deterministic algorithms a process keeps its first choice
    torch.use_deterministic_algorithms(True)
    try:
        mt.conv2d(x, w, padding=1)
        ((dkey, det),) = [(k, e) for k, e in _policy._table.items() if k[0] == "F" and k[10]]
        det.time_ms = float("inf")
        _policy._heard(det.pr.problem, others[0])
        mt.conv2d(x, w, padding=1)
        assert _policy._table[dkey] is det and mt.stats()["replaced"] == 1
    finally:
        torch.use_deterministic_algorithms(False)


def test_conv2d_fbw_fp32_against_cudnn(mt):
    torch.manual_seed(0)
    x = torch.randn(4, 16, 14, 14, device="cuda")
    w = torch.randn(32, 16, 3, 3, device="cuda")
    b = torch.randn(32, device="cuda")
    for kw in (dict(padding=1), dict(stride=2, padding=0, dilation=2), dict(padding="same", groups=4)):
        ww = w[:, : 16 // kw.get("groups", 1)].contiguous()
        torch.manual_seed(1)
        ours = _fbw(mt.conv2d, x, ww, b, **kw)
        torch.manual_seed(1)
        ref = _fbw(F.conv2d, x, ww, b, **kw)
        assert ours[0].is_contiguous() and ours[0].shape == ref[0].shape
        for name, o, r in zip(("y", "dx", "dw", "db"), ours[:4], ref[:4]):
            # relative L2: both sides carry FP32 rounding (Winograd/FFT up to ~3e-5, verify.py)
            assert rel(o, r) < 1e-4, (kw, name, rel(o, r))
    st = mt.stats()
    assert st["lookups"] == 9 and st["finds_run"] == 9 and st["db_hits"] == 0 and st["find_ms"] > 0


def test_conv2d_fp16_channels_last_against_cudnn(mt):
    torch.manual_seed(0)
    cl = torch.channels_last
    x = torch.randn(8, 32, 20, 20, device="cuda", dtype=torch.float16).to(memory_format=cl)
    w = (torch.randn(64, 32, 3, 3, device="cuda", dtype=torch.float16) * 0.1).to(memory_format=cl)
    b = torch.randn(64, device="cuda", dtype=torch.float16)
    torch.manual_seed(1)
    ours = _fbw(mt.conv2d, x, w, b, padding=1)
    torch.manual_seed(1)
    ref = _fbw(F.conv2d, x, w, b, padding=1)
    assert ours[0].is_contiguous(memory_format=cl) and not ours[0].is_contiguous()
    for name, o, r in zip(("y", "dx", "dw", "db"), ours[:4], ref[:4]):
        assert o.dtype == torch.float16 and rel(o, r) < 2e-2, (name, rel(o, r))
    # the problem was NHWC: no hidden layout copy
    from miofind.torch import _policy
    assert {e.pr.problem.layout for e in _policy._table.values()} == {"NHWC"}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_bias_in_the_forward_epilogue(mt, dtype):
    """channels_last 16-bit with a bias: the forward is the fused problem (bias in the epilogue of the chosen
    fusing solution, no add), on the first call and through the forward plan after it; y, dx, dw and db match
    cuDNN's; an NCHW call of the same layer keeps the plain forward and one add."""
    from miofind.torch import _policy
    from miofind.torch import functional as MF

    cl = torch.channels_last
    torch.manual_seed(3)
    w = (torch.randn(40, 24, 3, 3, device="cuda", dtype=dtype) * 0.1).to(memory_format=cl)
    b = torch.randn(40, device="cuda", dtype=dtype)
    for i in range(4):
        x = torch.randn(4, 24, 13, 11, device="cuda", dtype=dtype).to(memory_format=cl)
        torch.manual_seed(10 + i)
        ours = _fbw(mt.conv2d, x, w, b, padding=1, stride=(1, 2))
        torch.manual_seed(10 + i)
        ref = _fbw(F.conv2d, x, w, b, padding=1, stride=(1, 2))
        for name, o, r in zip(("y", "dx", "dw", "db"), ours[:4], ref[:4]):
            assert rel(o, r) < 2e-2, (i, name, rel(o, r))
        with torch.no_grad():
            assert rel(mt.conv2d(x, w, b, padding=1, stride=(1, 2)), F.conv2d(x, w, b, padding=1, stride=(1, 2))) < 2e-2
    fused = {k: e for k, e in _policy._table.items() if k[0] == "F"}
    assert len(fused) == 1 and next(iter(fused))[-1] == (True, "none"), list(fused)
    e = next(iter(fused.values()))
    assert e.fused and e.pr.problem.bias == 1 and e.solver_id in ("ConvImplicitGemmHopperFwdBiasActiv", "ConvCudnnFwd")
    assert any(p.fused for p in MF._plans.values())
    # NCHW: no fusing solver of ours claims it, so the plain forward and one add
    x = torch.randn(4, 24, 13, 11, device="cuda", dtype=dtype)
    assert rel(mt.conv2d(x, w.contiguous(), b, padding=1), F.conv2d(x, w.contiguous(), b, padding=1)) < 2e-2
    assert any(k[0] == "F" and len(k) == 12 for k in _policy._table)


def test_fused_relu_and_gelu_modules(mt):
    """``fuse`` on a channels_last FP16 Sequential: conv + bias + ReLU as one fused forward problem, under autograd
    (ReLU's mask from the output) and without; conv + GELU fused without autograd only; outputs and gradients match
    the unfused model on cuDNN, through the first call and the forward plans."""
    from miofind.torch import _policy

    cl = torch.channels_last
    torch.manual_seed(5)
    ref = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(32, 24, 1),
                        nn.GELU()).cuda().half().to(memory_format=cl)
    model = copy.deepcopy(ref)
    mt.convert(model)
    assert mt.fuse(model) == 2
    for i in range(3):
        x = torch.randn(4, 16, 12, 10, device="cuda", dtype=torch.float16).to(memory_format=cl)
        xr, xm = x.clone().requires_grad_(), x.clone().requires_grad_()
        want, got = ref(xr), model(xm)
        assert rel(got, want) < 2e-2, (i, rel(got, want))
        g = torch.randn_like(want)
        want.backward(g)
        got.backward(g)
        assert rel(xm.grad, xr.grad) < 3e-2, (i, rel(xm.grad, xr.grad))
        for pm, pr in zip(model.parameters(), ref.parameters()):
            assert rel(pm.grad, pr.grad) < 3e-2, i
            pm.grad = pr.grad = None
        with torch.no_grad():
            assert rel(model(x), ref(x)) < 2e-2, i
    keys = {k[-1] for k in _policy._table if k[0] == "F" and len(k) == 13}
    assert (True, "relu") in keys and (True, "gelu") in keys and (True, "none") in keys, keys


def test_conv1d_conv3d_and_autocast(mt):
    torch.manual_seed(0)
    x1, w1 = torch.randn(4, 8, 50, device="cuda"), torch.randn(16, 8, 5, device="cuda")
    assert rel(mt.conv1d(x1, w1, padding="same"), F.conv1d(x1, w1, padding="same")) < 1e-4
    x3, w3 = torch.randn(2, 4, 6, 7, 8, device="cuda"), torch.randn(8, 4, 3, 3, 3, device="cuda")
    assert rel(mt.conv3d(x3, w3, stride=(1, 2, 1), padding=1), F.conv3d(x3, w3, stride=(1, 2, 1), padding=1)) < 1e-4
    x, w = torch.randn(2, 8, 16, 16, device="cuda"), torch.randn(8, 8, 3, 3, device="cuda")
    for dt in (torch.float16, torch.bfloat16):
        with torch.autocast("cuda", dtype=dt):
            y, ref = mt.conv2d(x, w, padding=1), F.conv2d(x, w, padding=1)
        assert y.dtype == ref.dtype == dt and rel(y, ref) < 2e-2
    # autocast leaves float64 alone (PyTorch's rule): torch's own float64 convolution, not an FP16 one
    x64, w64 = x.double(), w.double()
    with torch.autocast("cuda", dtype=torch.float16):
        y, ref = mt.conv2d(x64, w64, padding=1), F.conv2d(x64, w64, padding=1)
    assert y.dtype == ref.dtype == torch.float64 and rel(y, ref) < 1e-12


class Simple3d(nn.Conv3d):
    """As torchvision's video ``Conv3DSimple``: its own ``__init__``, torch's convolution."""

    def __init__(self, c_in, c_out, stride=1):
        super().__init__(c_in, c_out, kernel_size=(3, 3, 3), stride=stride, padding=1, bias=False)


@pytest.mark.parametrize("amp", [False, True])
def test_converted_subclass_and_weight_norm_run_through_miofind(mt, amp):
    """A subclass of nn.Conv3d with an ``__init__`` of its own and a weight-normed grouped Conv1d (wav2vec 2.0's
    positional convolution, smaller) are swapped and computed by miofind: outputs and every parameter's gradient
    (through the weight norm's g and v) as PyTorch's cuDNN computes them, one lookup per direction each."""
    from torch.nn.utils.parametrizations import weight_norm

    torch.manual_seed(0)
    m3 = nn.Sequential(Simple3d(4, 8), nn.ReLU(), Simple3d(8, 8, stride=(1, 2, 2))).cuda()
    m1 = weight_norm(nn.Conv1d(16, 16, 9, padding=4, groups=4), name="weight", dim=2).cuda()
    ref3, ref1 = copy.deepcopy(m3), copy.deepcopy(m1)
    assert mt.convert(m3).swapped == 2 and mt.convert(m1).swapped == 1
    x3 = torch.randn(2, 4, 5, 12, 12, device="cuda", requires_grad=True)
    x1 = torch.randn(3, 16, 40, device="cuda", requires_grad=True)
    if amp:
        m3, ref3 = (m.to(memory_format=torch.channels_last_3d) for m in (m3, ref3))
    tol = 2e-2 if amp else 1e-4
    for ours, ref, x in ((m3, ref3, x3), (m1, ref1, x1)):
        xs = []
        for model in (ref, ours):
            xi = x.detach().clone().requires_grad_()
            with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                y = model(xi)
            y.float().square().sum().backward()
            xs.append((y.detach(), xi.grad, [p.grad for p in model.parameters()]))
        (yr, gr, pr), (yo, go, po) = xs
        assert yo.dtype == yr.dtype and rel(yo, yr) < tol and rel(go, gr) < tol
        assert len(po) == len(pr) and all(rel(a, b) < tol for a, b in zip(po, pr))
    # F, B and W of each of the three convolutions (the input's gradient is asked for each)
    assert mt.stats()["lookups"] >= 9


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.Conv2d(16, 32, 1)), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1, bias=False), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def _train(model, xs, ys, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for i in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xs[i]), ys[i])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_tiny_cnn_trains_like_eager(mt):
    torch.manual_seed(0)
    ref = TinyCNN().cuda()
    ours = copy.deepcopy(ref)
    assert mt.convert(ours).swapped == 4
    xs = torch.randn(3, 8, 3, 16, 16, device="cuda")
    ys = torch.randint(0, 10, (3, 8), device="cuda")
    lr, lo = _train(ref, xs, ys), _train(ours, xs, ys)
    assert all(abs(a - b) <= 1e-4 * max(1.0, abs(a)) for a, b in zip(lr, lo)), (lr, lo)
    for (name, p), q in zip(ref.named_parameters(), ours.parameters()):
        assert rel(q, p) < 1e-3, (name, rel(q, p))
    assert mt.stats()["lookups"] >= 4 * 3 - 1      # F, B, W per conv (the first layer computes no dx)


def test_compile_without_graph_breaks(mt):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = TinyCNN().cuda()
    mt.convert(model)
    x = torch.randn(8, 3, 16, 16, device="cuda")
    ex = torch._dynamo.explain(model)(x)
    assert ex.graph_break_count == 0 and ex.graph_count == 1
    assert "miofind.conv_forward" in str(ex.graphs[0].graph)
    eager = model(x)
    compiled = torch.compile(model, fullgraph=True)
    y = compiled(x)
    y.sum().backward()
    assert rel(y, eager) < 1e-4
    torch._dynamo.reset()


def _train_compiled_like_eager(mt, steps: int = 4):
    """A converted TinyCNN compiled under ``mode="default"`` trains ``steps`` steps on fresh data beside its eager
    twin: outputs and gradients equal at every step."""
    model = TinyCNN().cuda()
    mt.convert(model)
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, fullgraph=True)
    for step in range(steps):
        x = torch.randn(8, 3, 16, 16, device="cuda")
        y, ye = compiled(x), eager(x)
        y.square().mean().backward()
        ye.square().mean().backward()
        assert rel(y, ye) < 1e-4, step
        for (n, p), pe in zip(model.named_parameters(), eager.parameters()):
            # a bias before BatchNorm has a gradient of zero but for rounding: an absolute bound there
            assert rel(p.grad, pe.grad) < 1e-4 or float((p.grad - pe.grad).abs().max()) < 1e-7, (step, n)
            p.grad = pe.grad = None


def test_compile_default_mode_launches_the_ops_from_cpp(mt, monkeypatch):
    """``torch.compile(mode="default")``, whose graphs launch each op from the host: training steps on fresh data
    equal the eager model's, and once each key is learned the convolutions launch from the C++ extension (no Python
    per call; ``stats()``'s ``ops_cpp``), their autograd step the extension's C++ kernel (``ops_autograd_cpp``: the
    graphs run with grad mode off), while tracing's calls, which record, went to custom_op's."""
    from miofind.torch import _fast
    from torch._inductor.cudagraph_trees import reset_cudagraph_trees
    monkeypatch.setenv("MIOFIND_TORCH_CPP", "sync")
    assert _fast.module() is not None or _fast.wait(600), _fast.status()
    torch._dynamo.reset()
    reset_cudagraph_trees()
    torch.manual_seed(0)
    _train_compiled_like_eager(mt)
    st = mt.stats()
    assert st["ops_cpp"] > 0 and st["ops_autograd_cpp"] >= st["ops_cpp"], st
    torch._dynamo.reset()


def test_graph_trees_leave_the_other_graphs_on_the_cpp_path(mt, monkeypatch):
    """A process that runs one model under ``mode="reduce-overhead"`` (CUDA-graph trees) and trains another under
    ``mode="default"``: the trees' runs stay on the ops' Python path (their own stream), the op table stays on, the
    default-mode graphs' calls launch from C++ once learned, and both models answer as their eager twins, before and
    after each other."""
    from miofind.torch import _alloc, _fast
    from torch._inductor.cudagraph_trees import reset_cudagraph_trees
    monkeypatch.setenv("MIOFIND_TORCH_CPP", "sync")
    assert _fast.module() is not None or _fast.wait(600), _fast.status()
    torch._dynamo.reset()
    reset_cudagraph_trees()
    torch.manual_seed(0)
    evaluated = TinyCNN().cuda().eval()
    mt.convert(evaluated)
    evaluated_eager = copy.deepcopy(evaluated)
    replayed = torch.compile(evaluated, mode="reduce-overhead", fullgraph=True)

    def evaluate(steps):
        with torch.no_grad():
            for step in range(steps):
                x = torch.randn(4, 3, 16, 16, device="cuda")
                assert rel(replayed(x).clone(), evaluated_eager(x)) < 1e-4, step

    evaluate(4)
    assert _alloc.graph_trees_in_use()
    mod = _fast._ops_module
    assert mod is not None and mod.ops_stats()[3], "the op table is off after the trees ran"
    before = mt.stats()["ops_cpp"]
    _train_compiled_like_eager(mt)
    assert mt.stats()["ops_cpp"] > before and mod.ops_stats()[3], mt.stats()
    evaluate(2)
    torch._dynamo.reset()
    reset_cudagraph_trees()


def test_compile_inference_under_autocast_without_graph_breaks(mt):
    """Inference (no_grad) under autocast, compiled: the weights' casts are in the graph, with no break and no
    recompile per weight (``functional._cast_param``)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = TinyCNN().cuda().eval()
    mt.convert(model)
    x = torch.randn(8, 3, 16, 16, device="cuda")
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
        ex = torch._dynamo.explain(model)(x)
        assert ex.graph_break_count == 0 and ex.graph_count == 1
        eager = model(x)
        torch._dynamo.reset()
        y = torch.compile(model, fullgraph=True)(x)
    assert y.dtype == eager.dtype and rel(y.float(), eager.float()) < 1e-2
    torch._dynamo.reset()


def test_cuda_graph_capture_and_replay(mt):
    torch.manual_seed(0)
    model = TinyCNN().cuda()
    mt.convert(model)
    static_x = torch.randn(8, 3, 16, 16, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):              # warm up on the capture stream: finds, prepares, per-stream state
        for _ in range(2):
            model.zero_grad(set_to_none=True)
            model(static_x).sum().backward()
    torch.cuda.current_stream().wait_stream(s)
    model.zero_grad(set_to_none=True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        static_y = model(static_x)
        static_y.sum().backward()
    new_x = torch.randn_like(static_x)
    static_x.copy_(new_x)
    g.replay()
    torch.cuda.synchronize()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    y = model(new_x)
    y.sum().backward()
    assert rel(static_y, y) < 1e-6
    # all gradients as one vector: a conv bias before BatchNorm has a gradient of ~0 (cancellation noise,
    # and BatchNorm's backward is not bitwise reproducible), which a per-parameter relative test misreads
    assert rel(torch.cat([g.flatten() for g in grads]), torch.cat([p.grad.flatten() for p in model.parameters()])) < 1e-6
    top = max(float(p.grad.abs().max()) for p in model.parameters())
    for gr, p in zip(grads, model.parameters()):
        assert float((gr - p.grad).abs().max()) <= 1e-6 * top


def test_workspace_kept_per_stream_and_fresh_in_capture(mt, monkeypatch):
    from miofind.torch import _policy

    # a shipped-DB problem whose pick (Winograd F(4x4)) takes a workspace, ~115 MB here: kept under a
    # raised limit. The find measures every candidate at once (MIOFIND_SPECIALIZE=sync): in the background mode a
    # candidate not yet compiled on this machine is deferred, and the first answer may be cuDNN's plan, which takes no
    # workspace (session-nov27 call 9 skipped this test that way, call 3 had run it)
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "sync")
    monkeypatch.setattr(_policy, "KEEP_WORKSPACE_BYTES", 1 << 30)
    torch.manual_seed(0)
    x = torch.randn(32, 64, 56, 56, device="cuda")
    w = torch.randn(64, 64, 3, 3, device="cuda") / 24
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y1 = mt.conv2d(x, w, padding=1)
        y2 = mt.conv2d(x, w, padding=1)
    torch.cuda.current_stream().wait_stream(s)
    (e,) = [e for k, e in _policy._table.items() if k[0] == "F"]
    if not e.ws_bytes:
        pytest.skip(f"the pick {e.solver_id} takes no workspace here")
    kept = _policy._workspaces[(torch.cuda.current_device(), s.cuda_stream)]
    assert kept.numel() >= e.ws_bytes
    ref = F.conv2d(x, w, padding=1)
    assert rel(y1, ref) < 1e-4 and rel(y2, ref) < 1e-4       # Winograd/FFT FP32: up to ~3e-5 (verify.py)
    given = []
    real = _policy.workspace
    monkeypatch.setattr(_policy, "workspace", lambda *a: (given.append(real(*a)), given[-1])[1])
    g = torch.cuda.CUDAGraph()
    static_x = x.clone()
    with torch.cuda.graph(g, stream=s):
        static_y = mt.conv2d(static_x, w, padding=1)
    assert given and all(t.data_ptr() != kept.data_ptr() for t in given)   # the graph owns its workspace
    assert _policy._workspaces[(torch.cuda.current_device(), s.cuda_stream)] is kept
    new_x = torch.randn_like(x)
    static_x.copy_(new_x)
    g.replay()
    with torch.cuda.stream(s):                                   # eager on the same stream, kept buffer
        y3 = mt.conv2d(new_x, w, padding=1)
    torch.cuda.synchronize()
    ref2 = F.conv2d(new_x, w, padding=1)
    assert rel(static_y, ref2) < 1e-4 and rel(y3, ref2) < 1e-4


def test_compile_reduce_overhead(mt):
    import torch._inductor.config as inductor_config
    inductor_config.triton.cudagraph_trees_history_recording = True    # a failure names the allocation
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = TinyCNN().cuda().eval()
    mt.convert(model)
    x = torch.randn(4, 3, 16, 16, device="cuda")
    with torch.no_grad():
        eager = model(x)
        compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
        for _ in range(3):                  # warm-up runs, then recorded and replayed CUDA graphs
            y = compiled(x)
    assert rel(y, eager) < 1e-4
    torch._dynamo.reset()


def test_deterministic_mode_runs_deterministic_solvers(mt):
    from miofind.registry import get_solver
    from miofind.torch import _policy

    torch.manual_seed(0)
    x = torch.randn(8, 32, 14, 14, device="cuda", requires_grad=True)
    w = torch.randn(64, 32, 3, 3, device="cuda", requires_grad=True)
    old = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        runs = []
        for _ in range(2):
            x.grad = w.grad = None
            y = mt.conv2d(x, w, padding=1)
            y.backward(torch.ones_like(y))
            runs.append((y.detach().clone(), x.grad.clone(), w.grad.clone()))
    finally:
        torch.use_deterministic_algorithms(old)
    entries = [(k, e) for k, e in _policy._table.items() if k[10]]
    assert {k[0] for k, _ in entries} == {"F", "B", "W"}
    assert all(get_solver(e.solver_id).deterministic for _, e in entries), [e.solver_id for _, e in entries]
    for a, b in zip(*runs):
        assert torch.equal(a, b)


_SECOND = r"""
import json, torch, miofind.torch as mt
torch.backends.cudnn.allow_tf32 = False
torch.manual_seed(0)
x = torch.randn(4, 24, 18, 18, device="cuda", requires_grad=True)
w = torch.randn(40, 24, 3, 3, device="cuda", requires_grad=True)
mt.conv2d(x, w, padding=1).sum().backward()
torch.cuda.synchronize()
print(json.dumps(mt.stats()))
"""


def test_second_process_runs_no_benchmark(tmp_path):
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    env = {**os.environ, "MIOFIND_DB": f"sqlite:///{tmp_path / 'finddb.sqlite'}", "MIOFIND_SYSTEM_DB": "none"}
    env.pop("MIOFIND_FIND_MODE", None)
    out = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _SECOND], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    first, second = out
    assert (first["lookups"], first["finds_run"]) == (3, 3)
    assert (second["lookups"], second["db_hits"], second["finds_run"]) == (3, 3, 0), second


_COLD_GRAPH = r"""
import copy, json, time, torch, torch.nn as nn, miofind.torch as mt
from miofind import tiered
from miofind.api import find_solutions
from miofind.torch import _policy
torch.backends.cudnn.allow_tf32 = False
# only implicit GEMM (its generic build runs while the specialised one compiles), and that compile held back 3 s so
# that the graph trees' warm-up run meets it pending
_policy._find = lambda p: find_solutions(p, solvers=[{"F": "ConvImplicitGemmFwd", "B": "ConvImplicitGemmBwd",
                                                      "W": "ConvImplicitGemmWrw"}[p.direction]])
_switch = tiered._switch_when_compiled
tiered._switch_when_compiled = lambda *a: (time.sleep(3), _switch(*a))[1]
torch.manual_seed(0)
ref = nn.Sequential(nn.Conv2d(8, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 24, 3, padding=1)).cuda()
model = copy.deepcopy(ref)
mt.convert(model)
step = torch.compile(lambda x: model(x).square().sum(), mode="reduce-overhead", fullgraph=True)
x = torch.randn(4, 8, 20, 20, device="cuda")
for _ in range(3):              # the warm-up run, then the recorded graph, then a replay
    torch.compiler.cudagraph_mark_step_begin()
    model.zero_grad(set_to_none=True)
    loss = step(x)
    loss.backward()
torch.cuda.synchronize()
ref(x).square().sum().backward()
rels = [float((p.grad - q.grad).norm() / q.grad.norm()) for p, q in zip(model.parameters(), ref.parameters())]
sw = [e for e in _policy._table.values() if type(e.invoker).__name__ == "Switching"]
print(json.dumps({**mt.stats(), "switching": len(sw), "generic": [e.solver_id for e in sw
                  if e.invoker.current is e.invoker.generic], "rel": max(rels)}))
"""


def test_graph_trees_record_the_specialised_builds_on_a_cold_cache(tmp_path):
    """An empty kernel cache with MIOFIND_SPECIALIZE=background: each problem runs its generic build until its
    specialised one compiles. A compiled training step with mode="reduce-overhead" waits for them in the graph
    trees' warm-up run (stats "settled"), so that the graphs it records and replays hold no generic build."""
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    env = {**os.environ, "MIOFIND_DB": f"sqlite:///{tmp_path / 'finddb.sqlite'}", "MIOFIND_SYSTEM_DB": "none",
           "MIOFIND_SPECIALIZE": "background", "MIOFIND_KERNEL_CACHE": str(tmp_path / "kc"),
           "CUPY_CACHE_DIR": str(tmp_path / "cupy")}
    env.pop("MIOFIND_FIND_MODE", None)
    r = subprocess.run([sys.executable, "-c", _COLD_GRAPH], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    st = json.loads(r.stdout.strip().splitlines()[-1])
    assert st["switching"] >= 1 and st["settled"] >= 1, st
    assert st["generic"] == [], st
    assert st["rel"] < 1e-4, st


class _Excite(nn.Module):
    """MobileNetV3's squeeze-excitation: two biased 1x1 convolutions on the pooled 1x1 plane scale the input."""

    def __init__(self, c: int, r: int):
        super().__init__()
        self.down, self.up = nn.Conv2d(c, r, 1), nn.Conv2d(r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.up(F.relu(self.down(s))))


def excite_net():
    """A model builder for --torch-model (test_torch_gpu.excite_net): a MobileNetV3-like block, with biased
    convolutions whose bias an eager FP16 channels_last run fuses into the forward's epilogue."""
    return nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.Hardswish(),
                         nn.Conv2d(16, 16, 5, padding=2, groups=16, bias=False), _Excite(16, 8),
                         nn.Conv2d(16, 32, 1), nn.ReLU(), nn.Conv2d(32, 24, 3, padding=1))


@pytest.mark.parametrize("amp", [False, True], ids=["fp32", "amp-fp16-channels-last"])
def test_tune_torch_model_prefills_every_problem_a_training_step_looks_up(mt, tmp_path, monkeypatch, amp):
    """`miofind tune --torch-model` (its problems from a pass on the meta device) fills a DB from which an eager
    CUDA training step of the same model finds nothing: every problem the step looks up, fused-bias forwards
    included, is there."""
    from click.testing import CliRunner

    from miofind import cli

    db = f"sqlite:///{tmp_path / 'prefill.sqlite'}"
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", "none")
    monkeypatch.delenv("MIOFIND_FIND_MODE", raising=False)
    args = ["tune", "--torch-model", "test_torch_gpu.excite_net", "--batch", "8", "--input-size", "32", "--no-tune",
            "--db", db] + (["--dtype", "fp16", "--channels-last"] if amp else ["--dtype", "fp32", "--no-tf32"])
    r = CliRunner().invoke(cli.main, args)
    assert r.exit_code == 0, r.output
    monkeypatch.setenv("MIOFIND_DB", db)
    path = str(tmp_path / "prefill.sqlite")
    stored = lambda: {k for (k,) in sqlite3.connect(path).execute("select distinct problem_key from find_records")}  # noqa: E731
    before = stored()
    mt.clear()
    mt.reset_stats()
    torch.manual_seed(0)
    model = excite_net().cuda()
    x = torch.randn(8, 3, 32, 32, device="cuda")
    if amp:
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    assert mt.convert(model) == (6, [])
    with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
        out = model(x)
    out.float().square().mean().backward()
    torch.cuda.synchronize()
    s = mt.stats()
    # 6 forwards, 5 backward-data (the first layer's input needs no gradient), 6 weight gradients
    assert s["lookups"] == 17 and s["db_hits"] == 17 and s["finds_run"] == 0, (s, sorted(stored() - before), r.output)


def _resnet_grads(model, x, amp: bool):
    model.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
        out = model(x)
    out.float().sum().backward()
    return out.float(), [p.grad.float() for p in model.parameters()]


def _model_against_cudnn(tmp_path, monkeypatch, name: str, convs: int, amp: bool, tf32: bool,
                         channels_last: bool = False) -> tuple[dict, dict]:
    """torchvision's ``name`` at N=32 (eval: BatchNorm from running stats, as a fixed function) through
    miofind.torch against cuDNN, on the shipped DB beneath an empty user DB (hybrid: a problem with any trusted
    record is answered): ``convert`` swaps all ``convs`` convolutions, and one forward and backward pass agree
    (output and all gradients within the tolerance of the precision, each parameter's within 10x it). Returns
    miofind.torch's stats before and after miofind's pass."""
    tv = pytest.importorskip("torchvision")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    import miofind.torch as mt

    monkeypatch.setenv("MIOFIND_DB", f"sqlite:///{tmp_path / 'finddb.sqlite'}")
    monkeypatch.delenv("MIOFIND_SYSTEM_DB", raising=False)
    monkeypatch.setenv("MIOFIND_FIND_MODE", "hybrid")
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", tf32)
    mt.clear()
    torch.manual_seed(0)
    ref = getattr(tv.models, name)().cuda().eval()
    x = torch.randn(32, 3, 224, 224, device="cuda")
    if amp or channels_last:
        ref = ref.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    ours = copy.deepcopy(ref)
    assert mt.convert(ours) == (convs, [])
    y_ref, g_ref = _resnet_grads(ref, x, amp)
    before = mt.stats()
    y, g = _resnet_grads(ours, x, amp)
    after = mt.stats()
    tol = 2e-2 if amp else 1e-2 if tf32 else 1e-3
    assert rel(y, y_ref) < tol, rel(y, y_ref)
    flat, flat_ref = torch.cat([t.flatten() for t in g]), torch.cat([t.flatten() for t in g_ref])
    assert rel(flat, flat_ref) < tol, rel(flat, flat_ref)
    worst = max(rel(a, b) for a, b in zip(g, g_ref))
    assert worst < 10 * tol, worst
    mt.clear()
    return before, after


# not strict: whether the compounded bias crosses 1e-2 depends on which layers the find gives the Hopper TF32 forward on
# the GPU at hand (past it on an H100, bench/results/session-nov28b/call7/; within it on an H200, session-nov28c/call4/)
_TRUNCATES = pytest.mark.xfail(strict=False, reason="the Hopper TF32 wgmma truncates FP32 operands where cuDNN rounds "
                               "them: in inference the bias compounds, past 1e-2 on an H100 (session nov28b); off by "
                               "default")


@pytest.mark.parametrize("amp,tf32,cl,hopper_tf32", [
    (False, False, False, False), (True, False, True, False), (False, True, False, False), (False, True, True, False),
    pytest.param(False, True, True, True, marks=_TRUNCATES)],
    ids=["fp32", "amp-fp16-channels-last", "fp32-tf32", "fp32-tf32-channels-last", "fp32-tf32-channels-last-hopper"])
def test_resnet50_matches_cudnn(tmp_path, monkeypatch, amp, tf32, cl, hopper_tf32):
    """ResNet-50 N=32 through miofind.torch against cuDNN (FP32 with TF32 off, AMP channels_last, and FP32 with
    PyTorch's default TF32 convolutions on both sides, NCHW and channels_last): outputs and gradients agree, and the
    shipped DB answers every problem (no find runs). With the Hopper TF32 solvers offered (MIOFIND_HOPPER_TF32=1) the
    channels_last outputs drift past the tolerance: expected to fail until their operands are rounded."""
    if hopper_tf32:
        monkeypatch.setenv("MIOFIND_HOPPER_TF32", "1")
    before, after = _model_against_cudnn(tmp_path, monkeypatch, "resnet50", 53, amp, tf32, cl)
    assert after["finds_run"] == before["finds_run"], after


@pytest.mark.parametrize("amp", [False, True], ids=["fp32", "amp-fp16-channels-last"])
def test_resnext101_grouped_convolutions_match_cudnn(tmp_path, monkeypatch, amp):
    """ResNeXt-101 32x8d N=32 (3x3 convolutions in 32 groups) through miofind.torch against cuDNN, FP32 with TF32
    off and AMP channels_last: outputs and gradients agree. The shipped DB holds its problems (session-nov27b call 3)
    except the few that are also ResNeXt-50's in bench/unseen_models.py's test set, which this test finds."""
    before, after = _model_against_cudnn(tmp_path, monkeypatch, "resnext101_32x8d", 104, amp, False)
    assert after["lookups"] > before["lookups"] and after["db_hits"] - before["db_hits"] >= \
        0.9 * (after["lookups"] - before["lookups"]), after
