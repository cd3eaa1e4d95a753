"""miofind.torch's C++ hot path (``miofind/torch/_fast.cpp``): it builds against the installed PyTorch and
checks the recipes it is given (CPU); on the GPU, a planned network's forward, dx and dw through it equal the
Python path's bit for bit (the same kernels, the Hopper family's tensor maps encoded in C++), it is really taken,
and what it cannot launch (cuDNN plans, CUDA-graph capture) goes through the Python path with the same results."""

from __future__ import annotations

import importlib.util

import pytest

_spec = importlib.util.find_spec("torch")
if _spec is None or _spec.origin is None:
    pytest.skip("PyTorch is not installed (pip install \"miofind[torch]\")", allow_module_level=True)
torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402

from miofind.torch import _fast  # noqa: E402


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    """The extension built into a fresh kernel cache and loaded (skipped without a C++ compiler)."""
    if _fast.compiler() is None:
        pytest.skip("no C++ compiler: miofind.torch stays on its Python path")
    mp = pytest.MonkeyPatch()
    mp.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path_factory.mktemp("cache")))
    try:
        path = _fast.build()
        yield _fast._load(path)
    finally:
        mp.undo()


ONLY_LAUNCHES_TAKE_MAPS = "only a kernel launch of its own \\(kind 0 or 3\\) takes tensor maps"


def _kernel(**kw):
    k = dict(func=0x1000, grid=[1, 1, 1], block=[32, 1, 1], smem=0, values=[0, 0, 7], slots=[0, 1], roles=[0, 2],
             offs=[0, 0], maps=[], kind=0)
    k.update(kw)
    return (k["func"], k["grid"], k["block"], k["smem"], k["values"], k["slots"], k["roles"], k["offs"], k["maps"],
            k["kind"]) + ((k["nbytes"],) if "nbytes" in k else ())


def _tiled():
    from miofind import tma
    return tma.TiledSpec("FP16", (64, 32), (128,), (64, 32)).fields


def _im2col():
    from miofind import tma
    return tma.Im2colSpec("FP16", (16, 9, 9, 2), (32, 288, 2592), [-1, -1], [-1, -1], 16, 64, (1, 1)).fields


def _plan(ext, recipe):
    shapes = [[2, 4, 5, 5], [2, 3, 5, 5], [4, 3, 1, 1]]
    strides = [[100, 25, 5, 1], [75, 25, 5, 1], [3, 1, 1, 1]]
    return ext.new_plan(recipe, None, None, shapes, strides, torch.float32, 0, False, lambda *a: None,
                        lambda *a: (None, None))


def test_extension_builds_loads_and_keys_its_library(ext):
    """It compiles against this PyTorch into the kernel cache under a name keyed by the source, PyTorch's
    version and the Python ABI, and loads; a plan is numbered and counts its calls."""
    assert _fast.library_path().exists()
    assert _fast._digest() in str(_fast.library_path())
    pid = _plan(ext, ([_kernel()], 0, False, [16, 16, 16, 1], [], -1))
    assert isinstance(pid, int) and ext.counts(pid) == (0, 0)
    assert _plan(ext, None) == pid + 1


def test_armed_calls_answer_none_unless_every_part_of_the_key_holds(ext):
    """A module's armed call (``hot``): an empty slot, another token, a bumped generation or a CPU tensor answer
    None (the caller's Python path); arming names an unknown plan."""
    pid = _plan(ext, None)
    slot = ext.new_hot()
    assert isinstance(slot, int) and slot >= 0 and ext.new_hot() == slot + 1
    x, w = torch.randn(2, 3, 5, 5), torch.randn(4, 3, 1, 1)
    assert ext.hot(slot, 7, x, w, None, False, False) is None          # nothing armed
    key = ([2, 3, 5, 5], [75, 25, 5, 1], [4, 3, 1, 1], [3, 1, 1, 1], torch.float32, 0, False, False)
    with pytest.raises(RuntimeError, match="no fast plan"):
        ext.arm(slot, 7, ext.gen(), 10 ** 6, *key, False, [1, -1, 1, 1], -1, False, torch.float32, False, torch.float32)
    g = ext.gen()
    ext.arm(slot, 7, g, pid, *key, False, [1, -1, 1, 1], -1, False, torch.float32, False, torch.float32)
    assert ext.hot(slot, 7, x, w, None, False, False) is None          # CPU tensors
    assert ext.hot(slot, 8, x, w, None, False, False) is None          # another module's token
    ext.bump()
    assert ext.gen() == g + 1
    ext.free_hot(slot)
    assert ext.hot(slot, 7, x, w, None, False, False) is None          # released
    assert ext.new_hot() == slot                                        # and reused
    with pytest.raises(RuntimeError, match="no hot slot"):
        ext.arm(10 ** 6, 7, g, pid, [1], [1], [1], [1], torch.float32, 0, False, False, False, [1], -1, False,
                torch.float32, False, torch.float32)


def test_a_fused_plan_takes_its_bias_and_no_other(ext):
    """A fused plan's forward takes the bias (the recipe's fifth pointer role, ``launch.BIAS``): its calls without
    one, or with one that is not k dense elements of its type on its device, are refused by name, as a bias given to
    a plan without a fused epilogue is; an activation is numbered 0-2; a fused plan is armed with its bias."""
    shapes = [[2, 4, 5, 5], [2, 3, 5, 5], [4, 3, 1, 1]]
    strides = [[100, 25, 5, 1], [75, 25, 5, 1], [3, 1, 1, 1]]
    k = _kernel(values=[0, 0, 7, 0], slots=[0, 1, 3], roles=[0, 2, 4], offs=[0, 0, 0])

    def new(fused, act=0):
        return ext.new_plan(([k], 0, False, [16, 16, 16, 1], [], -1), None, None, shapes, strides, torch.float32, 0,
                            False, lambda *a: None, lambda *a: (None, None), fused, act)
    fused, plain = new(True, 1), new(False)
    x, w, b = torch.randn(2, 3, 5, 5), torch.randn(4, 3, 1, 1), torch.randn(4)
    refused = "a fused plan takes its bias"
    for call in (lambda: ext.forward(x, w, None, fused, 0), lambda: ext.forward(x, w, b, fused, 0),
                 lambda: ext.forward(x, w, b, plain, 0), lambda: ext.apply(x, w, w, b, plain, 0),
                 lambda: ext.apply(x, w, w, None, fused, 0)):
        with pytest.raises(RuntimeError, match=refused):        # b is on the CPU: not the plan's device
            call()
    with pytest.raises(RuntimeError, match="act must be 0"):
        new(True, 3)
    key = ([2, 3, 5, 5], [75, 25, 5, 1], [4, 3, 1, 1], [3, 1, 1, 1], torch.float32, 0, False, False)
    with pytest.raises(RuntimeError, match="armed with its bias"):
        ext.arm(ext.new_hot(), 7, ext.gen(), fused, *key, False, [1, -1, 1, 1], -1, False, torch.float32, False,
                torch.float32)


def test_a_plan_without_a_launch_runs_its_fallbacks_under_autograd(ext):
    """Without the driver's launch (no GPU here) a plan's forward and backward are its Python fallbacks, through the
    C++ autograd node: the forward's is given no bias, the backward's only the gradients asked for, and dx and dw
    come back to x and w."""
    import torch.nn.functional as F
    from torch.nn.grad import conv2d_input, conv2d_weight

    shapes = [[2, 4, 5, 5], [2, 3, 5, 5], [4, 3, 1, 1]]
    strides = [[100, 25, 5, 1], [75, 25, 5, 1], [3, 1, 1, 1]]
    seen = []

    def fwd(x, wc, bias):
        seen.append(("F", bias))
        return F.conv2d(x, wc)

    def bwd(dy, x, wc, need_dx, need_dw):
        seen.append(("B", need_dx, need_dw))
        return (conv2d_input(x.shape, wc, dy) if need_dx else None,
                conv2d_weight(x, wc.shape, dy) if need_dw else None)
    pid = ext.new_plan(None, None, None, shapes, strides, torch.float32, 0, False, fwd, bwd)
    x = torch.randn(2, 3, 5, 5, requires_grad=True)
    w = torch.randn(4, 3, 1, 1, requires_grad=True)
    y = ext.apply(x, w, w, None, pid, 0)
    dy = torch.randn_like(y)
    y.backward(dy)
    xr, wr = x.detach().requires_grad_(), w.detach().requires_grad_()
    F.conv2d(xr, wr).backward(dy)
    assert seen == [("F", None), ("B", True, True)] and ext.counts(pid) == (0, 2)
    assert torch.allclose(x.grad, xr.grad) and torch.allclose(w.grad, wr.grad)


def test_a_recipe_takes_tensor_maps(ext):
    """The Hopper kernels' recipes: tensor-map parameters, each the map of a role's address from one of the
    recipe's specs (tiled or im2col, miofind.tma's encode fields)."""
    k = _kernel(values=[0, 0, 7, 0, 0], maps=[(3, 0, 0, 1), (4, 1, 0, 0)])
    assert isinstance(_plan(ext, ([k], 0, False, [16, 16, 16, 1], [_tiled(), _im2col()], -1)), int)


@pytest.mark.parametrize("bad,match", [
    (dict(slots=[0, 5]), "slot out of range"),
    (dict(roles=[0, 5]), "slot out of range"),
    (dict(roles=[0]), "inconsistent argument slots"),
    (dict(func=0), "null function"),
    (dict(grid=[0, 1, 1]), "bad launch dimensions"),
    (dict(block=[2048, 1, 1]), "bad launch dimensions"),
    (dict(kind=4), "kind must be 0 \\(launch\\), 1"),
    (dict(kind=2), "nbytes does not fit its cells"),
    (dict(kind=2, values=[0] * 4, nbytes=33), "nbytes does not fit its cells"),
    (dict(kind=2, values=[0] * 4, nbytes=28, maps=[(2, 0, 0, 0)]), ONLY_LAUNCHES_TAKE_MAPS),
    (dict(kind=1, values=[0] * 17, slots=[0], roles=[0], offs=[0]), "at most 16 arguments"),
    (dict(kind=1, values=[0] * 4, maps=[(3, 0, 0, 0)]), ONLY_LAUNCHES_TAKE_MAPS),
])
def test_a_bad_recipe_is_refused_by_name(ext, bad, match):
    with pytest.raises(RuntimeError, match=match):
        _plan(ext, ([_kernel(**bad)], 0, False, [1, 1, 1, 1], [_tiled()], -1))


def test_a_recipe_takes_a_library_kernel_as_one_parameter_buffer(ext):
    """A cuBLASLt matmul's kernel read from a graph capture (miofind.capture): its parameters one buffer of nbytes in
    8-byte cells, up to 4 KiB, the role addresses written into cells."""
    k = _kernel(kind=2, values=[0] * 512, nbytes=4093, slots=[1, 300], roles=[1, 2], offs=[64, 0])
    assert isinstance(_plan(ext, ([_kernel(), k], 0, False, [256] * 4, [], 7)), int)


def test_a_recipe_takes_library_calls_and_its_stream(ext):
    """A traced recipe (GEMM, Winograd): kernel launches and library calls (cublasLtMatmul's 16 arguments, four of
    them pointers), pinned to the stream its calls carry; the recipe names that stream (-1: any)."""
    call = _kernel(kind=1, grid=[1, 1, 1], block=[1, 1, 1], values=[0] * 16, slots=[3, 5, 8, 10], roles=[1, 0, 2, 2],
                   offs=[0, 256, 0, 0])
    assert isinstance(_plan(ext, ([_kernel(), call], 0, False, [256] * 4, [], 12345)), int)
    with pytest.raises(RuntimeError, match="expected \\(kernels, ws_bytes, swap, align, map specs, stream\\)"):
        _plan(ext, ([_kernel()], 0, False, [1, 1, 1, 1], []))


@pytest.mark.parametrize("maps,specs,match", [
    ([(1, 0, 0, 0)], "tiled", "also a pointer slot"),
    ([(2, 0, 0, 1)], "tiled", "map: out of range"),
    ([(2, 5, 0, 0)], "tiled", "map: out of range"),
    ([(9, 0, 0, 0)], "tiled", "map: out of range"),
    ([(2, 0, 0)], "tiled", "expected \\(param, role, offset, spec\\)"),
    ([(2, 0, 0, 0)] * 17, "tiled", "more than 16 tensor maps"),
    ([], "short", "13 encode fields"),
    ([], "rank", "must match the rank"),
    ([], "kind", "kind must be 0"),
])
def test_a_bad_map_is_refused_by_name(ext, maps, specs, match):
    t = _tiled()
    spec = {"tiled": t, "short": t[:5], "rank": (t[0], t[1], 3, *t[3:]), "kind": (7, *t[1:])}[specs]
    with pytest.raises(RuntimeError, match=match):
        _plan(ext, ([_kernel(maps=maps)], 0, False, [1, 1, 1, 1], [spec], -1))


def test_align_must_name_four_roles(ext):
    with pytest.raises(RuntimeError, match="align takes 4 values"):
        _plan(ext, ([_kernel()], 0, False, [1, 1], [], -1))


def test_with_recipe_names_every_tensor_map():
    """A launch's MAP arguments each need a (role, offset, spec) in its recipe step."""
    import numpy as np

    from miofind import launch, tma
    spec = tma.TiledSpec("FP16", (64, 32), (128,), (64, 32))
    lk = launch.Launch(object(), (1, 1, 1), (32, 1, 1), (launch.PTR, launch.MAP, np.int32(3)))
    inv = launch.with_recipe(lambda *a: None, [(lk, ((launch.A, 0),), ((launch.B, 0, spec),))], (16, 16, 16, 1))
    (step,), align, ws = inv.recipe
    assert step == (lk, ((launch.A, 0),), ((launch.B, 0, spec),)) and align == (16, 16, 16, 1) and not ws
    with pytest.raises(ValueError, match="1 tensor-map argument\\(s\\) given 0 map role"):
        launch.with_recipe(lambda *a: None, [(lk, ((launch.A, 0),))])


class _Kern:
    """A stand-in for a compiled kernel: ``Launch.function()`` reads ``kernel.kernel.ptr``."""

    def __init__(self, ptr):
        self.kernel = type("K", (), {"ptr": ptr})()


def test_trace_reads_each_pointer_back_as_a_role_and_offset():
    """``launch.trace`` runs a traceable invoker on stand-in addresses with nothing launched: each pointer comes
    back as (role, byte offset), a pointer that is none of its arguments stays a value, library calls keep their
    argument blocks; a tensor-map launch is refused."""
    import numpy as np

    from miofind import launch as L

    k1 = L.Launch(_Kern(0x10), (3, 1, 1), (64, 1, 1), (L.PTR, L.PTR, np.int32(5)))
    k2 = L.Launch(_Kern(0x20), (1, 1, 1), (32, 1, 1), (L.PTR, L.PTR, L.PTR))
    const = 0x7F0000001000          # a buffer of the solver's own (not an argument)
    seen = []

    def inv(a, b, out, ws, stream):
        seen.append(stream)
        k1(stream, a + 512, ws + 256)
        assert L.trace_call(0x99, [1, 2, 3, 0, 5, 0, 7, 8, 0, 10, 0, 12], ((3, ws + 256), (5, b), (8, out), (10, out)))
        k2(stream, out, const, a)
    steps = L.trace(L.mark_traceable(inv), True, 77)
    assert seen == [77] and len(steps) == 3
    kind, func, grid, block, smem, values, slots = steps[0]
    assert (kind, func, grid, block) == ("launch", 0x10, (3, 1, 1), (64, 1, 1))
    assert slots == [(0, L.A, 512), (1, L.WS, 256)] and values[2] == 5
    assert steps[1] == ("call", 0x99, [1, 2, 3, 0, 5, 0, 7, 8, 0, 10, 0, 12],
                        [(3, L.WS, 256), (5, L.B, 0), (8, L.OUT, 0), (10, L.OUT, 0)])
    assert steps[2][6] == [(0, L.OUT, 0), (2, L.A, 0)] and steps[2][5][1] == const
    assert not L.trace_call(0x99, [], ())      # no trace runs now: the caller makes the call

    m = L.Launch(_Kern(0x30), (1, 1, 1), (32, 1, 1), (L.MAP, L.PTR))

    def with_map(a, b, out, ws, stream):
        m.with_maps(stream, [(0, None)], a)
    with pytest.raises(L.NotTraceable, match="tensor maps"):
        L.trace(with_map, False, 0)


def test_a_traced_recipe_is_pinned_to_its_stream_when_it_calls_a_library():
    """``_fast.recipe`` of a traceable invoker: 256-byte alignment for every role, the launches' and calls' kinds,
    and the stream only when a library call carries it; kept per stream on the invoker."""
    import types

    import numpy as np

    from miofind import launch as L

    k1 = L.Launch(_Kern(0x10), (3, 1, 1), (64, 1, 1), (L.PTR, L.PTR, np.int32(5)))

    def plain(a, b, out, ws, stream):
        k1(stream, a, out)

    def calls(a, b, out, ws, stream):
        k1(stream, a, out)
        L.trace_call(0x99, [0] * 16, ((3, a), (5, b), (8, out), (10, out)))
    for inv, want_stream in ((plain, -1), (calls, 42)):
        e = types.SimpleNamespace(invoker=L.mark_traceable(inv), ws_bytes=0, swap=False, fused=False, dev=0,
                                  solver_id="X")
        kernels, ws, swap, align, specs, stream = _fast.recipe(e, 42)
        assert align == [256] * 4 and stream == want_stream and specs == []
        assert [k[9] for k in kernels] == ([0] if inv is plain else [0, 1])
        assert kernels[0][5:8] == ([0, 1], [L.A, L.OUT], [0, 0])
        assert _fast.recipe(e, 42) is inv._fast_traced[(42, True)]


def test_the_custom_ops_cuda_kernels_are_the_extensions(ext):
    """The extension registers the custom ops' CUDA kernels once per process (a second registration, of this load or
    another, is refused); a key is learned only for a plan with that direction's recipe and for CUDA tensors, and
    clearing or turning the table off bumps its generation (a learn started before it is refused)."""
    from miofind.torch import _ops
    _register_ops(ext)
    assert ext.register_ops(_ops._op_python, _ops._autograd_kernels()) is False and ext.ops_registered() is True
    for name in ("conv_forward", "conv_backward_data", "conv_backward_weight"):
        for key in ("CUDA", "AutogradCUDA", "AutogradMeta"):
            assert torch._C._dispatch_has_kernel_for_dispatch_key(f"miofind::{name}", key), (name, key)
    x, w = torch.randn(2, 3, 5, 5), torch.randn(4, 3, 1, 1)
    conv = ([1, 1], [0, 0], [1, 1], 1)
    pid = _plan(ext, ([_kernel()], 0, False, [16, 16, 16, 1], [], -1))
    assert ext.op_learn(0, x, w, [], *conv, pid, ext.ops_gen()) is False          # CPU tensors: no key
    with pytest.raises(RuntimeError, match="no fast plan"):
        ext.op_learn(0, x, w, [], *conv, 10 ** 6, ext.ops_gen())
    with pytest.raises(RuntimeError, match="has no recipe for the call's direction"):
        ext.op_learn(1, x, w, [2, 3, 5, 5], *conv, pid, ext.ops_gen())
    g = ext.ops_gen()
    ext.ops_clear()
    assert ext.ops_gen() == g + 1
    ext.ops_set_on(False)
    assert ext.ops_stats()[3] is False and ext.ops_gen() == g + 2
    ext.ops_set_on(True)
    assert ext.ops_stats()[3] is True


def _register_ops(ext):
    """The custom ops' C++ kernels registered in this process, with their autograd kernels (the first registration
    of a process holds: a test that ran before may have made it)."""
    from miofind.torch import _ops
    ext.register_ops(_ops._op_python, _ops._autograd_kernels())
    assert ext.ops_autograd_stats()[3] is True, "registered without the autograd kernels"


def test_the_custom_ops_autograd_kernels_redispatch_what_records_nothing(ext):
    """The extension's C++ autograd kernels (meta tensors here; CUDA ones on the GPU): a call with grad mode off, or
    with no input that requires grad, is redispatched below autograd in C++ and reaches the op's kernel (the fake one:
    the output's shape and memory format), each op to its own; a call that records for autograd goes to custom_op's
    autograd kernel, whose backward runs the backward ops (through the C++ kernels again, with grad mode off); turned
    off, every call goes to custom_op's kernel with the same answers."""
    _register_ops(ext)
    ops = torch.ops.miofind
    conv = ([1, 1], [1, 1], [1, 1], 1)
    cl = torch.channels_last
    x = torch.empty(2, 3, 5, 7, device="meta").contiguous(memory_format=cl)
    w = torch.empty(4, 3, 3, 3, device="meta")
    dy = torch.empty(2, 4, 5, 7, device="meta")

    def counts():
        below, python, _, _ = ext.ops_autograd_stats()
        return below, python

    def shapes():
        y = ops.conv_forward(x, w, *conv)
        dx = ops.conv_backward_data(dy, w, [2, 3, 5, 7], *conv)
        dw = ops.conv_backward_weight(dy, x, [4, 3, 3, 3], *conv)
        return [(tuple(t.shape), t.is_contiguous(memory_format=cl)) for t in (y, dx, dw)]

    want = [((2, 4, 5, 7), True), ((2, 3, 5, 7), False), ((4, 3, 3, 3), True)]
    c0 = counts()
    with torch.no_grad():
        assert shapes() == want
    assert shapes() == want                         # grad mode on, nothing requires grad
    c1 = counts()
    assert (c1[0] - c0[0], c1[1] - c0[1]) == (6, 0)
    wg = w.clone().requires_grad_()
    y = ops.conv_forward(x, wg, *conv)
    c2 = counts()
    assert (c2[0] - c1[0], c2[1] - c1[1]) == (0, 1)
    assert y.requires_grad and "conv_forward" in type(y.grad_fn).__name__
    y.backward(torch.empty(2, 4, 5, 7, device="meta"))
    c3 = counts()
    assert wg.grad.shape == w.shape and (c3[0] - c2[0], c3[1] - c2[1]) == (1, 0)    # dw alone: x needs no grad
    ext.ops_autograd_set_on(False)
    try:
        with torch.no_grad():
            assert shapes() == want
        c4 = counts()
        assert (c4[0] - c3[0], c4[1] - c3[1]) == (0, 3)
    finally:
        ext.ops_autograd_set_on(True)


class _FakeExtension:
    def __init__(self, before=None):
        # before: None (nothing registered yet), "this" (this load registered them), "other" (another load did)
        self.registered, self.before = [], before

    def register_ops(self, python, autograd=None):
        self.registered.append((python, autograd))
        return self.before is None

    def ops_registered(self):
        return self.before != "other"


def test_the_ops_kernels_are_registered_once_from_the_main_thread(monkeypatch):
    """``ops_kernels`` registers the C++ kernels from the main thread only (never from the background build's or
    another thread, while the main thread may be calling the ops), once; while the extension builds it waits for a
    later call, and where the extension is off or failed it never registers."""
    import threading
    from miofind.torch import _ops
    ext = _FakeExtension()
    state = {"mod": None}
    monkeypatch.setattr(_fast, "module", lambda: state["mod"])
    monkeypatch.setattr(_fast, "_ops_done", False)
    monkeypatch.setattr(_fast, "_ops_module", None)
    monkeypatch.setattr(_fast, "_module", None)            # building
    _fast.ops_kernels(_ops._op_python)
    assert _fast._ops_done is False and _fast._ops_module is None
    state["mod"] = ext
    t = threading.Thread(target=_fast.ops_kernels, args=(_ops._op_python,))
    t.start()
    t.join()
    assert ext.registered == [] and _fast._ops_done is False
    asked = []
    _fast.ops_kernels(_ops._op_python, lambda: asked.append(1) or ["f", "b", "w"])
    _fast.ops_kernels(_ops._op_python, lambda: asked.append(1) or ["f", "b", "w"])
    assert ext.registered == [(_ops._op_python, ["f", "b", "w"])] and asked == [1]
    assert _fast._ops_module is ext and _fast._ops_done is True
    monkeypatch.setattr(_fast, "_ops_done", False)
    monkeypatch.setattr(_fast, "_ops_module", None)
    monkeypatch.setattr(_fast, "_module", False)           # off, or its build failed
    state["mod"] = None
    _fast.ops_kernels(_ops._op_python)
    assert _fast._ops_done is True and _fast._ops_module is None
    # registered before by this load (its library file loaded once more, as the ``ext`` fixture's load of the same
    # build): the kernels are this load's; by another load: they are not
    for before, want in (("this", True), ("other", False)):
        ext = _FakeExtension(before)
        state["mod"] = ext
        monkeypatch.setattr(_fast, "_ops_done", False)
        monkeypatch.setattr(_fast, "_ops_module", None)
        _fast.ops_kernels(_ops._op_python)
        assert len(ext.registered) == 1 and _fast._ops_done is True and (_fast._ops_module is ext) is want, before


class _FakeOpsModule:
    """What ``_ops._learn`` asks of the extension, recorded."""

    def __init__(self):
        self.on, self.plans, self.learned = True, [], []

    def ops_set_on(self, on):
        self.on = on

    def new_plan(self, *args):
        self.plans.append(args)
        return 17

    def op_learn(self, *args):
        self.learned.append(args)
        return True


def _op_call(d):
    """(a, b, shape) of a direction-``d`` op call of conv(x (2, 3, 6, 5), w (4, 3, 3, 3), pad 1), and the table key
    its Python implementation (``_ops._run``) looks its Entry up by."""
    from miofind.torch import _policy
    x, w, dy = torch.randn(2, 3, 6, 5), torch.randn(4, 3, 3, 3), torch.randn(2, 4, 6, 5)
    a, b, shape = ((x, w, []), (dy, w, list(x.shape)), (dy, x, list(w.shape)))[d]
    key = _policy.table_key("FBW"[d], x.shape, w.shape, [1, 1], [1, 1], [1, 1], 1, torch.float32, False, None)
    return a, b, shape, key


@pytest.mark.parametrize("d", [0, 1, 2], ids=["F", "B", "W"])
def test_an_op_call_teaches_the_extension_its_entrys_launches(monkeypatch, d):
    """A call through the ops' Python path whose Entry is launches (``_fast.recipe``) makes a one-direction plan of
    them (the output, x and w dense in the problem's format) and learns the call's key for it, with the table's
    generation from before the call; also in a process whose CUDA-graph trees run on streams of their own."""
    from types import SimpleNamespace
    from miofind.torch import _ops, _policy
    a, b, shape, key = _op_call(d)
    e = SimpleNamespace(fused=False)
    monkeypatch.setitem(_policy._table, key, e)
    monkeypatch.setattr(_ops, "_stream", lambda dev: 5)
    monkeypatch.setattr(_policy, "_capturing_stream", lambda: False)      # CPU PyTorch has no CUDA stream to ask
    monkeypatch.setattr(_policy, "_graph_trees_in_use", lambda: True)
    monkeypatch.setattr(_policy, "_in_graph_tree_run", lambda: False)
    monkeypatch.setattr(_fast, "recipe", lambda entry, stream: ("recipe", stream) if entry is e else None)
    mod = _FakeOpsModule()
    assert _ops._learn(mod, 9, d, a, b, shape, [1, 1], [1, 1], [1, 1], 1) is True
    (specs_shapes, ), (learned, ) = [p[:5] for p in mod.plans], mod.learned
    assert list(specs_shapes[:3]) == [("recipe", 5) if i == d else None for i in range(3)]
    assert specs_shapes[3] == [[2, 4, 6, 5], [2, 3, 6, 5], [4, 3, 3, 3]]
    assert specs_shapes[4] == [[120, 30, 5, 1], [90, 30, 5, 1], [27, 9, 3, 1]]
    assert mod.plans[0][7] is False and mod.plans[0][8] == (e,)        # NCHW; the plan keeps the Entry
    assert learned[0] == d and learned[1] is a and learned[2] is b and learned[3] == shape
    assert learned[8:] == (17, 9)


@pytest.mark.parametrize("case", ["no recipe", "not ready", "not dense", "fused", "swap pending", "graph tree run"])
def test_an_op_call_the_extension_cannot_launch_stays_on_the_python_path(monkeypatch, case):
    """Nothing is learned for an Entry without launches (remembered: not asked again), one whose specialised build
    is pending (asked again), inputs that needed a copy, a fused Entry, a deferred solution waiting, or a call of a
    CUDA-graph tree's run (on its own stream); the extension's table stays on."""
    from types import SimpleNamespace
    from miofind.torch import _ops, _policy
    a, b, shape, key = _op_call(0)
    e = SimpleNamespace(fused=case == "fused")
    asked = []

    def recipe(entry, stream):
        asked.append(entry)
        if case == "not ready":
            raise _fast.NotReady("generic build")
        return None if case == "no recipe" else ("recipe",)
    monkeypatch.setitem(_policy._table, key, e)
    monkeypatch.setattr(_ops, "_stream", lambda dev: 5)
    monkeypatch.setattr(_policy, "_capturing_stream", lambda: False)      # CPU PyTorch has no CUDA stream to ask
    monkeypatch.setattr(_fast, "recipe", recipe)
    monkeypatch.setattr(_policy, "_graph_trees_in_use", lambda: case == "graph tree run")
    monkeypatch.setattr(_policy, "_in_graph_tree_run", lambda: case == "graph tree run")
    monkeypatch.setattr(_policy, "_swaps", [("k", None)] if case == "swap pending" else [])
    monkeypatch.setattr(_ops, "_unlearnable", {})
    if case == "not dense":
        a = a.transpose(2, 3).contiguous().transpose(2, 3)
    mod = _FakeOpsModule()
    for _ in range(2):
        assert _ops._learn(mod, 1, 0, a, b, shape, [1, 1], [1, 1], [1, 1], 1) is False
    assert mod.plans == [] and mod.learned == []
    assert mod.on is True
    assert asked == {"no recipe": [e], "not ready": [e, e]}.get(case, [])


def test_off_means_the_python_path(monkeypatch):
    monkeypatch.setenv("MIOFIND_TORCH_CPP", "off")
    monkeypatch.setattr(_fast, "_module", None)
    monkeypatch.setattr(_fast, "_building", None)
    assert _fast.module() is None and "MIOFIND_TORCH_CPP=off" in _fast.status()


def test_a_bad_setting_is_named(monkeypatch):
    from miofind import env
    monkeypatch.setenv("MIOFIND_TORCH_CPP", "maybe")
    with pytest.raises(ValueError, match="MIOFIND_TORCH_CPP='maybe'"):
        env.torch_cpp()


# -- GPU ------------------------------------------------------------------------------------------------------------

class _Net(nn.Module):
    """A stem without dx (its input needs no gradient), a strided 3x3, a depthwise 3x3 (W through a workspace),
    1x1s with and without bias."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False)
        self.pw = nn.Conv2d(32, 24, 1, bias=False)

    def forward(self, x):
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        x = torch.relu(self.dw(x))
        return self.pw(x)


def _run(net, xs, amp=False):
    outs = []
    for x in xs:
        net.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            y = net(x)
        y.float().square().mean().backward()
        outs.append((y.detach().clone(), [p.grad.clone() for p in net.parameters()]))
    return outs


@pytest.fixture
def gpu_mt(tmp_db, monkeypatch):
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    import miofind.torch as mt
    monkeypatch.setenv("MIOFIND_TORCH_CPP", "sync")
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "sync")
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    mt.clear()
    yield mt
    torch.backends.cudnn.allow_tf32 = tf32
    _fast._module and _fast._module.set_enabled(True)
    mt.clear()


@pytest.mark.gpu
@pytest.mark.parametrize("amp,cl", [(False, False), (False, True), (True, True)], ids=["fp32", "fp32-cl", "amp-cl"])
def test_cpp_path_equals_python_path(gpu_mt, amp, cl):
    """Four steps of a small network on new data: forward, dx and dw through the C++ path equal the Python path's
    bit for bit; the C++ launches are really taken (its call counters; under AMP the Hopper family's, with
    their tensor maps). Under deterministic algorithms, so that every pick is one of our
    deterministic solvers (a cuDNN plan may sum with atomics: two runs of it need not agree bit for bit)."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        _equal_paths(gpu_mt, amp, cl)
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.gpu
def test_backward_splits_between_cpp_and_python(gpu_mt, monkeypatch):
    """A backward whose dw solution has no recipe (as a cuDNN plan's) launches dx from C++ and asks the Python
    path for dw alone: the same gradients as the Python path, both counters moving."""
    real = _fast.recipe
    monkeypatch.setattr(_fast, "recipe", lambda e, *a: None if e.pr.problem.direction == "W" else real(e, *a))
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        calls = _equal_paths(gpu_mt, True, True)
    finally:
        torch.use_deterministic_algorithms(False)
    assert sum(b for _, b in calls) > 0, calls


def _equal_paths(mt, amp, cl):
    from miofind.torch import functional as MF

    torch.manual_seed(0)
    net = _Net().cuda()
    fmt = torch.channels_last if cl else torch.contiguous_format
    net = net.to(memory_format=fmt)
    mt.convert(net)
    xs = [torch.randn(4, 3, 20, 18, device="cuda").contiguous(memory_format=fmt) for _ in range(4)]
    _run(net, xs[:2], amp)           # finds, plans, learned backwards, C++ plans
    assert _fast.module() is not None, _fast.status()
    plans = [p for p in MF._plans.values() if type(p.fast) is int]
    assert plans, [p.fast for p in MF._plans.values()]
    mod = _fast.module()
    before = {p.fast: mod.counts(p.fast) for p in plans}
    fast = _run(net, xs, amp)
    after = {p.fast: mod.counts(p.fast) for p in MF._plans.values() if type(p.fast) is int}
    assert set(after) == set(before), "a C++ plan was remade once the paths had been learned"
    calls = [(after[i][0] - before[i][0], after[i][1] - before[i][1]) for i in before]
    assert all(f + b > 0 for f, b in calls), calls
    # some of the picks (implicit GEMM, the Hopper family under AMP, depthwise) launch from C++
    assert sum(f for f, _ in calls) > 0, calls
    mod.set_enabled(False)           # every call through the Python fallback: the same kernels
    slow = _run(net, xs, amp)
    mod.set_enabled(True)
    picks = {k[0] + str(k[1]): e.solver_id for k, e in mt._policy._table.items()}
    for step, ((yf, gf), (ys, gs)) in enumerate(zip(fast, slow)):
        assert torch.equal(yf, ys), (step, picks)
        for (name, _), a, b in zip(net.named_parameters(), gf, gs):
            assert a.dtype == b.dtype and torch.equal(a, b), (step, name, picks)
    return calls


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,cl", [(torch.float32, False), (torch.float16, True)], ids=["fp32", "fp16-cl"])
def test_custom_ops_launch_from_cpp_once_learned(gpu_mt, dtype, cl):
    """The custom ops as ``torch.compile(mode="default")`` graphs call them, each from the host: a key's first call
    goes through Python and teaches the extension; its repeats on fresh data launch from C++ (its counters) and equal
    the Python path's results bit for bit, and a float64 reference within the type's tolerance. An input that is not
    dense in the problem's format stays on the Python path, with the same answer. Under deterministic algorithms, so
    that every pick is one of our solvers (a cuDNN plan off its native backend is not launched from C++)."""
    from miofind.torch import _ops
    ops = torch.ops.miofind
    assert _fast.module() is not None, _fast.status()
    fmt = torch.channels_last if cl else torch.contiguous_format
    conv = ([1, 1], [1, 1], [1, 1], 1)

    def data(seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(4, 16, 14, 12, device="cuda", generator=g).to(dtype).contiguous(memory_format=fmt)
        w = (torch.randn(24, 16, 3, 3, device="cuda", generator=g) / 12).to(dtype).contiguous(memory_format=fmt)
        dy = torch.randn(4, 24, 14, 12, device="cuda", generator=g).to(dtype).contiguous(memory_format=fmt)
        return x, w, dy

    def calls(x, w, dy):
        return (ops.conv_forward(x, w, *conv), ops.conv_backward_data(dy, w, list(x.shape), *conv),
                ops.conv_backward_weight(dy, x, list(w.shape), *conv))

    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        calls(*data(1))             # the first call through Python (on the main thread) registers the C++ kernels
        mod = _fast._ops_module
        assert mod is not None, "the custom ops' CUDA kernels are not the extension's"
        calls(*data(2))             # a traced recipe (GEMM) is learned once its cuBLASLt plan is set up
        keys, hits0, misses0, on = mod.ops_stats()
        assert on and keys >= 1, (keys, {k[0]: e.solver_id for k, e in gpu_mt._policy._table.items()})
        x, w, dy = data(3)
        below0 = mod.ops_autograd_stats()[0]
        fast = calls(x, w, dy)
        _, hits, misses, _ = mod.ops_stats()
        assert hits - hits0 >= 1 and (hits - hits0) + (misses - misses0) == 3, (hits0, hits, misses0, misses)
        assert mod.ops_autograd_stats()[0] - below0 == 3     # nothing requires grad: C++ redispatch below autograd
        mod.set_enabled(False)      # every call through the Python path: the same Entries
        slow = calls(x, w, dy)
        mod.set_enabled(True)
        picks = {k[0]: e.solver_id for k, e in gpu_mt._policy._table.items()}
        for d, (f, p) in enumerate(zip(fast, slow)):
            assert f.dtype == p.dtype and f.stride() == p.stride() and torch.equal(f, p), ("FBW"[d], picks)
        xd, wd, dyd = (t.double() for t in (x, w, dy))
        want = (torch.nn.functional.conv2d(xd, wd, padding=1),
                torch.nn.grad.conv2d_input(xd.shape, wd, dyd, padding=1),
                torch.nn.grad.conv2d_weight(xd, wd.shape, dyd, padding=1))
        tol = 1e-5 if dtype is torch.float32 else 2e-3     # TF32 off (gpu_mt); FP16: tests/torch's AMP tolerance
        for d, (f, r) in enumerate(zip(fast, want)):
            err = float((f.double() - r).norm() / r.norm())
            assert err < tol, ("FBW"[d], picks, err)
        # x as a strided view (every other column of a wider tensor): dense in no format, copied by the Python path
        wide = torch.randn(4, 16, 14, 24, device="cuda").to(dtype).contiguous(memory_format=fmt)
        xs = wide[..., ::2]
        _, hits0, misses0, _ = mod.ops_stats()
        for _ in range(2):
            got = ops.conv_forward(xs, w, *conv)
        _, hits, misses, _ = mod.ops_stats()
        assert (hits - hits0, misses - misses0) == (0, 2)
        assert torch.equal(got, ops.conv_forward(xs.contiguous(memory_format=fmt), w, *conv))
        assert gpu_mt.stats()["ops_cpp"] >= 1
    finally:
        torch.use_deterministic_algorithms(False)
        _fast._module and _fast._module.set_enabled(True)
        _fast._ops_module and _fast._ops_module.set_enabled(True)


@pytest.mark.gpu
def test_custom_ops_record_autograd_through_the_cpp_autograd_kernels(gpu_mt):
    """Eager autograd through the custom ops on CUDA tensors (as a tensor subclass's calls reach them): the extension's
    AutogradCUDA kernel hands the recording forward to custom_op's autograd kernel, whose backward runs B and W with
    grad mode off (the C++ redispatch); y, dx and dw match a float64 reference, and the counters say which path ran.
    Under deterministic algorithms, so that every pick is one of our solvers."""
    ops = torch.ops.miofind
    conv = ([2, 1], [1, 2], [1, 1], 2)
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(3, 8, 13, 11, device="cuda", generator=g).requires_grad_()
    w = (torch.randn(12, 4, 3, 5, device="cuda", generator=g) / 8).requires_grad_()
    dy = torch.randn(3, 12, 7, 11, device="cuda", generator=g)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with torch.no_grad():
            ops.conv_forward(x, w, *conv)   # registers the C++ kernels (the main thread's first CUDA call)
        mod = _fast._ops_module
        assert mod is not None and mod.ops_autograd_stats()[3], "the C++ autograd kernels are not registered"
        below0, python0, _, _ = mod.ops_autograd_stats()
        y = ops.conv_forward(x, w, *conv)
        assert "conv_forward" in type(y.grad_fn).__name__
        y.backward(dy)
        below, python, _, _ = mod.ops_autograd_stats()
        assert (below - below0, python - python0) == (2, 1)     # F recorded in Python; B and W below autograd
    finally:
        torch.use_deterministic_algorithms(False)
    xd, wd = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    yd = torch.nn.functional.conv2d(xd, wd, None, *conv)
    yd.backward(dy.double())
    for got, want in ((y, yd), (x.grad, xd.grad), (w.grad, wd.grad)):
        assert float((got.double() - want).norm() / want.norm()) < 1e-5


@pytest.mark.gpu
def test_cpp_path_matches_cudnn(gpu_mt):
    """The C++ path's forward and gradients against PyTorch's cuDNN convolution on the same network (FP32, TF32
    off)."""
    import copy

    mt = gpu_mt
    torch.manual_seed(1)
    ref = _Net().cuda()
    net = copy.deepcopy(ref)
    mt.convert(net)
    xs = [torch.randn(4, 3, 20, 18, device="cuda") for _ in range(3)]
    _run(net, xs[:2])
    got = _run(net, xs)
    want = _run(ref, xs)
    for (yg, gg), (yw, gw) in zip(got, want):
        assert float((yg - yw).norm() / yw.norm()) < 1e-5
        for a, b in zip(gg, gw):
            assert float((a - b).norm() / b.norm()) < 1e-4


@pytest.mark.gpu
def test_cpp_plans_under_cuda_graph_capture(gpu_mt):
    """A captured forward and backward (the C++ path sees the capture and takes the Python path, which allocates
    nothing it keeps) replays on new data like eager."""
    mt = gpu_mt
    torch.manual_seed(3)
    net = _Net().cuda()
    mt.convert(net)
    x = torch.randn(4, 3, 20, 18, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            net.zero_grad(set_to_none=False)
            net(x).square().mean().backward()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    net.zero_grad(set_to_none=False)
    with torch.cuda.graph(g):
        y = net(x)
        y.square().mean().backward()
    x2 = torch.randn_like(x)
    x.copy_(x2)
    g.replay()
    torch.cuda.synchronize()
    yg, gg = y.clone(), [p.grad.clone() for p in net.parameters()]
    net.zero_grad(set_to_none=True)
    ye = net(x2)
    ye.square().mean().backward()
    assert torch.equal(yg, ye)
    for a, p in zip(gg, net.parameters()):
        assert torch.allclose(a, p.grad, rtol=1e-5, atol=1e-6)


def _find_only(monkeypatch, solver_id: str, which=lambda problem: True) -> None:
    """miofind.torch's finds answer with ``solver_id`` alone for the problems ``which`` selects (it must be among a
    find's solutions), every other problem as found."""
    from miofind.results import FindResult
    from miofind.torch import _policy

    orig = _policy._find

    def find(problem):
        res = orig(problem)
        if not which(problem):
            return res
        sols = [s for s in res if s.solver_id == solver_id]
        assert sols, sorted(s.solver_id for s in res)
        return FindResult(sols, problem=problem, source=res.source, elapsed_ms=res.elapsed_ms)
    monkeypatch.setattr(_policy, "_find", find)


@pytest.mark.gpu
def test_plans_warmed_on_a_side_stream_launch_from_cpp_on_the_default_stream(gpu_mt, monkeypatch):
    """Warm-up calls on a side stream (as before a CUDA-graph capture), then the default stream: a cuBLASLt GEMM's
    C++ plan, whose library calls carry the stream they were traced on, is remade there and launched from C++ (it
    fell back to Python on every call before), and its output equals the reference."""
    from miofind.torch import functional as MF

    _find_only(monkeypatch, "GemmFwd1x1_0_1")
    torch.manual_seed(6)
    x = torch.randn(1, 96, 14, 14, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
    w = (torch.randn(576, 96, 1, 1, device="cuda", dtype=torch.float16) * 0.1).contiguous(
        memory_format=torch.channels_last)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad():
        with torch.cuda.stream(s):
            for _ in range(3):
                MF.conv2d(x, w)
        torch.cuda.current_stream().wait_stream(s)
        (plan,) = MF._plans.values()
        assert type(plan.fast) is int, plan.fast
        pinned = plan.pinned
        MF.conv2d(x, w)                          # the first call on the default stream remakes a pinned plan
        mod = _fast.module()
        f0, b0 = mod.counts(plan.fast)
        ref = torch.nn.functional.conv2d(x.double(), w.double())
        for _ in range(3):
            y = MF.conv2d(x, w)
        f1, b1 = mod.counts(plan.fast)
    torch.cuda.synchronize()
    assert (f1 - f0, b1 - b0) == (3, 0), (pinned, plan.pinned, plan.remade)
    assert plan.remade == (1 if pinned is not None else 0)
    assert float((y.double() - ref).norm() / ref.norm()) < 2e-3


@pytest.mark.gpu
@pytest.mark.parametrize("amp", [False, True], ids=["fp32", "amp-cl"])
def test_armed_module_calls_skip_the_python_key_and_equal_the_python_path(gpu_mt, monkeypatch, amp):
    """A module whose call launched from C++ arms its next calls (``modules._Miofind``): repeats with the same
    arguments never reach ``conv_normalized``, in training and in inference, and give the Python path's outputs and
    gradients bit for bit (deterministic algorithms: our own deterministic solvers). Under autocast the casts of x, the
    weight and the bias are made in C++ (a module whose bias is fused into its forward passes it to its plan). In FP32
    also:
    another input shape, TF32 on, autocast, or forgotten plans (``clear``) go through Python again, with answers that
    match cuDNN."""
    from miofind.torch import functional as MF

    mt = gpu_mt
    fmt = torch.channels_last if amp else torch.contiguous_format
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        torch.manual_seed(7)
        net = _Net().cuda().to(memory_format=fmt)
        mt.convert(net)
        convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
        xs = [torch.randn(4, 3, 20, 18, device="cuda").contiguous(memory_format=fmt) for _ in range(4)]
        _run(net, xs[:3], amp)              # finds, plans, learned backwards, C++ plans, then armed calls
        armed = [m for m in convs if "_miofind_hot" in m.__dict__]
        # under autocast too: c1's input is cast in C++, and c2's bias too (into its forward where that fuses it)
        assert {net.c1, net.c2, net.dw, net.pw} <= set(armed), ([m.weight.shape for m in armed],
                                                                [type(p.fast) for p in MF._plans.values()])
        seen = []
        real = MF.conv_normalized
        monkeypatch.setattr(MF, "conv_normalized", lambda *a, **k: seen.append(a[2].shape) or real(*a, **k))
        fast = _run(net, xs, amp)
        assert len(seen) == 4 * (len(convs) - len(armed)), (len(seen), len(armed), len(convs))

        def infer():
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                return [net(x) for x in xs]
        infer()
        seen.clear()
        yf = infer()
        assert len(seen) == 4 * (len(convs) - len(armed)), (len(seen), len(armed))
        monkeypatch.setattr(_fast, "arm_modules", False)
        slow = _run(net, xs, amp)
        ys = infer()
        monkeypatch.setattr(_fast, "arm_modules", True)
        for step, ((a, ga), (b, gb)) in enumerate(zip(fast, slow)):
            assert torch.equal(a, b), step
            for (name, _), p, q in zip(net.named_parameters(), ga, gb):
                assert p.dtype == q.dtype and torch.equal(p, q), (step, name)
        assert all(torch.equal(a, b) for a, b in zip(yf, ys))
    finally:
        torch.use_deterministic_algorithms(False)
    if amp:
        return
    import copy

    ref = copy.deepcopy(net)
    mt.revert(ref)
    assert not any("_miofind_hot" in m.__dict__ for m in ref.modules())

    def check(x, **kw):
        seen.clear()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=kw.get("amp", False)):
            got, want = net(x), ref(x)
        assert seen, "an armed call took a changed key"
        assert float((got.float() - want.float()).norm() / want.float().norm()) < kw.get("tol", 1e-5)

    with torch.no_grad():
        net(xs[0])
        net(xs[0])
    check(torch.randn(2, 3, 16, 16, device="cuda"))                  # another shape
    with torch.no_grad():
        net(xs[0])
    torch.backends.cudnn.allow_tf32 = True
    try:
        check(xs[0], tol=1e-2)                                       # TF32: another key
    finally:
        torch.backends.cudnn.allow_tf32 = False
    with torch.no_grad():
        net(xs[0])
    check(xs[0], amp=True, tol=2e-2)                                 # autocast
    with torch.no_grad():
        net(xs[0])
    mt.clear()
    check(xs[0])                                                     # plans forgotten


class _FusedNet(nn.Module):
    """ConvNeXt's downsampling layer (2x2 stride 2, a bias), a 3x3 whose bias and ReLU ``fuse`` puts into its forward,
    and a 1x1 head with a bias: under AMP ``channels_last`` each forward is a fused problem."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(64, 128, 2, stride=2)
        self.block = nn.Sequential(nn.Conv2d(128, 128, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(128, 64, 1)

    def forward(self, x):
        return self.head(self.block(self.down(x)))


@pytest.mark.gpu
def test_fused_plans_launch_from_cpp_and_arm_their_modules(gpu_mt, monkeypatch):
    """Fused forwards (the bias, and ReLU where ``fuse`` paired it, in the Hopper forward's epilogue) get C++ plans:
    the forward launches from C++ with the bias as its recipe's pointer, the backward masks dy by ReLU's output and
    sums the bias's gradient in C++, the modules with a bias alone are armed, and four training steps and inference
    give the Python path's outputs and gradients bit for bit (deterministic algorithms), and cuDNN's within AMP's
    tolerance."""
    import copy

    from miofind.torch import functional as MF

    # the fused forwards take the Hopper forward's epilogue (cuDNN's fused graph has no recipe)
    _find_only(monkeypatch, "ConvImplicitGemmHopperFwdBiasActiv", lambda problem: problem.fused)
    mt = gpu_mt
    torch.manual_seed(11)
    ref = _FusedNet().cuda().to(memory_format=torch.channels_last)
    net = copy.deepcopy(ref)
    mt.convert(net)
    assert mt.fuse(net) == 1
    xs = [torch.randn(4, 64, 16, 16, device="cuda").contiguous(memory_format=torch.channels_last) for _ in range(4)]
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        _run(net, xs[:3], True)             # finds, plans, learned backwards, C++ plans, armed calls
        plans = list(MF._plans.values())
        fused = [p for p in plans if p.fused]
        assert len(fused) == 3 and {p.act for p in fused} == {"none", "relu"}, [(p.fused, p.act) for p in plans]
        assert all(type(p.fast) is int and p.entry.solver_id == "ConvImplicitGemmHopperFwdBiasActiv" for p in fused), \
            [(p.fast, p.entry.solver_id) for p in fused]
        armed = {m for m in net.modules() if "_miofind_hot" in m.__dict__}
        assert armed == {net.down, net.head}, armed         # ``fuse``'s module takes the Python key each call
        mod = _fast.module()
        before = {p.fast: mod.counts(p.fast) for p in fused}
        fast = _run(net, xs, True)
        after = {p.fast: mod.counts(p.fast) for p in fused}
        assert all(after[i][0] - before[i][0] >= 4 for i in before), (before, after)     # each step's F at least

        def infer():
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
                return [net(x) for x in xs]
        yf = infer()
        monkeypatch.setattr(_fast, "use", False)            # the Python path: PlannedConv, the Entries' own calls
        monkeypatch.setattr(_fast, "arm_modules", False)
        slow = _run(net, xs, True)
        ys = infer()
    finally:
        torch.use_deterministic_algorithms(False)
    for step, ((a, ga), (b, gb)) in enumerate(zip(fast, slow)):
        assert torch.equal(a, b), step
        for (name, _), p, q in zip(net.named_parameters(), ga, gb):
            assert p.dtype == q.dtype and torch.equal(p, q), (step, name)
    assert all(torch.equal(a, b) for a, b in zip(yf, ys))
    want = _run(ref, xs, True)                              # cuDNN through PyTorch (ReLU as its own op)
    for (yg, gg), (yw, gw) in zip(fast, want):
        assert float((yg.float() - yw.float()).norm() / yw.float().norm()) < 2e-2
        for (name, _), a, b in zip(net.named_parameters(), gg, gw):
            assert float((a.float() - b.float()).norm() / b.float().norm()) < 5e-2, name


class _Net1d(nn.Module):
    """wav2vec 2.0's feature encoder and positional convolution, small: a first layer without dx, strided layers
    with and without bias, and a weight-normed grouped convolution of a channels-last-like input (the transpose of
    (N, T, C) activations) whose weight is made per call and is not dense in that format."""

    def __init__(self):
        super().__init__()
        from torch.nn.utils.parametrizations import weight_norm
        self.c1 = nn.Conv1d(1, 32, 10, stride=5, bias=False)
        self.c2 = nn.Conv1d(32, 32, 3, stride=2, bias=False)
        self.c3 = nn.Conv1d(32, 48, 2, stride=2)
        self.pos = weight_norm(nn.Conv1d(48, 48, 9, padding=4, groups=4), name="weight", dim=2)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.c2(torch.nn.functional.gelu(self.c1(x))))
        t = self.c3(h).transpose(1, 2).contiguous()     # (N, T, C), as a linear layer's output
        return t + self.pos(t.transpose(1, 2)).transpose(1, 2)


@pytest.mark.gpu
@pytest.mark.parametrize("amp", [False, True], ids=["fp32", "amp"])
def test_conv1d_modules_take_plans_and_armed_calls(gpu_mt, monkeypatch, amp):
    """1-D convolutions are planned as the 2-D problems they run as (H = 1 views): after the first steps, every
    call takes a forward plan keyed on the 1-D call, the modules whose weight is dense are armed (their repeats skip
    ``conv_normalized``), the weight-normed one copies its weight per call (``_Plan.wcopy``), every backward is learned
    (a gradient arriving transposed is made dense in the forward's layout), and outputs and every gradient match
    PyTorch's cuDNN step by step, on new data each step."""
    import copy

    from miofind.torch import functional as MF

    mt = gpu_mt
    torch.manual_seed(11)
    net = _Net1d().cuda()
    ref = copy.deepcopy(net)
    assert mt.convert(net).swapped == 4
    xs = [torch.randn(3, 1, 803, device="cuda") for _ in range(6)]
    seen = []
    real = MF.conv_normalized
    monkeypatch.setattr(MF, "conv_normalized", lambda *a, **k: seen.append(a[2].shape) or real(*a, **k))
    tol = 2e-2 if amp else 1e-4
    torch.use_deterministic_algorithms(True, warn_only=True)    # our own solvers (whose recipes C++ launches)
    try:
        for i, x in enumerate(xs):
            if i == 4:
                seen.clear()
            got = _run(net, [x], amp)[0]
            want = _run(ref, [x], amp)[0]
            assert got[0].dtype == want[0].dtype and _rel(got[0], want[0]) < tol, (i, _rel(got[0], want[0]))
            for (name, _), a, b in zip(net.named_parameters(), got[1], want[1]):
                assert a.dtype == b.dtype and _rel(a, b) < tol, (i, name, _rel(a, b))
    finally:
        torch.use_deterministic_algorithms(False)
    plans = [p for k, p in MF._plans.items() if k[0] == 1]
    assert len(plans) == 4, [(k[0], k[1]) for k in MF._plans]
    assert [p.wcopy for p in plans].count(True) == 1
    assert all(type(p.fast) is int for p in plans), [p.fast for p in plans]
    # each backward learned (dy made dense in the forward's layout, c3's arriving transposed): dw from every C++ plan
    assert all(p._fast_with and p._fast_with[1] is not None for p in plans), [p._fast_with for p in plans]
    counts = [_fast._module.counts(p.fast) for p in plans]
    assert sum(c[0] for c in counts) >= 4, counts      # launches from C++ (those without a recipe: Python)
    armed = [m for m in (net.c1, net.c2, net.c3) if "_miofind_hot" in m.__dict__]
    # under autocast too (c1's input and c3's bias cast in C++); the weight-normed module is never armed (wcopy)
    assert armed == [net.c1, net.c2, net.c3], armed
    assert "_miofind_hot" not in net.pos.__dict__
    assert len(seen) == 2 * (4 - len(armed)), (len(seen), len(armed))


def _rel(a, b) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


@pytest.mark.gpu
def test_a_collected_module_releases_its_armed_slot(gpu_mt):
    """An armed module's slot (which holds its weight and, under autocast, the weight's cast) is released when the
    module is collected, and the next module takes it."""
    import gc

    mt = gpu_mt
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        torch.manual_seed(8)
        conv = nn.Conv2d(8, 8, 3, padding=1, bias=False).cuda()
        mt.convert(conv)
        x = torch.randn(2, 8, 12, 12, device="cuda")
        with torch.no_grad():
            for _ in range(3):
                conv(x)
    finally:
        torch.use_deterministic_algorithms(False)
    from miofind.torch import functional as MF

    hot = conv.__dict__.get("_miofind_hot")
    assert hot is not None, [type(p.fast) for p in MF._plans.values()]
    slot = hot[0]
    del conv
    gc.collect()
    assert _fast.module().new_hot() == slot


# the Hopper family's tensor-map kernels through the C++ path: (direction, problem, what the config must have[, solver])
HOPPER_CASES = [
    ("F", dict(n=2, c=64, k=128, in_size=(14, 12), filter_size=3, pads=1), dict(TMA=1, SPLITK=1)),
    ("F", dict(n=2, c=128, k=64, in_size=(7, 7), filter_size=3, pads=1), dict(TMA=1, split=True)),
    ("B", dict(n=2, c=64, k=128, in_size=(14, 12), filter_size=3, pads=1, strides=2), dict(TMA=1)),
    ("B", dict(n=2, c=64, k=64, in_size=(9, 9), filter_size=1), dict(TMA=1)),
    ("W", dict(n=2, c=64, k=128, in_size=(14, 12), filter_size=3, pads=1), dict(TMA=1, SPLITK=1, CLUSTER=1)),
    ("W", dict(n=4, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1), dict(TMA=1, split=True)),
    # the swapped-operand forward (ping-pong and cooperative tiles) and backward data (its filter rewritten in the
    # workspace, read there through its tensor map)
    ("F", dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1), dict(COOP=0), "ConvImplicitGemmHopperFwdSwap"),
    ("F", dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1), dict(COOP=1), "ConvImplicitGemmHopperFwdSwap"),
    ("B", dict(n=2, c=24, k=64, in_size=(17, 16), filter_size=5, pads=3, dilations=2), dict(COOP=0),
     "ConvImplicitGemmHopperBwdSwap"),
    # the copy-engine stores: a third map, of the output (one staged tile; two per ping-pong warpgroup)
    ("F", dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1), dict(OBUF=1, PINGPONG=0),
     "ConvImplicitGemmHopperFwdTmaStore"),
    ("F", dict(n=4, c=64, k=136, in_size=(16, 16), filter_size=1), dict(OBUF=2, PINGPONG=1),
     "ConvImplicitGemmHopperFwdTmaStore"),
    # the rounding TF32 forward (both consumers, and one consumer in two blocks an SM) and backward data: FP32 data,
    # the filter rounded or rewritten into the workspace first, the kernel its programmatic dependent
    ("F", dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1), dict(CW=2, dtype="FP32"),
     "ConvImplicitGemmHopperFwdTf32Rn"),
    ("F", dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1), dict(CW=1, dtype="FP32"),
     "ConvImplicitGemmHopperFwdTf32Rn"),
    ("B", dict(n=2, c=24, k=32, in_size=(17, 16), filter_size=5, pads=3, dilations=2), dict(CW=2, dtype="FP32"),
     "ConvImplicitGemmHopperBwdTf32Rn"),
    # the rounding TF32 backward weights: dy and x through their maps, split (partial planes in the workspace, the
    # reduce its programmatic dependent) and unsplit
    ("W", dict(n=4, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1), dict(dtype="FP32", split=True),
     "ConvImplicitGemmHopperWrwTf32Rn"),
    ("W", dict(n=2, c=32, k=72, in_size=(15, 13), filter_size=3, pads=1), dict(dtype="FP32", split=False),
     "ConvImplicitGemmHopperWrwTf32Rn"),
    # NCHW: the operands transposed into the workspace, the NHWC kernels' maps of the copies there, the output copied
    # back
    ("F", dict(n=2, c=64, k=128, in_size=(14, 12), filter_size=3, pads=1), dict(TMA=1, SPLITK=1, layout="NCHW"),
     "ConvImplicitGemmHopperFwdNchw"),
    ("B", dict(n=2, c=64, k=128, in_size=(14, 12), filter_size=3, pads=1, strides=2), dict(TMA=1, layout="NCHW"),
     "ConvImplicitGemmHopperBwdNchw"),
    ("W", dict(n=4, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1), dict(TMA=1, split=True, layout="NCHW"),
     "ConvImplicitGemmHopperWrwNchw"),
    ("F", dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1), dict(CW=2, dtype="FP32", layout="NCHW"),
     "ConvImplicitGemmHopperFwdTf32RnNchw"),
    ("W", dict(n=4, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1), dict(dtype="FP32", layout="NCHW", split=True),
     "ConvImplicitGemmHopperWrwTf32RnNchw"),
    # padded copy-engine K tiles (C, or backward data's dy channels, % 64 != 0): w through a 3-D map of one tap's
    # channels (F, the copy-engine store), x as a dense matrix of 24 channels (1x1), dy's four stride phases (B)
    ("F", dict(n=2, c=96, k=72, in_size=(15, 13), filter_size=3, pads=1), dict(TMA=1, PERSIST=1)),
    ("F", dict(n=3, c=24, k=136, in_size=(15, 13), filter_size=1), dict(TMA=1, PERSIST=1)),
    ("B", dict(n=2, c=136, k=160, in_size=(14, 15), filter_size=3, pads=1, strides=2), dict(TMA=1, PERSIST=1)),
    ("F", dict(n=2, c=160, k=64, in_size=(17, 17), filter_size=(1, 7), pads=(0, 3)), dict(OBUF=2),
     "ConvImplicitGemmHopperFwdTmaStore"),
    # 32-deep K tiles (TMA = 2): maps of 32-channel boxes under the 64-byte swizzle, encoded in C++ from the fields;
    # padded taps of 48 channels (w's 3-D map), a dense 1x1 of 32 channels (x's tiled map), and backward data's four
    # stride phases over 48 of dy's channels (w's MN-major boxes 32 deep)
    ("F", dict(n=2, c=48, k=64, in_size=(13, 12), filter_size=5, pads=2), dict(TMA=2, PERSIST=1)),
    ("F", dict(n=3, c=32, k=32, in_size=(15, 13), filter_size=1), dict(TMA=2, PERSIST=1, BN=32)),
    ("B", dict(n=2, c=72, k=48, in_size=(17, 16), filter_size=3, pads=1, strides=2), dict(TMA=2, PERSIST=1)),
    # the filter resident in shared memory (PERSIST = 2): F with 64-deep tiles, a 32-deep padded F, and backward data's
    # four stride phases with their MN-major filter tiles resident
    ("F", dict(n=2, c=64, k=64, in_size=(15, 13), filter_size=3, pads=1), dict(TMA=1, PERSIST=2)),
    ("F", dict(n=2, c=48, k=40, in_size=(13, 12), filter_size=3, pads=1), dict(TMA=2, PERSIST=2)),
    ("B", dict(n=2, c=64, k=48, in_size=(17, 16), filter_size=3, pads=1, strides=2), dict(TMA=1, PERSIST=2)),
    # the copy-engine store of a 32-deep, 32-wide tile: y's map of 32-channel boxes under the 64-byte swizzle
    ("F", dict(n=3, c=32, k=32, in_size=(15, 13), filter_size=3), dict(TMA=2, BN=32, OBUF=2),
     "ConvImplicitGemmHopperFwdTmaStore"),
    # 192-wide tiles (BN = 192): the forward's on 32-deep padded taps, and the copy-engine store's three stored boxes
    ("F", dict(n=2, c=80, k=192, in_size=(13, 12), filter_size=3), dict(TMA=2, PERSIST=1, BN=192)),
    ("F", dict(n=2, c=64, k=192, in_size=(15, 13), filter_size=3, pads=1), dict(BN=192, OBUF=1),
     "ConvImplicitGemmHopperFwdTmaStore"),
    # backward data's 192-wide tiles: dy's four stride phases over 48 of its channels (padded taps), the filter's tile
    # as three MN-major boxes of 64 of dx's channels
    ("B", dict(n=2, c=192, k=48, in_size=(17, 16), filter_size=3, pads=1, strides=2), dict(TMA=1, PERSIST=1, BN=192)),
    # the swapped-operand wrappers: the forward on the copies; backward data's filter rewrite from the filter's copy
    ("F", dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1), dict(COOP=1, layout="NCHW"),
     "ConvImplicitGemmHopperFwdSwapNchw"),
    ("B", dict(n=2, c=24, k=64, in_size=(17, 16), filter_size=5, pads=3, dilations=2), dict(COOP=0, layout="NCHW"),
     "ConvImplicitGemmHopperBwdSwapNchw"),
]


def _hopper_case(direction, kw, want, sid=None):
    from miofind.problem import ProblemDescription
    from miofind.registry import solvers

    dt = want.pop("dtype", "FP16")
    layout = want.pop("layout", "NHWC")
    p = ProblemDescription.make(direction, layout=layout, dtype=dt, math="tf32" if dt == "FP32" else "strict", **kw)
    sid = sid or {"F": "ConvImplicitGemmHopperFwd", "B": "ConvImplicitGemmHopperBwd", "W": "ConvImplicitGemmHopperWrw"}[
        direction]
    s = next(s for s in solvers() if s.id == sid)
    assert s.applicability(p), s.applicability(p).reason
    split = want.pop("split", None)
    for cfg in s.config_space(p):
        if all(cfg.get(k) == v for k, v in want.items()) and (split is None or (s.workspace_bytes(p, cfg) > 0)
                                                            == split):
            return p, s, cfg
    pytest.skip(f"no config of {s.id} with {want} split={split} on {p.key()}")


@pytest.mark.gpu
@pytest.mark.parametrize("case", HOPPER_CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(HOPPER_CASES)])
def test_hopper_tensor_map_kernels_launch_from_cpp(ext, case):
    """A Hopper solution with tensor maps (TMA configs; split ones through the workspace; backward-data by stride
    phase) launched by the extension from its recipe, the maps encoded in C++: bit for bit the Python invoker's
    output, on poisoned memory, on new contents of the same buffers (maps kept by address) and on new buffers."""
    import types

    from miofind.invokers import build_invoker
    from miofind.launch import A, B, OUT, WS

    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the Hopper family runs on sm_90 only")
    mod = ext
    direction, kw, want, *sid = case
    p, s, cfg = _hopper_case(direction, kw, dict(want), *sid)
    sol = s.get_solution(p, cfg)
    inv = build_invoker(p, sol)
    spec = _fast.recipe(types.SimpleNamespace(invoker=inv, ws_bytes=sol.workspace_bytes, swap=False, fused=False))
    assert spec is not None and spec[4], "a TMA config's recipe names its tensor maps"
    roles = {m[1] for k in spec[0] for m in k[8]}
    # a solver that writes its filter into the workspace first maps the workspace, not b; an NCHW one maps its copies
    rewrites = s.id.endswith(("BwdSwap", "Tf32Rn"))
    copies = s.id.endswith("Nchw")
    assert any(m for k in spec[0] for m in k[8]) and ({A, B} <= roles or (rewrites and roles == {A, WS})
                                                       or (copies and WS in roles and roles <= {A, B, WS}))
    assert all(r in (A, B, OUT, WS) for k in spec[0] for r in k[6])
    sa, sb, so = p.io_shapes()
    strides = [torch.empty(so).stride()] * 3

    def fallback(*a):
        raise AssertionError("the C++ path took its Python fallback")
    tdt = torch.float32 if p.dtype == "FP32" else torch.float16
    pid = mod.new_plan(spec, None, None, [list(so)] * 3, [list(t) for t in strides], tdt, 0, False,
                       fallback, fallback)
    ws = torch.empty(max(sol.workspace_bytes, 1), dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    a = torch.randn(sa, device="cuda", dtype=tdt)
    b = torch.randn(sb, device="cuda", dtype=tdt)
    for step in range(3):
        if step == 1:                        # new contents, the same addresses: the kept maps
            a.normal_(), b.normal_()
        if step == 2:                        # new buffers: new maps
            a, b = torch.randn_like(a), torch.randn_like(b)
        want_out = torch.full(so, float("nan"), device="cuda", dtype=tdt)
        inv(a.data_ptr(), b.data_ptr(), want_out.data_ptr(), ws.data_ptr() if sol.workspace_bytes else 0, stream)
        poison = torch.full(so, float("nan"), device="cuda", dtype=tdt)
        del poison                          # the C++ output likely gets this poisoned block back
        got = mod.forward(a, b, None, pid, stream)
        torch.cuda.synchronize()
        assert not want_out.isnan().any(), "the Python invoker left elements unwritten"
        assert torch.equal(got, want_out), (step, s.id, cfg, float((got.float() - want_out.float()).abs().max()))
    assert mod.counts(pid) == (3, 0)


# traced recipes (kernel launches and cuBLASLt matmuls): (solver, direction, problem, layout, data type)
TRACED_CASES = [
    ("GemmFwd1x1_0_1", "F", dict(n=2, c=64, k=96, in_size=(9, 7), filter_size=1), "NCHW", "FP32"),
    ("GemmFwdRest", "F", dict(n=3, c=32, k=48, in_size=(11, 9), filter_size=3, pads=1, strides=2), "NCHW", "FP32"),
    ("GemmFwdRest", "F", dict(n=2, c=32, k=64, in_size=(10, 10), filter_size=3, pads=1), "NHWC", "FP16"),
    ("GemmBwd1x1_stride1", "B", dict(n=2, c=64, k=96, in_size=(9, 7), filter_size=1), "NCHW", "FP32"),
    ("GemmBwdRest", "B", dict(n=2, c=32, k=48, in_size=(11, 9), filter_size=3, pads=1, strides=2), "NCHW", "FP32"),
    ("GemmWrw1x1_stride1", "W", dict(n=2, c=64, k=96, in_size=(9, 7), filter_size=1), "NCHW", "FP32"),
    ("GemmWrwUniversal", "W", dict(n=3, c=32, k=48, in_size=(11, 9), filter_size=3, pads=1), "NCHW", "FP32"),
    ("GemmWrwUniversal", "W", dict(n=2, c=32, k=64, in_size=(10, 10), filter_size=3, pads=1), "NHWC", "FP16"),
    ("ConvWinograd3x3F43Fwd", "F", dict(n=2, c=64, k=64, in_size=(14, 14), filter_size=3, pads=1), "NCHW", "FP32"),
    ("ConvWinograd3x3F23Fwd", "F", dict(n=1, c=256, k=256, in_size=(14, 14), filter_size=3, pads=1), "NCHW", "FP32"),
    ("ConvWinograd3x3F43Bwd", "B", dict(n=2, c=64, k=64, in_size=(14, 14), filter_size=3, pads=1), "NCHW", "FP32"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("sid,direction,kw,layout,dtype", TRACED_CASES,
                         ids=[f"{c[0]}-{c[3]}-{c[4]}-{i}" for i, c in enumerate(TRACED_CASES)])
def test_traced_gemm_and_winograd_recipes_launch_from_cpp(ext, sid, direction, kw, layout, dtype):
    """A GEMM or Winograd solution (kernel launches and cuBLASLt matmuls, traced: the matmuls as their captured
    kernels where they can be) replayed by the extension: bit for bit the Python invoker's output, on poisoned
    memory, new contents and new buffers, with its C++ workspace; on another stream (its matmuls use the traced
    one's cuBLASLt workspace) it takes the Python fallback."""
    import types

    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import solvers

    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    p = ProblemDescription.make(direction, layout=layout, dtype=dtype, **kw)
    s = next(s for s in solvers() if s.id == sid)
    assert s.applicability(p), (sid, p.key(), s.applicability(p).reason)
    sol = s.get_solution(p)
    inv = build_invoker(p, sol)
    stream = torch.cuda.current_stream().cuda_stream
    tdt = {"FP32": torch.float32, "FP16": torch.float16}[dtype]
    sa, sb, so = p.io_shapes()
    a = torch.randn(sa, device="cuda", dtype=tdt)
    b = torch.randn(sb, device="cuda", dtype=tdt)
    ws = torch.empty(max(sol.workspace_bytes, 1), dtype=torch.uint8, device="cuda")
    warm = torch.empty(so, device="cuda", dtype=tdt)
    inv(a.data_ptr(), b.data_ptr(), warm.data_ptr(), ws.data_ptr() if sol.workspace_bytes else 0, stream)
    e = types.SimpleNamespace(invoker=inv, ws_bytes=sol.workspace_bytes, swap=False, fused=False, dev=0, solver_id=sid)
    spec = _fast.recipe(e, stream)
    assert spec is not None, f"{sid}: not traced ({_fast.status()})"
    kinds = [k[9] for k in spec[0]]
    # each cuBLASLt matmul is its kernels read from a graph capture (kind 2; FP32 on the H100) or a library call
    # (kind 1: a cluster launch cannot be replayed from its parameter buffer); both carry the traced stream's
    # cuBLASLt workspace, so the recipe is pinned to that stream
    assert (1 in kinds or 2 in kinds) and spec[5] == stream, kinds
    if dtype == "FP32":
        assert 2 in kinds and 1 not in kinds, kinds
    strides = [torch.empty(so).stride()] * 3
    fallbacks = []

    def fallback(x, w, bias):
        fallbacks.append(1)
        out = torch.empty(so, device="cuda", dtype=tdt)
        inv(x.data_ptr(), w.data_ptr(), out.data_ptr(), ws.data_ptr() if sol.workspace_bytes else 0,
            torch.cuda.current_stream().cuda_stream)
        return out
    pid = ext.new_plan(spec, None, None, [list(so)] * 3, [list(t) for t in strides], tdt, 0, False, fallback,
                       lambda *x: (None, None))
    for step in range(3):
        if step == 1:
            a.normal_(), b.normal_()
        if step == 2:
            a, b = torch.randn_like(a), torch.randn_like(b)
        want = torch.full(so, float("nan"), device="cuda", dtype=tdt)
        inv(a.data_ptr(), b.data_ptr(), want.data_ptr(), ws.data_ptr() if sol.workspace_bytes else 0, stream)
        poison = torch.full(so, float("nan"), device="cuda", dtype=tdt)
        del poison                          # the C++ output likely gets this poisoned block back
        got = ext.forward(a, b, None, pid, stream)
        torch.cuda.synchronize()
        assert not want.isnan().any(), "the Python invoker left elements unwritten"
        assert torch.equal(got, want), (step, sid, float((got.float() - want.float()).abs().max()))
    assert ext.counts(pid) == (3, 0) and not fallbacks
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        got = ext.forward(a, b, None, pid, side.cuda_stream)
    side.synchronize()
    assert fallbacks == [1] and ext.counts(pid) == (3, 1)
    assert torch.equal(got, want)
