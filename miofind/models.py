"""The unique convolution layers of standard networks, as problems for ``miofind tune --model``.

Layers follow the torchvision architectures at their standard input sizes (224x224; Inception v3
at 299x299). ``unet`` is the 2015 U-Net as commonly used today: 3 input channels at 256x256,
3x3 pad-1 convs, widths 64-128-256-512-1024 and a final 1x1 conv to 2 classes; its up path is a
bilinear upsample (no conv) followed by the two 3x3 convs on the concatenated channels, so the
original 2x2 stride-2 transposed convs do not appear.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import NamedTuple

from .problem import DIRECTIONS, SOLVABLE_DTYPES, SUPPORTED_LAYOUTS, ProblemDescription, conv_out_size

MODELS: tuple[str, ...] = ("resnet50", "resnet101", "vgg16", "mobilenet_v2", "inception_v3", "unet")

LAYOUTS = SUPPORTED_LAYOUTS[2]


@dataclass(frozen=True)
class ConvLayer:
    """One 2D convolution layer (forward view); ``count`` is how many times it occurs in the net."""

    c: int
    k: int
    in_size: tuple[int, int]
    filter_size: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int]
    groups: int = 1
    count: int = 1

    @property
    def out_size(self) -> tuple[int, int]:
        return tuple(conv_out_size(i, f, p, s, 1) for i, f, p, s in
                     zip(self.in_size, self.filter_size, self.pads, self.strides))


# -- a tiny shape-checked graph builder ---------------------------------------------------------

class _T(NamedTuple):
    """An activation tensor: channels and spatial size."""
    c: int
    h: int
    w: int


def _pair(v) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)


class _Net:
    def __init__(self):
        self.layers: list[ConvLayer] = []

    def conv(self, x: _T, k: int, f=1, s=1, p=0, g=1) -> _T:
        f, s, p = _pair(f), _pair(s), _pair(p)
        assert x.c % g == 0 and k % g == 0, (x, k, g)
        layer = ConvLayer(x.c, k, (x.h, x.w), f, s, p, g)
        oh, ow = layer.out_size
        assert oh >= 1 and ow >= 1, layer
        self.layers.append(layer)
        return _T(k, oh, ow)

    @staticmethod
    def pool(x: _T, f, s, p=0) -> _T:
        f, s, p = _pair(f), _pair(s), _pair(p)
        return _T(x.c, conv_out_size(x.h, f[0], p[0], s[0], 1), conv_out_size(x.w, f[1], p[1], s[1], 1))

    @staticmethod
    def concat(*xs: _T) -> _T:
        assert len({(x.h, x.w) for x in xs}) == 1, xs
        return _T(sum(x.c for x in xs), xs[0].h, xs[0].w)

    @staticmethod
    def add(a: _T, b: _T) -> _T:
        assert a == b, (a, b)
        return a

    @staticmethod
    def upsample(x: _T, factor: int = 2) -> _T:
        return _T(x.c, x.h * factor, x.w * factor)


# -- architectures ------------------------------------------------------------------------------

def _resnet(blocks: tuple[int, int, int, int]) -> list[ConvLayer]:
    # torchvision ResNet v1.5: bottleneck 1x1 -> 3x3 (carries the stride) -> 1x1 (x4 expansion);
    # the first block of each stage has a 1x1 stride-s downsample shortcut.
    net = _Net()
    x = net.conv(_T(3, 224, 224), 64, 7, 2, 3)
    x = net.pool(x, 3, 2, 1)  # 112 -> 56
    for stage, n in enumerate(blocks):
        width = 64 * 2 ** stage
        for i in range(n):
            s = 2 if stage > 0 and i == 0 else 1
            y = net.conv(x, width, 1)
            y = net.conv(y, width, 3, s, 1)
            y = net.conv(y, width * 4, 1)
            shortcut = net.conv(x, width * 4, 1, s) if i == 0 else x
            x = net.add(y, shortcut)
    assert x == _T(2048, 7, 7), x
    return net.layers


def _vgg16() -> list[ConvLayer]:
    # torchvision vgg16, configuration D: "M" is a 2x2 stride-2 max pool.
    cfg = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")
    net = _Net()
    x = _T(3, 224, 224)
    for v in cfg:
        x = net.pool(x, 2, 2) if v == "M" else net.conv(x, v, 3, 1, 1)
    assert x == _T(512, 7, 7), x
    return net.layers


def _mobilenet_v2() -> list[ConvLayer]:
    # torchvision MobileNetV2, width 1.0 (all channel counts already multiples of 8).
    settings = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),  # t, c, n, s
                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))
    net = _Net()
    x = net.conv(_T(3, 224, 224), 32, 3, 2, 1)
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = int(round(x.c * t))
            y = net.conv(x, hidden, 1) if t != 1 else x  # expansion (absent when t == 1)
            y = net.conv(y, hidden, 3, stride, 1, g=hidden)  # depthwise
            y = net.conv(y, c, 1)  # linear projection
            x = net.add(x, y) if stride == 1 and x.c == c else y
    x = net.conv(x, 1280, 1)
    assert x == _T(1280, 7, 7), x
    return net.layers


def _inception_a(net: _Net, x: _T, pool_features: int) -> _T:
    b1 = net.conv(x, 64, 1)
    b5 = net.conv(net.conv(x, 48, 1), 64, 5, 1, 2)
    b3 = net.conv(net.conv(net.conv(x, 64, 1), 96, 3, 1, 1), 96, 3, 1, 1)
    bp = net.conv(net.pool(x, 3, 1, 1), pool_features, 1)  # 3x3 avg pool, stride 1, pad 1
    return net.concat(b1, b5, b3, bp)


def _inception_b(net: _Net, x: _T) -> _T:
    b3 = net.conv(x, 384, 3, 2)
    bd = net.conv(net.conv(net.conv(x, 64, 1), 96, 3, 1, 1), 96, 3, 2)
    bp = net.pool(x, 3, 2)  # 3x3 max pool, stride 2
    return net.concat(b3, bd, bp)


def _inception_c(net: _Net, x: _T, c7: int) -> _T:
    b1 = net.conv(x, 192, 1)
    b7 = net.conv(x, c7, 1)
    b7 = net.conv(b7, c7, (1, 7), 1, (0, 3))
    b7 = net.conv(b7, 192, (7, 1), 1, (3, 0))
    bd = net.conv(x, c7, 1)
    bd = net.conv(bd, c7, (7, 1), 1, (3, 0))
    bd = net.conv(bd, c7, (1, 7), 1, (0, 3))
    bd = net.conv(bd, c7, (7, 1), 1, (3, 0))
    bd = net.conv(bd, 192, (1, 7), 1, (0, 3))
    bp = net.conv(net.pool(x, 3, 1, 1), 192, 1)
    return net.concat(b1, b7, bd, bp)


def _inception_d(net: _Net, x: _T) -> _T:
    b3 = net.conv(net.conv(x, 192, 1), 320, 3, 2)
    b7 = net.conv(x, 192, 1)
    b7 = net.conv(b7, 192, (1, 7), 1, (0, 3))
    b7 = net.conv(b7, 192, (7, 1), 1, (3, 0))
    b7 = net.conv(b7, 192, 3, 2)
    bp = net.pool(x, 3, 2)
    return net.concat(b3, b7, bp)


def _inception_e(net: _Net, x: _T) -> _T:
    b1 = net.conv(x, 320, 1)
    b3 = net.conv(x, 384, 1)
    b3 = net.concat(net.conv(b3, 384, (1, 3), 1, (0, 1)), net.conv(b3, 384, (3, 1), 1, (1, 0)))
    bd = net.conv(net.conv(x, 448, 1), 384, 3, 1, 1)
    bd = net.concat(net.conv(bd, 384, (1, 3), 1, (0, 1)), net.conv(bd, 384, (3, 1), 1, (1, 0)))
    bp = net.conv(net.pool(x, 3, 1, 1), 192, 1)
    return net.concat(b1, b3, bd, bp)


def _inception_v3() -> list[ConvLayer]:
    # torchvision Inception3 at 299x299, without AuxLogits.
    net = _Net()
    x = net.conv(_T(3, 299, 299), 32, 3, 2)  # Conv2d_1a_3x3 -> 149
    x = net.conv(x, 32, 3)  # Conv2d_2a_3x3 -> 147
    x = net.conv(x, 64, 3, 1, 1)  # Conv2d_2b_3x3
    x = net.pool(x, 3, 2)  # -> 73
    x = net.conv(x, 80, 1)  # Conv2d_3b_1x1
    x = net.conv(x, 192, 3)  # Conv2d_4a_3x3 -> 71
    x = net.pool(x, 3, 2)  # -> 35
    assert x == _T(192, 35, 35), x
    for pool_features in (32, 64, 64):  # Mixed_5b, 5c, 5d
        x = _inception_a(net, x, pool_features)
    assert x == _T(288, 35, 35), x
    x = _inception_b(net, x)  # Mixed_6a
    assert x == _T(768, 17, 17), x
    for c7 in (128, 160, 160, 192):  # Mixed_6b .. 6e
        x = _inception_c(net, x, c7)
    assert x == _T(768, 17, 17), x
    x = _inception_d(net, x)  # Mixed_7a
    assert x == _T(1280, 8, 8), x
    for _ in range(2):  # Mixed_7b, 7c
        x = _inception_e(net, x)
    assert x == _T(2048, 8, 8), x
    return net.layers


def _unet(in_channels: int = 3, classes: int = 2, size: int = 256, base: int = 64, depth: int = 4) -> list[ConvLayer]:
    net = _Net()

    def double_conv(x: _T, k: int) -> _T:
        return net.conv(net.conv(x, k, 3, 1, 1), k, 3, 1, 1)

    x = double_conv(_T(in_channels, size, size), base)
    skips = []
    for level in range(1, depth + 1):  # 2x2 max pool, then two 3x3 convs doubling the width
        skips.append(x)
        x = double_conv(net.pool(x, 2, 2), base * 2 ** level)
    assert x == _T(base * 2 ** depth, size >> depth, size >> depth), x
    for skip in reversed(skips):  # bilinear upsample, concat the skip, two 3x3 convs halving the width
        x = double_conv(net.concat(net.upsample(x), skip), skip.c)
    x = net.conv(x, classes, 1)
    assert x == _T(classes, size, size), x
    return net.layers


_BUILDERS = {
    "resnet50": lambda: _resnet((3, 4, 6, 3)),
    "resnet101": lambda: _resnet((3, 4, 23, 3)),
    "vgg16": _vgg16,
    "mobilenet_v2": _mobilenet_v2,
    "inception_v3": _inception_v3,
    "unet": _unet,
}
_ALIASES = {re.sub(r"[^a-z0-9]", "", m): m for m in MODELS}


def canonical_model(name: str) -> str:
    """The MODELS entry for ``name``: case-insensitive, '-', '_' and spaces ignored ('ResNet-50')."""
    key = re.sub(r"[^a-z0-9]", "", name.lower()) if isinstance(name, str) else None
    if key not in _ALIASES:
        raise ValueError(f"model={name!r}: unknown model (known: {', '.join(MODELS)})")
    return _ALIASES[key]


@functools.lru_cache(maxsize=None)
def _unique_layers(model: str) -> tuple[ConvLayer, ...]:
    counts: dict[ConvLayer, int] = {}
    for layer in _BUILDERS[model]():
        counts[layer] = counts.get(layer, 0) + layer.count
    return tuple(replace(layer, count=n) for layer, n in counts.items())


def model_layers(name: str) -> list[ConvLayer]:
    """The unique conv layers of a model in network order (first occurrence); count = occurrences."""
    return list(_unique_layers(canonical_model(name)))


def _choices(field: str, values, allowed, split=lambda s: s.split(",")) -> tuple[str, ...]:
    items = [v.strip() for v in split(values) if v.strip()] if isinstance(values, str) else values
    try:
        items = tuple(items)
    except TypeError:
        raise ValueError(f"{field}={values!r}: expected a sequence of {', '.join(allowed)}") from None
    if not items:
        raise ValueError(f"{field}={values!r}: expected at least one of {', '.join(allowed)}")
    out = []
    for v in items:
        norm = v.upper() if isinstance(v, str) else None
        if norm not in allowed:
            raise ValueError(f"{field}={values!r}: {v!r} is not one of {', '.join(allowed)}")
        out.append(norm)
    return tuple(out)


def model_problems(name: str, *, batch: int = 32, dtypes=("FP32",), layouts=("NCHW",),
                   directions="FBW", tf32: bool = False) -> list[ProblemDescription]:
    """One problem per unique (layer, dtype, layout, direction), in that nesting order, deduplicated by key.
    ``tf32``: the FP32 problems with TF32 math (``math="tf32"``, PyTorch's default for FP32 convolutions:
    ``torch.backends.cudnn.allow_tf32``); the 16-bit ones are unchanged."""
    layers = model_layers(name)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch={batch!r}: expected a positive integer")
    dtypes = _choices("dtypes", dtypes, SOLVABLE_DTYPES)
    layouts = _choices("layouts", layouts, LAYOUTS)
    # "FBW", "F,B" or ("F", "B")
    directions = _choices("directions", directions, DIRECTIONS, split=lambda s: list(s.replace(",", "")))
    seen: set[str] = set()
    out = []
    for layer in layers:
        for dtype in dtypes:
            for layout in layouts:
                for d in directions:
                    p = ProblemDescription.make(
                        d, n=batch, c=layer.c, k=layer.k, in_size=layer.in_size, filter_size=layer.filter_size,
                        pads=layer.pads, strides=layer.strides, groups=layer.groups, layout=layout, dtype=dtype,
                        math="tf32" if tf32 and dtype == "FP32" else "strict")
                    key = p.key()
                    if key not in seen:
                        seen.add(key)
                        out.append(p)
    return out
