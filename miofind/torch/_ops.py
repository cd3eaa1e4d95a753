"""The three convolution launches as ``torch.library`` custom ops, with fake (meta) kernels and
autograd, so that ``torch.compile`` sees them as opaque ops (no graph break) and CUDA graphs capture
them; ``EagerConv`` runs the same launches in eager mode with less host time.

- ``miofind::conv_forward(x, w, stride, padding, dilation, groups) -> y``
- ``miofind::conv_backward_data(dy, w, x_shape, ...) -> dx``
- ``miofind::conv_backward_weight(dy, x, w_shape, ...) -> dw``

With the C++ extension loaded (``_fast``), the ops' CUDA kernels are its C++ ones: a call whose key a call through
the Python implementations here taught it (``_op_python``) launches from C++, with no Python per call (what
``torch.compile(mode="default")`` graphs, which launch each op from the host, spend per convolution).

Tensors are 4-D or 5-D (1-D convolutions come as 2-D with H = 1), padding symmetric (``functional``
pads asymmetric "same" explicitly). Memory formats follow PyTorch's cuDNN convolution: when either
input is channels-last-like (``_cl_like``, PyTorch's ``suggest_memory_format`` rule) the problem is
NHWC/NDHWC, both inputs are made channels_last (no copy when they already are) and the output is
channels_last; otherwise NCHW/NCDHW with one ``contiguous()`` where an input is not dense. The
output and the workspace come from PyTorch's caching allocator; the launches go to the current
torch stream.
"""

from __future__ import annotations

import logging

import torch
from torch import Tensor

from . import _fast, _policy

log = logging.getLogger(__name__)
_ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}
_CL = {4: torch.channels_last, 5: torch.channels_last_3d}


def _cl_like(t: Tensor) -> bool:
    """PyTorch's ``is_channels_last_strides_2d/3d``: whether ``t``'s strides order it channels-last
    (so that an ambiguous tensor, e.g. of shape (N, C, 1, 1), is judged by its strides, as
    ``suggest_memory_format`` does)."""
    order = _ORDER.get(t.dim())
    if order is None:
        return False
    sizes, strides = t.shape, t.stride()
    if strides[1] == 0:
        return False
    m = 0
    for d in order:
        if sizes[d] == 0 or strides[d] < m:
            return False
        if d == 0 and m == strides[1]:
            return False
        m = strides[d]
        if sizes[d] > 1:
            m *= sizes[d]
    return True


def memory_format(a: Tensor, b: Tensor):
    """The memory format cuDNN's convolution picks for inputs ``a`` and ``b``: channels_last(_3d)
    when either is channels-last-like, else contiguous."""
    if _cl_like(a) or _cl_like(b):
        return _CL[a.dim()]
    return torch.contiguous_format


def _dense_strides(shape, channels_last: bool) -> list:
    """The strides of a dense tensor of ``shape``: row-major, or channels-last (C innermost)."""
    nd = len(shape)
    order = [1, *range(nd - 1, 1, -1), 0] if channels_last else list(range(nd - 1, -1, -1))
    strides, m = [0] * nd, 1
    for d in order:
        strides[d] = m
        m *= max(shape[d], 1)
    return strides


def follow(t: Tensor, fmt) -> Tensor:
    """``t`` as a view in ``fmt``'s own strides where it is dense in both memory formats (every spatial size 1, as
    a squeeze-excitation's (N, C, 1, 1) gradient): the same memory, so no copy; else ``t`` itself. Such a tensor's
    strides are whatever the kernel that made it chose, which differs between devices (a meta pass and a CUDA
    run), so a gradient whose strides cannot tell takes the forward's format rather than the rule that reads them."""
    cl = _CL.get(t.dim())
    if cl is None or not (t.is_contiguous() and t.is_contiguous(memory_format=cl)):
        return t
    want = fmt is not torch.contiguous_format
    if _cl_like(t) == want:
        return t
    return t.as_strided(t.shape, _dense_strides(t.shape, want))


def dense_in(dy: Tensor, fmt) -> Tensor:
    """A gradient ``dy`` dense in the forward's memory format ``fmt`` (``follow``, else a copy), as PyTorch's
    convolution backward makes it (its format is the input's and weight's, never the gradient's): dx comes back in
    x's format, and the backward problems are those of the forward's layout, whatever layout dy arrives in (the
    transpose of a (N, T, C) activation, as an audio encoder's last layer gets it)."""
    dy = follow(dy, fmt)
    return dy if dy.is_contiguous(memory_format=fmt) else dy.contiguous(memory_format=fmt)


def out_size(x_shape, w_shape, stride, padding, dilation) -> list:
    """y's shape (N, K, *spatial) of a convolution, as torch computes it."""
    sp = [(i + 2 * p - d * (k - 1) - 1) // s + 1
          for i, k, p, s, d in zip(x_shape[2:], w_shape[2:], padding, stride, dilation)]
    return [x_shape[0], w_shape[0], *sp]


def _stream(dev: int) -> int:
    return torch._C._cuda_getCurrentRawStream(dev)


def _run(direction: str, a: Tensor, b: Tensor, out_shape, x_shape, w_shape, stride, padding, dilation,
         groups: int, fmt, bias: Tensor | None = None, activation: str = "none") -> Tensor:
    """Launch the ``direction`` solution on (a, b) (already in ``fmt``) into a new output; with ``bias``
    (F only, a dense vector of K elements of the data type) and/or an ``activation`` the fused forward
    problem's."""
    if not a.is_cuda:
        raise ValueError(f"miofind.torch: expected CUDA tensors, got a tensor on {a.device}")
    if not _fast._ops_done:
        _fast.ops_kernels(_op_python, _autograd_kernels)
    dev = a.device.index
    cl = fmt is not torch.contiguous_format
    dtype = a.dtype
    if dtype not in _policy.SUPPORTED_DTYPES or b.dtype is not dtype:
        raise ValueError(f"miofind.torch: dtype={a.dtype}/{b.dtype}: expected float32, float16 or bfloat16, the same "
                         "for every input")
    has_bias = bias is not None
    key = _policy.table_key(direction, x_shape, w_shape, stride, padding, dilation, groups, dtype, cl, dev, has_bias,
                            activation)
    e = _policy._table.get(key)
    if e is None:
        tf32, det = key[9], key[10]
        e = _policy.lookup(key, lambda: _policy.problem_for(direction, x_shape, w_shape, stride, padding, dilation,
                                                            groups, dtype, cl, tf32, bias=int(has_bias),
                                                            activation=activation), dev, det)
    out = torch.empty(out_shape, dtype=dtype, device=a.device, memory_format=fmt)
    if dev != torch._C._cuda_getDevice():
        with torch.cuda.device(dev):
            return e(a, b, out, _stream(dev), bias)
    return e(a, b, out, _stream(dev), bias)


# -- forward --------------------------------------------------------------------------------------

def _forward(x: Tensor, w: Tensor, stride: list[int], padding: list[int], dilation: list[int],
             groups: int) -> Tensor:
    """y = conv(x, w) through the problem's chosen F solution."""
    return forward_fused(x, w, stride, padding, dilation, groups, None)


def forward_fused(x: Tensor, w: Tensor, stride, padding, dilation, groups: int, bias: Tensor | None,
                  activation: str = "none") -> Tensor:
    """``_forward``, and with ``bias`` (dense, K elements of x's type) and/or an ``activation``
    (``functional`` passes them only where ``_policy.fusable``) y = act(conv(x, w) + bias) through the
    fused forward problem's solution."""
    fmt = memory_format(x, w)
    x, w = x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt)
    out_shape = out_size(x.shape, w.shape, stride, padding, dilation)
    if bias is None and activation == "none":
        return _run("F", x, w, out_shape, x.shape, w.shape, stride, padding, dilation, groups, fmt)
    return _run("F", x, w, out_shape, x.shape, w.shape, stride, padding, dilation, groups, fmt, bias=bias,
                activation=activation)


conv_forward = torch.library.custom_op("miofind::conv_forward", _forward, mutates_args=())


@conv_forward.register_fake
def _(x, w, stride, padding, dilation, groups):
    fmt = memory_format(x, w)
    return torch.empty(out_size(x.shape, w.shape, stride, padding, dilation), dtype=x.dtype, device=x.device,
                       memory_format=fmt)


# -- backward data --------------------------------------------------------------------------------

def _backward_data(dy: Tensor, w: Tensor, x_shape: list[int], stride: list[int], padding: list[int],
                   dilation: list[int], groups: int) -> Tensor:
    """dx of conv(x, w) from dy through the problem's chosen B solution (x of ``x_shape``)."""
    fmt = memory_format(dy, w)
    dy, w = dy.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt)
    return _run("B", dy, w, x_shape, x_shape, w.shape, stride, padding, dilation, groups, fmt)


conv_backward_data = torch.library.custom_op("miofind::conv_backward_data", _backward_data, mutates_args=())


@conv_backward_data.register_fake
def _(dy, w, x_shape, stride, padding, dilation, groups):
    return torch.empty(x_shape, dtype=dy.dtype, device=dy.device, memory_format=memory_format(dy, w))


# -- backward weights -----------------------------------------------------------------------------

def _backward_weight(dy: Tensor, x: Tensor, w_shape: list[int], stride: list[int], padding: list[int],
                     dilation: list[int], groups: int) -> Tensor:
    """dw of conv(x, w) from dy through the problem's chosen W solution (w of ``w_shape``)."""
    fmt = memory_format(x, dy)
    dy, x = dy.contiguous(memory_format=fmt), x.contiguous(memory_format=fmt)
    return _run("W", dy, x, w_shape, x.shape, w_shape, stride, padding, dilation, groups, fmt)


conv_backward_weight = torch.library.custom_op("miofind::conv_backward_weight", _backward_weight, mutates_args=())


@conv_backward_weight.register_fake
def _(dy, x, w_shape, stride, padding, dilation, groups):
    return torch.empty(w_shape, dtype=dy.dtype, device=dy.device, memory_format=memory_format(x, dy))


# -- the C++ kernels' Python path -----------------------------------------------------------------------------------

# table key -> the Entry whose launches the extension cannot make (``_fast.recipe`` None): its calls stay here
_unlearnable: dict[tuple, object] = {}


def _op_python(d: int, a: Tensor, b: Tensor, shape: list, stride: list, padding: list, dilation: list,
               groups: int) -> Tensor:
    """The Python path of the custom ops' C++ CUDA kernels (``_fast.cpp``'s ``op_call``: d 0 F, 1 B, 2 W; ``shape``
    x's for B, w's for W): a call whose key the extension has not learned (or cannot launch now). It answers as the
    Python implementations do, then teaches the extension the key (``_learn``), so that repeats launch from C++."""
    mod = _fast._ops_module
    gen = mod.ops_gen() if mod else 0
    if d == 0:
        out = _forward(a, b, stride, padding, dilation, groups)
    elif d == 1:
        out = _backward_data(a, b, shape, stride, padding, dilation, groups)
    else:
        out = _backward_weight(a, b, shape, stride, padding, dilation, groups)
    if mod:
        try:
            _learn(mod, gen, d, a, b, shape, stride, padding, dilation, groups)
        except Exception as e:      # noqa: BLE001  this key's calls stay on the Python path
            log.warning("miofind.torch: op key not learned (%s: %s)", type(e).__name__, e)
    return out


def _learn(mod, gen: int, d: int, a: Tensor, b: Tensor, shape, stride, padding, dilation, groups: int) -> bool:
    """Teach the extension the key of the call just made, with a one-direction plan of its Entry, where the C++
    kernel would make the same launches: the Entry is kernel launches the extension makes (not a cuDNN plan, and no
    generic build waiting for its specialised one), both inputs came dense in the problem's memory format (no copy),
    no deferred solution waits, no stream captures, and the call is not a CUDA-graph tree's run (``torch.compile``'s
    ``mode="reduce-overhead"``: its warm-up and recording runs come on the tree's own stream, where the allocations
    go to the graph's pool; the key holds the stream, so a key learned elsewhere never launches there, and the other
    graphs of the process keep the C++ path). Whether it learned the key."""
    if _policy._in_graph_tree_run():
        return False
    if not _fast.use or _policy._swaps or _policy._capturing_stream():
        return False
    fmt = memory_format(a, b)
    if not (a.is_contiguous(memory_format=fmt) and b.is_contiguous(memory_format=fmt)):
        return False
    cl = fmt is not torch.contiguous_format
    x_shape, w_shape = ((a.shape, b.shape), (shape, b.shape), (b.shape, shape))[d]
    dev = a.device.index
    key = _policy.table_key("FBW"[d], x_shape, w_shape, stride, padding, dilation, groups, a.dtype, cl, dev)
    e = _policy._table.get(key)
    if e is None or e.fused or _unlearnable.get(key) is e:
        return False
    try:
        r = _fast.recipe(e, _stream(dev))
    except _fast.NotReady:      # a generic build runs: learned once the specialised one does
        return False
    if r is None:
        _unlearnable[key] = e
        return False
    from ..invokers import dense_layout
    layouts = [dense_layout(s, cl) for s in (out_size(x_shape, w_shape, stride, padding, dilation), x_shape,
                                             w_shape)]
    specs = [r if i == d else None for i in range(3)]
    # the plan keeps the Entry (its kernels' modules loaded) for the process, as the extension keeps the plan
    pid = mod.new_plan(*specs, [list(s) for s, _ in layouts], [list(t) for _, t in layouts], a.dtype, dev, cl,
                       (e,), None, False, 0)
    return mod.op_learn(d, a, b, list(shape), list(stride), list(padding), list(dilation), groups, pid, gen)


def _autograd_kernels() -> list | None:
    """custom_op's autograd kernels of the three ops, as it registers them (``make_autograd_impl`` of each op and its
    definition: the same kernel, made again), for the extension's C++ autograd kernels to hand the calls that record
    for autograd to; None where this PyTorch has no such function (then custom_op's own kernels run every call)."""
    try:
        from torch._library.autograd import make_autograd_impl
        return [make_autograd_impl(op._opoverload, op) for op in (conv_forward, conv_backward_data,
                                                                  conv_backward_weight)]
    except Exception as e:      # noqa: BLE001  a PyTorch without it: the Python autograd kernels stay alone
        log.info("miofind.torch: custom ops keep custom_op's autograd kernels alone (%s: %s)", type(e).__name__, e)
        return None


def _forget() -> None:
    _unlearnable.clear()
    _fast.ops_clear()


_policy._on_clear.append(_forget)


# -- autograd -------------------------------------------------------------------------------------

def _setup_context(ctx, inputs, output):
    x, w, stride, padding, dilation, groups = inputs
    _save(ctx, x, w)
    ctx.conv = (list(x.shape), list(w.shape), list(stride), list(padding), list(dilation), groups)
    ctx.fmt = memory_format(x, w)


def _save(ctx, x, w) -> None:
    """Keep only what the asked-for gradients read: dx needs w, dw needs x."""
    ctx.save_for_backward(x if ctx.needs_input_grad[1] else None, w if ctx.needs_input_grad[0] else None)


def _grads(ctx, dy, data, weight, saved=None):
    x, w = ctx.saved_tensors if saved is None else saved
    x_shape, w_shape, stride, padding, dilation, groups = ctx.conv
    dy = dense_in(dy, ctx.fmt)
    dx = dw = None
    if ctx.needs_input_grad[0]:
        dx = data(dy, w, x_shape, stride, padding, dilation, groups)
    if ctx.needs_input_grad[1]:
        dw = weight(dy, x, w_shape, stride, padding, dilation, groups)
    return dx, dw, None, None, None, None


def _backward(ctx, dy):
    return _grads(ctx, dy, conv_backward_data, conv_backward_weight)


conv_forward.register_autograd(_backward, setup_context=_setup_context)


def _once_differentiable(fn):
    """``torch.autograd.function.once_differentiable`` without its cost where it does nothing: a backward
    that autograd runs with grad mode off (no ``create_graph``, the usual case) is called directly;
    with grad mode on, once_differentiable's own wrapper (outputs that raise on a double backward)."""
    wrapped = torch.autograd.function.once_differentiable(fn)
    grad_enabled = torch.is_grad_enabled

    def backward(ctx, *args):
        if grad_enabled():
            return wrapped(ctx, *args)
        return fn(ctx, *args)
    backward.__name__, backward.__doc__ = fn.__name__, fn.__doc__
    return backward


class EagerConv(torch.autograd.Function):
    """The same three launches for eager mode, without the custom ops' dispatch (tens of microseconds
    of host time per call): ``functional`` takes this path for plain CUDA tensors outside
    ``torch.compile`` tracing, and the custom ops everywhere else (compile, export, meta and fake
    tensors, tensor subclasses)."""

    @staticmethod
    def forward(ctx, x, w, stride, padding, dilation, groups):
        # forward with ctx (no separate setup_context): Function.apply then skips binding the
        # arguments through inspect.signature, about 10 us per call
        y = _forward(x, w, stride, padding, dilation, groups)
        _setup_context(ctx, (x, w, stride, padding, dilation, groups), y)
        return y

    @staticmethod
    @_once_differentiable
    def backward(ctx, dy):
        return _grads(ctx, dy, _backward_data, _backward_weight)


def bias_grad(dy: Tensor) -> Tensor:
    """The gradient of a bias added along dy's channel dimension: the sum over every other one."""
    return dy.sum(dim=[0, *range(2, dy.dim())])


def relu_mask(dy: Tensor, y: Tensor) -> Tensor:
    """dy through a ReLU whose output was ``y``: zero where y is not positive (PyTorch's own ReLU backward,
    one pass in dy's memory format)."""
    return torch.ops.aten.threshold_backward(dy, y, 0)


class EagerConvFused(torch.autograd.Function):
    """``EagerConv`` with an epilogue in the forward solution (a fused problem; ``functional`` takes it
    where ``_policy.fusable``): the bias (or None) and ReLU (or none; GELU only without autograd, as its
    gradient needs the values before it). Backward: dy through the ReLU's mask (its output kept), then dx
    and dw as ``EagerConv``, the bias's gradient one sum."""

    @staticmethod
    def forward(ctx, x, w, bias, activation, stride, padding, dilation, groups):
        y = forward_fused(x, w, stride, padding, dilation, groups, bias, activation)
        ctx.relu = activation == "relu"
        keep = (x if ctx.needs_input_grad[1] else None, w if ctx.needs_input_grad[0] else None)
        ctx.save_for_backward(*keep, *((y,) if ctx.relu else ()))
        ctx.conv = (list(x.shape), list(w.shape), list(stride), list(padding), list(dilation), groups)
        ctx.fmt = memory_format(x, w)
        return y

    @staticmethod
    @_once_differentiable
    def backward(ctx, dy):
        saved = ctx.saved_tensors
        if ctx.relu:
            dy = relu_mask(dy, saved[2])
        dx, dw = _grads(ctx, dy, _backward_data, _backward_weight, saved[:2])[:2]
        return dx, dw, bias_grad(dy) if ctx.needs_input_grad[2] else None, None, None, None, None, None


class PlannedConv(torch.autograd.Function):
    """``EagerConv`` for a call with a forward plan (``functional._Plan``): the plan launches the
    forward (with ``bias`` in its epilogue for a plan that fuses it, else ``bias`` is None; ReLU too
    where the plan fuses it, its output then kept for the mask), and the backward through the plan's
    learned B and W Entries.

    ``wc`` is ``w`` in the plan's data type: ``w`` itself, or (under autocast) its cast made outside
    autograd, whose gradient the backward casts back to ``w``'s type. That is what autocast's recorded
    cast and its ToCopyBackward node give, without the extra autograd node per convolution."""

    @staticmethod
    def forward(ctx, x, w, bias, plan, wc):
        y = plan.forward(x, wc, bias)
        ctx.plan = plan
        ctx.w_dtype = w.dtype if wc.dtype is not w.dtype else None
        keep = (x if ctx.needs_input_grad[1] else None, wc if ctx.needs_input_grad[0] else None)
        ctx.save_for_backward(*keep, *((y,) if plan.act == "relu" else ()))
        return y

    @staticmethod
    @_once_differentiable
    def backward(ctx, dy):
        saved = ctx.saved_tensors
        x, w = saved[:2]
        if ctx.plan.act == "relu":
            dy = relu_mask(dy, saved[2])
        need = ctx.needs_input_grad
        dx, dw = ctx.plan.backward(dy, x, w, need[0], need[1])
        if dw is not None and ctx.w_dtype is not None:
            dw = dw.to(ctx.w_dtype)
        return dx, dw, bias_grad(dy) if need[2] else None, None, None


_raw_apply = torch._C._FunctionBase.__dict__["apply"].__get__(None, PlannedConv) \
    if "apply" in getattr(torch._C._FunctionBase, "__dict__", {}) else None
_unwrap = getattr(getattr(torch._C, "_functorch", None), "unwrap_if_dead", None)
_transforms_active = getattr(torch._C, "_are_functorch_transforms_active", None)


def planned_apply(x: Tensor, w: Tensor, bias, plan, wc: Tensor) -> Tensor:
    """``PlannedConv.apply(x, w, bias, plan, wc)``. Where no functorch transform is active it calls the C
    ``apply`` directly with the tensors through ``unwrap_if_dead``, which is what ``Function.apply`` does
    then, without its per-call Python (about 1.5 us)."""
    if _raw_apply is None or _unwrap is None or _transforms_active is None or _transforms_active():
        return PlannedConv.apply(x, w, bias, plan, wc)
    x, uw = _unwrap(x), _unwrap(w)
    return _raw_apply(x, uw, None if bias is None else _unwrap(bias), plan, uw if wc is w else _unwrap(wc))
