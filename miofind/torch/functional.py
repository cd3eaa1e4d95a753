"""``conv1d``/``conv2d``/``conv3d`` with the semantics of ``torch.nn.functional``, run by miofind.

Forward runs the problem's F solution, backward the B solution for dx and the W solution for dw,
each only when autograd asks for it (``_ops``). The bias goes into the forward solution's epilogue
where one of miofind's own solvers fuses it for the problem (``_policy.fusable``: the Hopper
forward, channels_last FP16/BF16; the find then chooses among the fusing solvers, ours and cuDNN's
fused graph), in eager mode; elsewhere (and under ``torch.compile``) it is one PyTorch op on the
output (an in-place add of a broadcast view). Either way autograd reduces its gradient with one sum.
A module that ``modules.fuse`` paired with its ReLU (or GELU) passes it as ``activation``: it goes into
the same epilogue where a solver fuses it (GELU only without autograd), else it is one PyTorch op.
Inputs on the CPU, or of a data type miofind does not compute in (float64, complex, integers), run
PyTorch's own convolution unchanged.
"""

from __future__ import annotations

import logging
import weakref

import torch
import torch.nn.functional as F
from torch import Tensor

from . import _fast, _ops, _policy

log = logging.getLogger(__name__)

_TORCH = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _tuple(name: str, v, nd: int) -> tuple[int, ...]:
    """An int or a sequence of 1 or ``nd`` ints as ``nd`` ints (PyTorch's rule); ValueError else."""
    if isinstance(v, bool):
        raise ValueError(f"{name}={v!r}: expected an integer or a sequence of {nd} integers")
    if isinstance(v, int):
        return (v,) * nd
    try:
        t = tuple(v)
    except TypeError:
        raise ValueError(f"{name}={v!r}: expected an integer or a sequence of {nd} integers") from None
    if not all(isinstance(e, int) and not isinstance(e, bool) for e in t):
        raise ValueError(f"{name}={v!r}: expected integers")
    if len(t) == 1:
        return t * nd
    if len(t) != nd:
        raise ValueError(f"{name}={v!r}: expected a single integer or a list of {nd} values to match the "
                         "convolution dimensions")
    return t


def normalize(nd: int, stride, padding, dilation, groups):
    """(stride, padding, dilation, groups) as PyTorch reads them for an ``nd``-D convolution: tuples
    of ``nd`` ints, ``padding`` may stay "valid" or "same" (resolved against the filter by the
    caller, ``same_padding``). ValueError, naming the argument, for a value PyTorch rejects."""
    stride = _tuple("stride", stride, nd)
    dilation = _tuple("dilation", dilation, nd)
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"groups={groups!r}: expected a positive integer")
    if any(s < 1 for s in stride):
        raise ValueError(f"stride={stride}: non-positive stride is not supported")
    if any(d < 1 for d in dilation):
        raise ValueError(f"dilation={dilation}: dilation must be positive")
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ValueError(f"padding={padding!r}: expected 'valid', 'same', an integer or a sequence of {nd} integers")
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError(f"padding='same' is not supported for strided convolutions (stride={stride})")
    else:
        padding = _tuple("padding", padding, nd)
        if any(p < 0 for p in padding):
            raise ValueError(f"padding={padding}: negative padding is not supported")
    return stride, padding, dilation, groups


def same_padding(w_shape, dilation) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(left pads, extra right pads) of padding="same": d*(k-1) per dim, the odd one on the right."""
    total = [d * (k - 1) for k, d in zip(w_shape[2:], dilation)]
    return tuple(t // 2 for t in total), tuple(t - t // 2 - t // 2 for t in total)


_casts: dict[int, tuple] = {}      # id(tensor) -> (weakref, version, data_ptr, dtype, its cast)
_MAX_CASTS = 4096


def _forget_cast(key: int, ref) -> None:
    e = _casts.get(key)
    if e is not None and e[0] is ref:
        del _casts[key]


# what autocast casts: floating tensors other than float64 (PyTorch's ``is_eligible``; float8 aside)
_AUTOCAST_FROM = frozenset((torch.float32, torch.float16, torch.bfloat16))


def _cast_param(t: Tensor, dt: torch.dtype) -> Tensor:
    """``t.to(dt)``. With autograd off (``torch.no_grad``, ``torch.inference_mode``) the cast of a leaf
    tensor (a weight, a bias) is kept while that tensor is unchanged (the same object, storage and
    version counter: an in-place update or a new ``.data`` makes a new cast), so inference under
    autocast casts each weight once, not once per call as PyTorch's autocast (whose cache lives for
    one autocast region). With autograd on, a fresh cast, so that the gradient reaches ``t``; under
    ``torch.compile`` too (the graph holds the cast; the cache would break it at every weight). A tensor
    autocast leaves alone (float64) is returned as it is."""
    if t.dtype == dt or t.dtype not in _AUTOCAST_FROM:
        return t
    if torch.is_grad_enabled() or not t.is_leaf or torch.compiler.is_compiling():
        return t.to(dt)
    key = id(t)
    e = _casts.get(key)
    if e is not None and e[0]() is t and e[1] == t._version and e[2] == t.data_ptr() and e[3] == dt:
        return e[4]
    c = t.to(dt)
    if len(_casts) < _MAX_CASTS or key in _casts:
        ref = weakref.ref(t, lambda r, k=key: _forget_cast(k, r))
        _casts[key] = (ref, t._version, t.data_ptr(), dt, c)
    return c


def _autocast(x: Tensor, w: Tensor, bias):
    """Cast as autocast casts ``torch.nn.functional.conv*`` (to the autocast dtype, CUDA tensors);
    the weight and bias through ``_cast_param``."""
    if x.is_cuda and torch.is_autocast_enabled("cuda"):
        dt = torch.get_autocast_dtype("cuda")
        if x.dtype != dt and x.dtype in _AUTOCAST_FROM:
            x = x.to(dt)
        w = _cast_param(w, dt)
        if bias is not None:
            bias = _cast_param(bias, dt)
    return x, w, bias


def supported(x: Tensor, w: Tensor) -> bool:
    """Whether miofind runs this convolution: CUDA tensors of one of float32/float16/bfloat16 (or
    meta tensors: the custom ops' fake kernels give shapes, see ``miofind.torch.problems``)."""
    return (x.is_cuda or x.is_meta) and x.device == w.device and x.dtype in _policy.SUPPORTED_DTYPES \
        and w.dtype == x.dtype


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _eager(x: Tensor, w: Tensor) -> bool:
    """Whether to skip the custom ops' dispatch (``_ops.EagerConv``): plain CUDA tensors, no
    ``torch.compile`` tracing."""
    return x.is_cuda and type(x) in _PLAIN and type(w) in _PLAIN and not torch.compiler.is_compiling()


_normalized: dict[tuple, tuple] = {}
_two_d: dict[tuple, tuple] = {}


def _as_2d(stride, padding, dilation) -> tuple:
    """A 1-D call's (stride, padding, dilation) as the 2-D problem's with H = 1."""
    key = (stride, padding, dilation)
    got = _two_d.get(key)
    if got is None:
        got = ((1, *stride), (0, *padding), (1, *dilation))
        if len(_two_d) < 4096:
            _two_d[key] = got
    return got


def _conv(nd: int, x: Tensor, w: Tensor, bias, stride, padding, dilation, groups) -> Tensor:
    key = (nd, stride, padding, dilation, groups)
    try:
        args = _normalized[key]
    except (KeyError, TypeError):   # not seen, or unhashable (lists)
        args = normalize(nd, stride, padding, dilation, groups)
        try:
            if len(_normalized) < 4096:
                _normalized[key] = args
        except TypeError:
            pass
    return conv_normalized(nd, x, w, bias, *args)


class _Plan:
    """A forward call whose arguments (shapes, strides, dtypes, device, convolution parameters,
    deterministic and TF32 settings) were seen before with a dense x (and a dense w, else ``wcopy``;
    a 1-D call's as the H = 1 views of its 2-D problem): its output's shape and
    memory format, the bias view and the prepared F solution, so that a repeat costs one dict
    lookup, one allocation and the launches. Its backward learns the B and W Entries the same way,
    per stride pattern of ``dy`` (``backward``)."""

    __slots__ = ("entry", "out_shape", "fmt", "dtype", "device", "bias_shape", "conv", "dev", "bwd", "_dense", "fused",
                 "act", "fast", "_fast_with", "pinned", "remade", "wcopy")

    def __init__(self, entry, out_shape, fmt, x: Tensor, w: Tensor, conv, fused: bool = False, act: str = "none") -> None:
        self.entry, self.out_shape, self.fmt, self.conv = entry, out_shape, fmt, conv
        # the entry is a fused forward's: the bias (fused) and the activation (act) are in its epilogue
        self.fused, self.act = fused, act
        # w is not dense in ``fmt`` (its strides are in the plan's key): each call makes the dense copy the slow
        # path would make (``_make_plan``)
        self.wcopy = False
        self.dtype, self.device, self.dev = x.dtype, x.device, x.get_device()
        self.bias_shape = (1, -1, *([1] * (x.dim() - 2)))
        self.bwd: dict[tuple, tuple] = {}
        # the C++ hot path's plan id (``_fast``): None until made (or while it cannot be made yet), False never
        self.fast = None
        self._fast_with = None          # the backward Entries the C++ plan was made with
        # the stream the C++ plan runs on alone (a recipe calling a library: ``_fast.make_plan``), or None; and how
        # many times the plan was remade for another stream (``conv_normalized``)
        self.pinned, self.remade = None, 0
        # (shape, strides) of y, dx and dw dense in ``fmt``: torch.empty_strided of them costs less
        # host time than torch.empty with a memory format (bench/results/torch-host/probe-step/)
        from ..invokers import dense_layout
        cl = fmt is not torch.contiguous_format
        self._dense = tuple(dense_layout(s, cl) for s in (out_shape, conv[0], conv[1]))

    def _empty(self, i: int) -> Tensor:
        shape, strides = self._dense[i]
        return torch.empty_strided(shape, strides, dtype=self.dtype, device=self.device)

    def forward(self, x: Tensor, w: Tensor, bias: Tensor | None = None) -> Tensor:
        return self.entry(x, w, self._empty(0), _ops._stream(self.dev), bias)

    def backward(self, dy: Tensor, x, w, need_dx: bool, need_dw: bool):
        """(dx, dw) of this call from ``dy`` (None where not asked). The first ``dy`` of a stride
        pattern goes through ``_ops``' checked launches; when both gradients' problems then share
        this plan's memory format (the usual case), their Entries are kept for that pattern and a
        repeat launches them directly."""
        dy = _ops.follow(dy, self.fmt)
        sig = (dy.stride(), need_dx, need_dw)
        known = self.bwd.get(sig)
        if known is not None and torch._C._cuda_getDevice() == self.dev:
            eb, ew, dense = known
            if self.fast is None:
                self.make_fast()
            if not dense:       # the strides of the signature: dy is not dense in the plan's format
                dy = dy.contiguous(memory_format=self.fmt)
            stream = _ops._stream(self.dev)
            # Entry.__call__ takes the raw launch once it has run on this stream
            dx = eb(dy, w, self._empty(1), stream) if need_dx else None
            dw = ew(dy, x, self._empty(2), stream) if need_dw else None
            return dx, dw
        x_shape, w_shape, stride, padding, dilation, groups = self.conv
        given, dy = dy, _ops.dense_in(dy, self.fmt)     # the backward problems are those of the forward's layout
        dense = dy is given
        dx = _ops._backward_data(dy, w, x_shape, stride, padding, dilation, groups) if need_dx else None
        dw = _ops._backward_weight(dy, x, w_shape, stride, padding, dilation, groups) if need_dw else None
        if known is None and len(self.bwd) < 8:
            self._learn(sig, dense, dy, x, w, need_dx, need_dw)
        return dx, dw

    def _learn(self, sig, dense: bool, dy, x, w, need_dx, need_dw) -> None:
        x_shape, w_shape, stride, padding, dilation, groups = self.conv
        entries = []
        for d, a, b, want in (("B", dy, w, need_dx), ("W", x, dy, need_dw)):
            if not want:
                entries.append(None)
                continue
            # the format _ops chose for this gradient must be the plan's, so that w (B) or x (W),
            # dense in it, needs no copy
            if _ops.memory_format(a, b) is not self.fmt:
                return
            e = _policy._table.get(_policy.table_key(d, x_shape, w_shape, stride, padding, dilation, groups,
                                                     self.dtype, self.fmt is not torch.contiguous_format, self.dev))
            if e is None or e.invoker is None:
                return
            entries.append(e)
        self.bwd[sig] = (*entries, dense)
        if self.fast is not False and self._backward_entries() != self._fast_with:
            self.fast = None        # a C++ plan with this signature's Entries too
            self.make_fast()

    def _backward_entries(self) -> tuple:
        """(dx's Entry, dw's Entry) learned so far (None where not learned), as a C++ plan takes them."""
        eb = next((v[0] for v in self.bwd.values() if v[0] is not None), None)
        ew = next((v[1] for v in self.bwd.values() if v[1] is not None), None)
        return eb, ew

    def make_fast(self) -> None:
        """Make the C++ plan (``_fast.make_plan``) of this plan and the backward Entries learned so far: ``fast``
        becomes its id; stays None while the extension is building or an Entry still runs a generic build
        (tried again on a later backward); False where the extension is off or cannot be had."""
        eb, ew = self._backward_entries()
        _fast.bump()        # armed module calls of the plan's old id ask Python again
        try:
            fid = _fast.make_plan(self, eb, ew)
        except _fast.NotReady:
            return
        except Exception as e:      # noqa: BLE001  the Python path stays
            log.warning("miofind.torch: no C++ plan for %s (%s: %s)", self.entry.problem_key, type(e).__name__, e)
            self.fast = False
            return
        self.fast = False if fid is None else fid
        self._fast_with = (eb, ew)
        _fast.bump()        # and a module armed meanwhile with the old id


_plans: dict[tuple, _Plan] = {}
# set by ``problems.model_problems`` during its meta-device pass: called with (x, w, stride, padding, dilation, groups,
# bias, activation) for each forward that has a bias or an activation, where a CUDA run would ask ``_epilogue``
_observer = None


def _fast_ok() -> bool:
    """Whether a planned call may take the C++ path now: no deferred solution waits to replace an Entry
    (``_policy._apply_swaps`` runs first, through the Python path), and no CUDA-graph trees run in this
    process (``_policy._graph_trees_in_use``: their warm-up runs route allocations to a graph pool, which the
    Python path knows about)."""
    return _fast.use and not _policy._swaps and not _policy._graph_trees_in_use()


def _plan_key(nd: int, x: Tensor, w: Tensor, stride, padding, dilation, groups, bias, act: str) -> tuple:
    # the bias: whether there is one of x's type (a candidate for the fused forward); the activation the
    # epilogue may take (``_fusable_act``)
    return (nd, x.shape, x.stride(), w.shape, w.stride(), x.dtype, w.dtype, x.get_device(), w.get_device(),
            stride, padding, dilation, groups, _policy.allow_tf32(), _policy.deterministic(),
            bias is not None and bias.dtype is x.dtype, act)


def _fusable_act(activation: str, grad: bool) -> str:
    """The part of ``activation`` an epilogue may take: ReLU always (its gradient needs only its output),
    GELU only without autograd (its gradient needs the values before it)."""
    return activation if activation == "relu" or not grad else "none"


def _epilogue(x: Tensor, w: Tensor, bias, act: str, stride, padding, dilation, groups,
              device: int | None = None) -> tuple[bool, str]:
    """(bias fused, activation fused) of this call's forward (``_policy.fusable``): the bias when it is a
    vector of K elements of x's type, and ``act``, when a fusing solver of miofind's own claims that fused
    problem; (False, "none") otherwise, also when a bias that cannot be fused would have to come first.
    ``device``: the CUDA device to answer for (default x's; ``problems.model_problems`` asks for device 0
    of its meta tensors)."""
    has_b = bias is not None
    if has_b and (bias.dtype is not x.dtype or bias.dim() != 1 or bias.shape[0] != w.shape[0]):
        return False, "none"
    if not has_b and act == "none":
        return False, "none"
    cl = _ops.memory_format(x, w) is not torch.contiguous_format
    key = _policy.table_key("F", x.shape, w.shape, stride, padding, dilation, groups, x.dtype, cl,
                            x.get_device() if device is None else device)
    if _policy.fusable(key, has_b, act):
        return has_b, act
    return False, "none"


def _activate(y: Tensor, act: str) -> Tensor:
    """The activation an epilogue did not take, as one PyTorch op."""
    return torch.relu(y) if act == "relu" else F.gelu(y) if act == "gelu" else y


def _make_plan(key: tuple, nd: int, x: Tensor, w: Tensor, stride, padding, dilation, groups, bias, act: str) -> None:
    """After a first call of the slow path: keep a ``_Plan`` for ``key`` when the call qualifies (2-D
    or 3-D, a 1-D call as its 2-D problem, explicit padding, x dense in the chosen memory format, on the
    current device; a w that is not dense in it is copied per call, ``_Plan.wcopy``); a fused plan when
    the bias or ``act`` (``_fusable_act``'s) went into the forward's epilogue."""
    if isinstance(padding, str) or x.dim() != nd + 2 or x.get_device() != torch._C._cuda_getDevice():
        return
    fmt = _ops.memory_format(x, w)
    if not x.is_contiguous(memory_format=fmt):
        return
    fused, fact = _epilogue(x, w, bias, act, stride, padding, dilation, groups)
    entry = _policy._table.get(_policy.table_key("F", x.shape, w.shape, stride, padding, dilation, groups, x.dtype,
                                                 fmt is not torch.contiguous_format, x.get_device(), fused, fact))
    if entry is None or entry.invoker is None:
        return
    out_shape = _ops.out_size(x.shape, w.shape, stride, padding, dilation)
    conv = (list(x.shape), list(w.shape), list(stride), list(padding), list(dilation), groups)
    plan = _Plan(entry, out_shape, fmt, x, w, conv, fused, fact)
    plan.wcopy = not w.is_contiguous(memory_format=fmt)
    _plans[key] = plan


REPIN_MAX = 4       # how many times a plan is remade for another stream at most


def _repin(plan: _Plan):
    """A C++ plan pinned to one stream (its library calls carry it) called on another: remade for the current stream
    (as when warm-up calls ran on a side stream and the model then runs on the default one), at most ``REPIN_MAX``
    times, never under CUDA-graph capture (where the Python path runs anyway); its id then, or the old one."""
    if plan.remade >= REPIN_MAX or _policy._capturing():
        return plan.fast
    plan.remade += 1
    plan.fast = None
    plan.make_fast()
    return plan.fast


def clear_plans() -> None:
    """Forget the forward plans (``miofind.torch.clear`` calls this with the prepared table)."""
    _plans.clear()
    _fast.bump()


def _swap_entry(old, new) -> None:
    """A deferred solution replaced ``old`` (``_policy._apply_swaps``): the plans holding it run ``new`` (a new C++
    plan is made at their next backward)."""
    for plan in list(_plans.values()):
        hit = plan.entry is old
        if hit:
            plan.entry = new
        for sig, entries in list(plan.bwd.items()):
            if any(e is old for e in entries):
                hit = True
                plan.bwd[sig] = tuple(new if e is old else e for e in entries)
        if hit and plan.fast is not False:
            plan.fast = None
            _fast.bump()


_policy._on_clear.append(clear_plans)
_policy._on_swap.append(_swap_entry)
_policy._on_clear.append(_casts.clear)


def conv_normalized(nd: int, x: Tensor, w: Tensor, bias, stride, padding, dilation, groups,
                    activation: str = "none", arm: list | None = None) -> Tensor:
    """The convolution with arguments already through ``normalize`` (modules keep theirs), then
    ``activation`` ("none", "relu" or "gelu": a module ``fuse`` paired with its activation). ``arm``: a list
    that gets (plan, C++ plan id, key, autocast, w as given, x as given) where this call launched from C++ without
    an activation or a copied weight (a fused bias is armed), the key a module's armed call repeats
    (``modules._Miofind``)."""
    key = None
    x0, w0 = x, w       # as given, before autocast's casts
    sx, sw, sa = x, w, (stride, padding, dilation)  # the slow path's call: after autocast's casts, 1-D as given
    if type(x) in _PLAIN and type(w) in _PLAIN and x.is_cuda and not torch.compiler.is_compiling():
        grad = torch.is_grad_enabled() and (x.requires_grad or w.requires_grad or
                                            (bias is not None and bias.requires_grad))
        wc = w      # the weight in the computing type
        autocast = torch.is_autocast_enabled("cuda")
        if autocast:
            # with autograd, the weight is cast outside it: PlannedConv casts dw back (no ToCopy node per call)
            detach = grad and w.requires_grad and w.dtype is not torch.get_autocast_dtype("cuda")
            x, wc, bias = _autocast(x, w.detach() if detach else w, bias)
            if not detach:
                w = wc
        act = _fusable_act(activation, grad)
        sx, sw, sa = x, w, (stride, padding, dilation)
        if nd == 1:
            # a batched 1-D call with explicit padding is planned as the 2-D problem it runs as (H = 1 views);
            # y is squeezed back below
            if x.dim() != 3 or wc.dim() != 3 or isinstance(padding, str):
                return _conv_slow(nd, sx, sw, bias, *sa, groups, activation)
            x, wc4 = x.unsqueeze(2), wc.unsqueeze(2)
            w = wc4 if w is wc else w.unsqueeze(2)
            wc = wc4
            stride, padding, dilation = _as_2d(stride, padding, dilation)
        key = _plan_key(nd, x, wc, stride, padding, dilation, groups, bias, act)
        plan = _plans.get(key)
        # a fused plan reads K bias elements on its device: any other bias takes the slow path (PyTorch's error)
        if plan is not None and plan.dev == torch._C._cuda_getDevice() and \
                not (plan.fused and (bias.dim() != 1 or bias.shape[0] != plan.out_shape[1] or
                                     bias.get_device() != plan.dev)):
            fb = None
            if plan.fused:
                fb = bias if bias.is_contiguous() else bias.contiguous()
            if plan.wcopy:      # w not dense in the plan's format (a weight made per call: weight_norm)
                same = w is wc
                wc = wc.contiguous(memory_format=plan.fmt)
                if same:
                    w = wc
            fid = plan.fast
            if plan.pinned is not None and type(fid) is int and plan.pinned != _ops._stream(plan.dev):
                fid = _repin(plan)
            if type(fid) is int and _fast_ok():
                # the C++ hot path: forward launched from C++, backward a C++ autograd node
                mod = _fast._module
                y = mod.apply(x, w, wc, fb, fid, _ops._stream(plan.dev)) if grad else \
                    mod.forward(x, wc, fb, fid, _ops._stream(plan.dev))
                if arm is not None and plan.act == "none" and activation == "none" and not plan.wcopy:
                    arm.append((plan, fid, key, autocast, w0, x0))
            elif grad:
                y = _ops.planned_apply(x, w, fb, plan, wc)
            else:
                if fid is None and plan.bwd == {}:
                    plan.make_fast()    # inference: a C++ plan of the forward alone (a backward remakes it)
                y = plan.forward(x, wc, fb)
            if bias is not None and fb is None:
                y = y.add_(bias.view(plan.bias_shape))
            y = _activate(y, activation) if plan.act == "none" else y
            return y.squeeze(2) if nd == 1 else y
    # the slow path casts w under autograd (``_autocast``), as PyTorch's autocast does
    y = _conv_slow(nd, sx, sw, bias, *sa, groups, activation)
    if key is not None and x.dtype in _policy.SUPPORTED_DTYPES:
        _make_plan(key, 2 if nd == 1 else nd, x, wc, stride, padding, dilation, groups, bias, act)
    return y


def _conv_slow(nd: int, x: Tensor, w: Tensor, bias, stride, padding, dilation, groups,
               activation: str = "none") -> Tensor:
    x, w, bias = _autocast(x, w, bias)
    if not supported(x, w) or x.dim() not in (nd + 1, nd + 2) or w.dim() != nd + 2:
        # PyTorch's own convolution (and its error messages for wrong ranks)
        return _activate(_TORCH[nd](x, w, bias, stride, padding, dilation, groups), activation)
    unbatched = x.dim() == nd + 1
    if unbatched:
        x = x.unsqueeze(0)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nd
        else:
            padding, extra = same_padding(w.shape, dilation)
            if any(extra):
                # PyTorch's rule too: the odd pad of each dim goes on the right, as explicit zeros
                pad = []
                for e in reversed(extra):
                    pad += [0, e]
                x = F.pad(x, pad)
    if nd == 1:     # as 2-D with H = 1 (miofind's 1-D problems)
        x, w = x.unsqueeze(2), w.unsqueeze(2)
        stride, padding, dilation = (1, *stride), (0, *padding), (1, *dilation)
    if x.shape[1] != w.shape[1] * groups:
        raise ValueError(f"w.shape={tuple(w.shape)}: expected input with {w.shape[1] * groups} channels "
                         f"(groups={groups}), got x.shape={tuple(x.shape)}")
    if w.shape[0] % groups:
        raise ValueError(f"w.shape={tuple(w.shape)}: {w.shape[0]} output channels are not divisible by groups={groups}")
    grad = torch.is_grad_enabled() and (x.requires_grad or w.requires_grad or (bias is not None and bias.requires_grad))
    fused, fact = (_epilogue(x, w, bias, _fusable_act(activation, grad), stride, padding, dilation, groups)
                   if _eager(x, w) else (False, "none"))
    if fused or fact != "none":
        b = None
        if fused:
            b = bias if bias.is_contiguous() else bias.contiguous()
            bias = None             # in the forward's epilogue
        if fact != "none":
            activation = "none"     # in the forward's epilogue too
        if grad:
            y = _ops.EagerConvFused.apply(x, w, b, fact, list(stride), list(padding), list(dilation), groups)
        else:
            y = _ops.forward_fused(x, w, stride, padding, dilation, groups, b, fact)
    elif _eager(x, w):
        if torch.is_grad_enabled() and (x.requires_grad or w.requires_grad):
            y = _ops.EagerConv.apply(x, w, list(stride), list(padding), list(dilation), groups)
        else:   # inference: no autograd node to record (Function.apply costs ~10 us of host time)
            y = _ops._forward(x, w, stride, padding, dilation, groups)
    else:
        if _observer is not None and (bias is not None or activation != "none"):
            _observer(x, w, stride, padding, dilation, groups, bias, _fusable_act(activation, grad))
        y = _ops.conv_forward(x, w, list(stride), list(padding), list(dilation), groups)
    if bias is not None:
        y = y.add_(bias.view(1, -1, *([1] * (y.dim() - 2))))
    y = _activate(y, activation)
    if nd == 1:
        y = y.squeeze(2)
    return y.squeeze(0) if unbatched else y


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """``torch.nn.functional.conv1d`` through miofind (as 2-D with H = 1); see the module docstring."""
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """``torch.nn.functional.conv2d`` through miofind: NCHW, or NHWC for channels_last inputs (no
    copy), output in the memory format cuDNN would return; see the module docstring."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """``torch.nn.functional.conv3d`` through miofind (NCDHW, or NDHWC for channels_last_3d inputs)."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)
