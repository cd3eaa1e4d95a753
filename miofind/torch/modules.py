"""``Conv1d``/``Conv2d``/``Conv3d``: the ``torch.nn`` modules with their convolution run by miofind,
and ``convert(model)``, which swaps a model's ``nn.ConvNd`` modules in place; ``fuse(model)`` then
pairs each with the ReLU or GELU that follows it in a Sequential (their fused forward problem).

The classes add no state: parameters, buffers, ``state_dict`` keys, ``repr`` and initialisation are
``torch.nn``'s. ``convert`` changes each module's class in place (the same objects, so optimizers
and hooks that hold them keep working). Padding modes other than "zeros" (reflect, replicate,
circular) run as ``torch.nn`` runs them: an explicit ``F.pad`` of the input, then a convolution
without padding (here miofind's).
"""

from __future__ import annotations

import random
import threading
import weakref
from typing import NamedTuple

import torch
from torch import nn

from . import _fast, _policy, _preload, functional as MF


class _Miofind:
    """What the three classes share: ``_conv_forward`` through ``miofind.torch.functional``."""

    _nd = 0   # spatial dimensions

    def _miofind_args(self):
        """(stride, padding, dilation, groups) normalised once (again if the attributes change)."""
        pad = self.padding if self.padding_mode == "zeros" else 0
        src = (self.stride, pad, self.dilation, self.groups)
        if torch.compiler.is_compiling():    # traced once: no cache to mutate in the graph
            return MF.normalize(self._nd, *src)
        cached = self.__dict__.get("_miofind_args_cache")
        if cached is None or cached[0] != src:
            cached = self.__dict__["_miofind_args_cache"] = (src, MF.normalize(self._nd, *src))
        return cached[1]

    def _conv_forward(self, input, weight, bias):
        compiling = torch.compiler.is_compiling()   # traced: the custom ops, never the armed call
        d = self.__dict__
        mod = _fast._module
        if not compiling:
            hot = d.get("_miofind_hot")     # (slot, token, stride, padding, dilation, groups) of the armed call
            if hot is not None and mod and _fast.arm_modules and type(input) in MF._PLAIN and \
                    type(weight) in MF._PLAIN and hot[2] is self.stride and hot[3] is self.padding and \
                    hot[4] is self.dilation and hot[5] == self.groups and self.padding_mode == "zeros" and \
                    MF._fast_ok():
                y = mod.hot(hot[0], hot[1], input, weight, bias, _policy.allow_tf32(), _policy.deterministic())
                if y is not None:
                    return y
        if self.padding_mode != "zeros":
            input = nn.functional.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
        fused = d.get("_miofind_fused")     # (its activation, the module it replaced): ``fuse``
        # where this call may arm the next ones, the generation before the Python path decides
        armable = not (compiling or fused is not None or self.padding_mode != "zeros" or not mod or
                       not _fast.arm_modules)
        arm, gen = ([], mod.gen()) if armable else (None, 0)
        y = MF.conv_normalized(self._nd, input, weight, bias, *self._miofind_args(),
                               activation=fused[0] if fused else "none", arm=arm)
        if arm:
            self._miofind_arm(mod, gen, *arm[0])
        return y

    def _miofind_arm(self, mod, gen: int, plan, fid: int, key: tuple, autocast: bool, w, x) -> None:
        """Arm this module's next calls with the key its call just launched from C++ (``_fast.cpp``'s ``hot``):
        a repeat with the same arguments skips ``conv_normalized``'s Python (under autocast the casts of x, the
        weight and the bias are made in C++ as ``conv_normalized`` makes them). The token ties the slot to this
        module (a copy or an unpickled module in another process does not match it)."""
        hot = self.__dict__.get("_miofind_hot")
        if hot is not None:
            slot = hot[0]
        else:
            slot = mod.new_hot()
            if slot < 0:
                return
            # the slot holds the weight and its cast (autocast): released with the module
            weakref.finalize(self, mod.free_hot, slot).atexit = False
        token = random.getrandbits(63)
        # x and w as given (under autocast, before their casts; a 1-D module's, before the H = 1 views)
        mod.arm(slot, token, gen, fid, list(x.shape), list(x.stride()), list(w.shape), list(w.stride()), plan.dtype,
                plan.dev, key[13], key[14], key[15], list(plan.bias_shape), -1 if plan.pinned is None else plan.pinned,
                autocast, w.dtype, self._nd == 1, x.dtype)
        self.__dict__["_miofind_hot"] = (slot, token, self.stride, self.padding, self.dilation, self.groups)

    def __getstate__(self):
        # the armed call is this process's (a slot of the loaded extension): copies and pickles arm their own
        state = super().__getstate__()
        state.pop("_miofind_hot", None)
        return state


class Conv1d(_Miofind, nn.Conv1d):
    """``torch.nn.Conv1d`` run by miofind (as 2-D with H = 1)."""

    _nd = 1


class Conv2d(_Miofind, nn.Conv2d):
    """``torch.nn.Conv2d`` run by miofind (NCHW, or NHWC for channels_last inputs)."""

    _nd = 2


class Conv3d(_Miofind, nn.Conv3d):
    """``torch.nn.Conv3d`` run by miofind (NCDHW, or NDHWC for channels_last_3d inputs)."""

    _nd = 3


_SWAP = {nn.Conv1d: Conv1d, nn.Conv2d: Conv2d, nn.Conv3d: Conv3d}
_BACK = {v: k for k, v in _SWAP.items()}     # every miofind class (those made for subclasses too) -> the class it ran
_MADE: dict[type, type] = {}                  # a subclass of nn.ConvNd -> the miofind class made for it
_MADE_LOCK = threading.Lock()
# the methods that compute a convolution module's output: a subclass that defines one keeps its own code
_COMPUTE = ("forward", "_conv_forward", "__call__", "_call_impl")


def _parametrized(cls: type) -> bool:
    """Whether ``cls`` is the class ``torch.nn.utils.parametrize`` made for a module it parametrized (e.g. by
    ``weight_norm``): ``Parametrized<Base>``, its one base the module's class before, with its tensors' properties."""
    return (len(cls.__bases__) == 1 and cls.__name__ == f"Parametrized{cls.__bases__[0].__name__}"
            and "__getstate__" in vars(cls))


def _own_code(cls: type, base: type) -> list[str]:
    """The methods of ``_COMPUTE`` that ``cls`` or a class between it and ``base`` defines."""
    mro = cls.__mro__
    return [f"{k.__qualname__}.{a}" for k in mro[:mro.index(base)] for a in _COMPUTE if a in vars(k)]


def _rebuild(cls: type, state: dict) -> nn.Module:
    """A module of a miofind class made for a subclass, from a pickle or a deep copy: ``cls`` (the subclass) with
    ``state``, then converted again."""
    m = cls.__new__(cls)
    m.__setstate__(state)
    m.__class__ = _miofind_class(cls)[0]
    return m


def _reduce_ex(self, protocol):
    # a made class cannot be found by name: pickles and deep copies name the subclass it was made for
    return _rebuild, (_BACK[type(self)], self.__getstate__())


def _miofind_class(cls: type) -> tuple[type | None, str | None]:
    """(the miofind class that runs a module of convolution class ``cls``, None) or (None, why it stays PyTorch's).
    torch.nn's own classes have theirs (``Conv1d``, ...). A subclass of one whose own code leaves the convolution
    alone (an ``__init__`` of its own, helpers: torchvision's video ``Conv3DSimple``) gets a class made once, of
    its name, with ``_Miofind`` before it; the class ``torch.nn.utils.parametrize`` made for a parametrized module
    (``weight_norm``) is made again over the miofind class of the module's class before (so removing the
    parametrization leaves a converted module)."""
    got = _SWAP.get(cls) or _MADE.get(cls)
    if got is not None:
        return got, None
    if _parametrized(cls):
        inner, why = _miofind_class(cls.__bases__[0])
        if inner is None:
            return None, why
        dct = {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__")}
        make = lambda: type(cls.__name__, (inner,), dct)  # noqa: E731
    else:
        base = next((b for b in _SWAP if issubclass(cls, b)), None)
        own = _own_code(cls, base) if base is not None else ["(not a subclass of nn.Conv1d/2d/3d)"]
        if own:
            return None, (f"{cls.__module__}.{cls.__qualname__}: a subclass of nn.{cls.__mro__[1].__name__} with its "
                          f"own code ({', '.join(own)}), left unchanged")
        dct = {"_nd": _SWAP[base]._nd, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
               "__reduce_ex__": _reduce_ex}
        make = lambda: type(cls.__name__, (_Miofind, cls), dct)  # noqa: E731
    with _MADE_LOCK:
        got = _MADE.get(cls)
        if got is None:
            got = _MADE[cls] = make()
            _BACK[got] = cls
    return got, None


class Converted(NamedTuple):
    """What ``convert`` did: how many modules it swapped, and (name, reason) of each convolution
    module it left as PyTorch's."""

    swapped: int
    left: list


def _reason(m: nn.Module) -> str | None:
    """Why the convolution module ``m`` stays PyTorch's, or None when it can be swapped."""
    if isinstance(m, nn.modules.conv._ConvTransposeNd):
        return f"{type(m).__name__}: transposed convolutions are not run by miofind.torch yet"
    if isinstance(m, nn.modules.lazy.LazyModuleMixin) and m.has_uninitialized_params():
        return f"{type(m).__name__}: parameters not initialised yet (run one forward first)"
    if m.weight.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return f"weight dtype {m.weight.dtype}: miofind computes in float32, float16 and bfloat16"
    return _miofind_class(type(m))[1]


def convert(model: nn.Module) -> Converted:
    """Swap every ``nn.Conv1d``/``nn.Conv2d``/``nn.Conv3d`` of ``model`` (itself included, at any
    depth: Sequential, ModuleList, custom modules) for miofind's class, in place, and return
    ``Converted(swapped, left)``: the number swapped, and (qualified name, reason) of every other
    convolution module left as PyTorch's (transposed, lazy, float64 weights, subclasses that define
    ``forward`` or ``_conv_forward``). A subclass that leaves those alone (its own ``__init__``, helpers)
    and a parametrized module (``weight_norm``) are swapped too, each for a class of the same name made
    for it. Modules already converted are neither counted nor listed."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    swapped, left = 0, []
    for name, m in model.named_modules(remove_duplicate=True):
        if isinstance(m, _Miofind) or not isinstance(m, nn.modules.conv._ConvNd):   # (parametrized after convert too)
            continue
        why = _reason(m)
        if why is not None:
            left.append((name or "<model>", why))
            continue
        m.__class__ = _miofind_class(type(m))[0]
        swapped += 1
    if swapped:
        _preload.start()    # what the first convolution would import, meanwhile (MIOFIND_TORCH_PRELOAD)
    return Converted(swapped, left)


def _activation_of(m: nn.Module) -> str | None:
    """The activation ``fuse`` takes into a convolution: "relu" (nn.ReLU), "gelu" (nn.GELU, exact), else None."""
    if type(m) is nn.ReLU:
        return "relu"
    if type(m) is nn.GELU and m.approximate == "none":
        return "gelu"
    return None


def fuse(model: nn.Module) -> int:
    """After ``convert``: each miofind convolution directly followed by an ``nn.ReLU`` or exact ``nn.GELU``
    in an ``nn.Sequential`` computes that activation itself, and the activation module in the Sequential
    becomes ``nn.Identity`` (as ``torch.ao.quantization.fuse_modules`` does; ``revert`` puts it back). The
    convolution then runs y = act(conv(x) + bias) as one fused forward problem wherever a solver of
    miofind's fuses it (``channels_last`` FP16/BF16; GELU only without autograd), else the activation is
    one PyTorch op after it: the results are those of the unfused model. ``state_dict`` is unchanged (the
    activations have no state). Returns how many pairs it fused; pairs fused before are not counted."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    n = 0
    for seq in list(model.modules()):
        if not isinstance(seq, nn.Sequential):
            continue
        names = list(seq._modules)
        for a, b in zip(names, names[1:]):
            conv, act = seq._modules[a], seq._modules[b]
            kind = _activation_of(act) if act is not None else None
            if type(conv) in _BACK and kind is not None and "_miofind_fused" not in conv.__dict__:
                conv.__dict__["_miofind_fused"] = (kind, seq, b, act)
                seq._modules[b] = nn.Identity()
                n += 1
    return n


def revert(model: nn.Module) -> int:
    """Undo ``convert`` (and ``fuse``): give every miofind convolution module of ``model`` back its
    ``torch.nn`` class, and each activation ``fuse`` took its place, in place; returns how many modules."""
    n = 0
    for m in model.modules():
        back = _BACK.get(type(m))
        if back is not None:
            m.__dict__.pop("_miofind_hot", None)
            fused = m.__dict__.pop("_miofind_fused", None)
            if fused is not None:
                _, seq, name, act = fused
                seq._modules[name] = act
            m.__class__ = back
            n += 1
    return n
