"""The convolution problems a PyTorch model poses, from one forward and backward pass on the meta
device (no GPU, no memory, nothing computed): what ``miofind tune --torch-model`` tunes, so that a
user can fill the FindDB for their own model before training it."""

from __future__ import annotations

import importlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..problem import ProblemDescription
from . import _ops, _policy, functional
from .modules import convert

_DTYPES = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}


class _Recorder(TorchDispatchMode):
    """Records every miofind custom op that runs, with the problem it would look up, and (``epilogue``) the
    fused forward problem an eager CUDA run looks up instead for a convolution with a bias or activation."""

    def __init__(self, tf32: bool) -> None:
        super().__init__()
        self.tf32 = tf32
        self.problems: dict[str, ProblemDescription] = {}

    def epilogue(self, x, w, stride, padding, dilation, groups, bias, act) -> None:
        """``functional._epilogue``'s decision as on CUDA device 0: the fused forward problem where one of
        miofind's solvers fuses it (``_policy.fusable``), recorded beside the plain one (the forward of
        ``torch.compile`` and of an unfusable call)."""
        fused, fact = functional._epilogue(x, w, bias, act, stride, padding, dilation, groups, device=0)
        if not fused and fact == "none":
            return
        cl = _ops.memory_format(x, w) is not torch.contiguous_format
        p = _policy.problem_for("F", x.shape, w.shape, stride, padding, dilation, groups, x.dtype, cl, self.tf32,
                                bias=int(fused), activation=fact)
        self.problems.setdefault(p.key(), p)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "miofind":
            a, b, *rest = args
            fmt = _ops.memory_format(a, b) if func._opname != "conv_backward_weight" else _ops.memory_format(b, a)
            cl = fmt is not torch.contiguous_format
            if func._opname == "conv_forward":
                d, xs, ws = "F", a.shape, b.shape
                stride, padding, dilation, groups = rest
            elif func._opname == "conv_backward_data":
                d, xs, ws = "B", rest[0], b.shape
                stride, padding, dilation, groups = rest[1:]
            else:
                d, xs, ws = "W", b.shape, rest[0]
                stride, padding, dilation, groups = rest[1:]
            p = _policy.problem_for(d, xs, ws, stride, padding, dilation, groups, a.dtype, cl, self.tf32)
            self.problems.setdefault(p.key(), p)
        return func(*args, **(kwargs or {}))


def load_model(spec):
    """A model from a dotted name (``torchvision.models.resnet50``: a module attribute called with no
    arguments) or a callable returning one, built on the meta device."""
    ctor = spec
    if isinstance(spec, str):
        mod, _, attr = spec.rpartition(".")
        if not mod:
            raise ValueError(f"torch_model={spec!r}: expected a dotted name such as torchvision.models.resnet50")
        try:
            ctor = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as e:
            raise ValueError(f"torch_model={spec!r}: cannot import it ({e})") from None
    if not callable(ctor):
        raise ValueError(f"torch_model={spec!r}: not callable")
    try:
        with torch.device("meta"):
            model = ctor()
    except Exception as e:
        raise ValueError(f"torch_model={spec!r}: building it with no arguments failed: {e.__class__.__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else ''}") from None
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"torch_model={spec!r}: returned {type(model).__name__}, not a torch.nn.Module")
    return model


def model_problems(model, input_shape, *, dtype: str = "FP32", channels_last: bool = False, tf32: bool = False,
                   train: bool = True) -> list[ProblemDescription]:
    """Every convolution problem (F, and B/W where autograd asks for them when ``train``) of
    ``model`` (a module, a callable returning one, or a dotted name) on an input of ``input_shape``
    (N, C, *spatial) in ``dtype`` ("FP32", "FP16", "BF16"; the model is cast as AMP would cast its
    convolutions), channels_last when asked, FP32 problems with TF32 math when ``tf32`` (PyTorch's
    default ``torch.backends.cudnn.allow_tf32``). Runs on the meta device; the model is not changed
    (a meta copy is converted). A convolution with a bias (or a fused activation) also gives the fused forward
    problem where one of miofind's solvers fuses it, as an eager CUDA run asks that one instead (``_Recorder.epilogue``)."""
    if isinstance(model, torch.nn.Module):
        import copy
        model = copy.deepcopy(model).to("meta")
    else:
        model = load_model(model)
    dt = _DTYPES.get(str(dtype).upper())
    if dt is None:
        raise ValueError(f"dtype={dtype!r}: expected one of fp32, fp16, bf16")
    shape = tuple(input_shape)
    if len(shape) not in (3, 4, 5) or not all(isinstance(v, int) and v > 0 for v in shape):
        raise ValueError(f"input_shape={input_shape!r}: expected (N, C, *spatial) of 1 to 3 spatial dims, positive ints")
    model = model.to(dt)
    convert(model)
    x = torch.empty(shape, device="meta", dtype=dt)
    if channels_last and len(shape) in (4, 5):
        fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
        model, x = model.to(memory_format=fmt), x.to(memory_format=fmt)
    model.train(train)
    rec = _Recorder(tf32)
    functional._observer = rec.epilogue
    try:
        with rec:
            if train:
                out = model(x)
                out = out[0] if isinstance(out, (tuple, list)) else getattr(out, "logits", out)
                out.float().sum().backward()
            else:
                with torch.no_grad():
                    model(x)
    finally:
        functional._observer = None
    return list(rec.problems.values())
