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

    def _miofind_arm(self, mod, gen: int, plan, fid: int, key: tuple, autocast: bool, w) -> None:
        """Arm this module's next calls with the key its call just launched from C++ (``_fast.cpp``'s ``hot``):
        a repeat with the same arguments skips ``conv_normalized``'s Python (under autocast the weight's cast is
        made in C++ as ``conv_normalized`` makes it). The token ties the slot to this module (a copy or an
        unpickled module in another process does not match it)."""
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
        mod.arm(slot, token, gen, fid, list(key[1]), list(key[2]), list(w.shape), list(w.stride()), plan.dtype,
                plan.dev, key[13], key[14], key[15], list(plan.bias_shape), -1 if plan.pinned is None else plan.pinned,
                autocast, w.dtype)
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
_BACK = {v: k for k, v in _SWAP.items()}


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
    if type(m) not in _SWAP:
        return (f"{type(m).__module__}.{type(m).__qualname__}: a subclass of nn.{type(m).__mro__[1].__name__} "
                "with its own code, left unchanged")
    if m.weight.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return f"weight dtype {m.weight.dtype}: miofind computes in float32, float16 and bfloat16"
    return None


def convert(model: nn.Module) -> Converted:
    """Swap every ``nn.Conv1d``/``nn.Conv2d``/``nn.Conv3d`` of ``model`` (itself included, at any
    depth: Sequential, ModuleList, custom modules) for miofind's class, in place, and return
    ``Converted(swapped, left)``: the number swapped, and (qualified name, reason) of every other
    convolution module left as PyTorch's (transposed, lazy, subclasses with their own code, float64
    weights). Modules already converted are neither counted nor listed."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    swapped, left = 0, []
    for name, m in model.named_modules(remove_duplicate=True):
        if type(m) in _BACK or not isinstance(m, nn.modules.conv._ConvNd):
            continue
        why = _reason(m)
        if why is not None:
            left.append((name or "<model>", why))
            continue
        m.__class__ = _SWAP[type(m)]
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
