"""The convolution problem: fields, validation, MIOpen's FindDB key and network_config.

A ``ProblemDescription`` is immutable and hashable. Its sizes are stored in the *forward view*
(x of shape N x C x spatial, w of shape K x C/G x filter, y derived), whatever the direction; the
MIOpen key swaps "in" and "out" for backward directions, exactly as MIOpen does:
F is (x, w, y), B is (dy, w, dx), W is (dy, dw, x).

Every key MIOpen writes parses and re-serializes byte for byte, including the few that describe no
runnable convolution (a filter larger than the padded input, 3D keys with 2D pads or a 2D layout
name). Those are kept as stated and are not ``solvable``; ``unsolvable_reason`` says why.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

DIRECTIONS = ("F", "B", "W")
DIRECTION_NAMES = {"F": "forward", "B": "backward-data", "W": "backward-weights"}

# MIOpen's GetDataTypeName, longest names first so that concatenations tokenize greedily.
KNOWN_DTYPES = ("INT8x4", "INT32", "INT64", "INT8", "FP32", "FP16", "FP64", "FP8", "BF16", "BF8")
SOLVABLE_DTYPES = ("FP32", "FP16", "BF16")
SUPPORTED_LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
DEFAULT_LAYOUT = {2: "NCHW", 3: "NCDHW"}
MATH_MODES = ("strict", "tf32")
# the activation a fused forward applies after the bias (miofind's own key suffix _relu / _gelu)
ACTIVATIONS = ("none", "relu", "gelu")

_LAYOUT_RE = re.compile(r"^[A-Za-z]+$")
_INT_RE = re.compile(r"^(0|[1-9][0-9]*)$")  # canonical decimal, as MIOpen writes it (so keys round-trip)
# Some MIOpen versions labelled every 3D problem NCHW: on a 3D key that label (and no other 2D name)
# stands for the default 3D layout, and is written back as stated.
LEGACY_3D_LABEL = "NCHW"
# Every size, pad, stride, dilation and count fits MIOpen's signed 64-bit integers.
MAX_INT = 2**63 - 1
# The longest key accepted: a 3D key with every field at MAX_INT and every suffix is about 600 characters.
MAX_KEY_CHARS = 1024
_FIELDS3 = {"layouts": ("layout", "w_layout", "out_layout"), "dtypes": ("dtype", "w_dtype", "y_dtype"),
            "cast_types": ("x_cast_type", "w_cast_type", "y_cast_type")}


_TOO_LARGE = "must be below 2^63 (MIOpen's sizes are 64-bit integers)"


def show(value, limit: int = 80) -> str:
    """``repr(value)`` for a one-line error message: long values shortened (with their length), and
    never an exception (integers past Python's 4300-digit str limit, hostile ``__repr__``)."""
    s = _repr(value, 2)
    if len(s) > limit:
        s = f"{s[:limit - 24]}...{s[-8:]} ({len(s)} characters)"
    return s


def _repr(value, depth: int) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<a {value.bit_length()}-bit integer>"
    if isinstance(value, (tuple, list)) and depth and type(value) in (tuple, list):
        items = [_repr(v, depth - 1) for v in value[:8]] + (["..."] if len(value) > 8 else [])
        if isinstance(value, list):
            return f"[{', '.join(items)}]"
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
    if type(value) is dict and depth:
        return "{" + ", ".join(f"{_repr(k, 0)}: {_repr(v, depth - 1)}" for k, v in list(value.items())[:20]) + "}"
    try:
        return repr(value)
    except Exception:  # an int past Python's str limit inside a container, a hostile __repr__
        return f"<{type(value).__name__}>"


def _field_error(field: str, value, why: str) -> ValueError:
    return ValueError(f"{field}={show(value)}: {why}")


def _index(field: str, value) -> int:
    """An exact integer (Python or NumPy int, not bool, not float) as a Python int."""
    if isinstance(value, bool) or not (isinstance(value, int) or hasattr(value, "__index__")):
        raise _field_error(field, value, "expected an integer")
    try:
        return operator.index(value)
    except TypeError:
        raise _field_error(field, value, "expected an integer") from None


def _is_int_like(value) -> bool:
    return not isinstance(value, bool) and (isinstance(value, int) or hasattr(value, "__index__")) \
        and not hasattr(value, "__len__")


def _as_tuple(field: str, value, n: int) -> tuple[int, ...]:
    if isinstance(value, bool):
        raise _field_error(field, value, "expected an integer or a sequence of integers")
    if _is_int_like(value):
        return (_index(field, value),) * n
    if isinstance(value, (str, bytes)):
        raise _field_error(field, value, "expected an integer or a sequence of integers")
    try:
        items = tuple(value)
    except TypeError:
        raise _field_error(field, value, "expected an integer or a sequence of integers") from None
    if len(items) != n:
        raise _field_error(field, value, f"expected {n} values, one per spatial dimension")
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int) and not (hasattr(v, "__index__")):
            raise _field_error(field, value, "expected integers")
        out.append(operator.index(v))
    return tuple(out)


def _layout_ok(layout: str, nd: int) -> bool:
    """A permutation of N, C and the spatial letters (D)HW, optionally vectorized ('NCHWc')."""
    base = layout[:-1] if layout.endswith("c") else layout
    return sorted(base) == sorted("NC" + "DHW"[3 - nd:])


def normalize_dtype(value) -> str:
    """Map 'FP32', 'float32', numpy/cupy/torch dtypes to MIOpen's type names."""
    try:
        s = value.__name__ if isinstance(value, type) else str(value)  # np.float32 (a type) -> float32
    except Exception:  # an int past Python's str limit, a hostile __str__
        raise _field_error("dtype", value, "not a data type") from None
    if not isinstance(s, str):
        raise _field_error("dtype", value, "not a data type")
    s = s.split(".")[-1]  # torch.float16 -> float16
    aliases = {
        "float32": "FP32", "float": "FP32", "fp32": "FP32", "f4": "FP32", "single": "FP32",
        "float16": "FP16", "half": "FP16", "fp16": "FP16", "f2": "FP16", "e": "FP16",
        "bfloat16": "BF16", "bf16": "BF16",
        "float64": "FP64", "double": "FP64", "fp64": "FP64",
        "int8": "INT8", "int32": "INT32", "int64": "INT64",
        "fp8": "FP8", "bf8": "BF8", "float8_e4m3fn": "FP8", "float8_e5m2": "BF8",
    }
    if s in KNOWN_DTYPES:
        return s
    if s.lower() in aliases:
        return aliases[s.lower()]
    if s.upper() in KNOWN_DTYPES:
        return s.upper()
    raise _field_error("dtype", value, f"unknown data type (known: {', '.join(KNOWN_DTYPES)})")


def split_dtypes(token: str) -> tuple[str, ...]:
    """Tokenize MIOpen's data-type field: one name, or three names concatenated."""
    out = []
    rest = token
    while rest:
        for name in KNOWN_DTYPES:
            if rest.startswith(name):
                out.append(name)
                rest = rest[len(name):]
                break
        else:
            raise _field_error("key data type", token, f"cannot split into type names ({', '.join(KNOWN_DTYPES)})")
    if len(out) not in (1, 3):
        raise _field_error("key data type", token, "expected one type name or three concatenated")
    return tuple(out)


def conv_out_size(size: int, filt: int, pad: int, stride: int, dil: int) -> int:
    return (size + 2 * pad - dil * (filt - 1) - 1) // stride + 1


def trans_out_size(size: int, filt: int, pad: int, stride: int, dil: int, out_pad: int) -> int:
    return (size - 1) * stride - 2 * pad + dil * (filt - 1) + 1 + out_pad


@dataclass(frozen=True)
class ProblemDescription:
    """One convolution problem for one direction.

    Sizes are in the forward view of the convolution as the user wrote it: ``c`` input channels,
    ``k`` output channels, ``in_size`` the spatial size of x (D, H, W for 3D), ``filter_size``,
    ``pads``, ``strides``, ``dilations`` per spatial dimension. 1D problems are given as H=1.
    ``layouts``, ``dtypes`` and ``cast_types`` are (x, w, y), whatever the direction (the key lists
    them in MIOpen's in-weights-out order, i.e. reversed for B and W). ``math`` is "strict" (true FP32) or "tf32" (TF32
    tensor-core math allowed for FP32 data). ``transposed`` selects conv-transpose, whose output
    size grows with the stride; ``output_padding`` then adds to it. ``bias`` (MIOpen's key field) and
    ``activation`` ("none", "relu" or "gelu": PyTorch's exact, erf-based GELU) make a fused forward
    problem: ``y = act(conv(x, w) + bias)`` with a bias of ``k`` elements in the data type, the sum
    and activation in FP32 before the output's rounding.
    """

    direction: str
    n: int
    c: int
    k: int
    in_size: tuple[int, ...]
    filter_size: tuple[int, ...]
    pads: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    groups: int = 1
    layouts: tuple[str, str, str] = ("NCHW", "NCHW", "NCHW")
    dtypes: tuple[str, str, str] = ("FP32", "FP32", "FP32")
    math: str = "strict"
    transposed: bool = False
    output_padding: tuple[int, ...] = (0, 0)
    bias: int = 0
    activation: str = "none"
    cast_types: tuple[str | None, str | None, str | None] = (None, None, None)
    # An output size stated by a MIOpen key that the formula does not give (MIOpen's "same" and
    # "valid" padding modes size the output as ceil(in / stride) and ceil((in - fil + 1) / stride)).
    # Output index o still reads input o*stride - pad + tap*dilation, zero outside the input.
    out_size_override: tuple[int, ...] | None = None
    # What a MIOpen key states in a form the fields above cannot hold, kept so that the key
    # round-trips byte for byte (None when the key writes the fields the ordinary way):
    # ``key_pads``: the two pads (PH, PW) some MIOpen versions wrote for a 3D problem; ``pads`` then
    # holds (0, PH, PW) and the depth pad is unknown. ``key_layouts``: the layout token(s) as written,
    # one (for all three tensors) or three (x, w, y); a 2D name such as NCHW on a 3D problem stands
    # for the default 3D layout in ``layouts`` (its memory layout is unknown), and an old MIOpen's
    # single non-default token (e.g. NHWC) for that layout on all three tensors.
    key_pads: tuple[int, ...] | None = None
    key_layouts: tuple[str, ...] | None = None

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def make(
        cls,
        direction: str = "F",
        *,
        n: int,
        c: int,
        k: int,
        in_size: Sequence[int],
        filter_size: Sequence[int] | int = 3,
        pads: Sequence[int] | int = 0,
        strides: Sequence[int] | int = 1,
        dilations: Sequence[int] | int = 1,
        groups: int = 1,
        layout: str | None = None,
        w_layout: str | None = None,
        out_layout: str | None = None,
        dtype="FP32",
        math: str = "strict",
        transposed: bool = False,
        output_padding: Sequence[int] | int = 0,
        bias: int = 0,
        activation: str = "none",
    ) -> "ProblemDescription":
        """Build and validate a problem from keywords; scalars broadcast over spatial dims."""
        try:
            if isinstance(in_size, (str, bytes)):
                raise TypeError
            in_size = tuple(in_size)
        except TypeError:
            raise _field_error("in_size", in_size, "expected a sequence of integers") from None
        in_size = _as_tuple("in_size", in_size, len(in_size))
        n, c, k, groups, bias = (_index(f, v) for f, v in (("n", n), ("c", c), ("k", k), ("groups", groups), ("bias", bias)))
        if len(in_size) == 1:  # 1D as H=1
            in_size = (1,) + in_size
            filter_size = (1,) + _as_tuple("filter_size", filter_size, 1)
            pads = (0,) + _as_tuple("pads", pads, 1)
            strides = (1,) + _as_tuple("strides", strides, 1)
            dilations = (1,) + _as_tuple("dilations", dilations, 1)
            output_padding = (0,) + _as_tuple("output_padding", output_padding, 1)
        nd = len(in_size)
        if nd not in (2, 3):
            raise _field_error("in_size", in_size, "expected 1, 2 or 3 spatial dimensions")
        layout = layout or DEFAULT_LAYOUT[nd]
        dt = normalize_dtype(dtype)
        if not isinstance(direction, str):
            raise _field_error("direction", direction, "expected F (forward), B (backward data) or W (backward weights)")
        return cls(
            direction=direction.upper(),
            n=n, c=c, k=k,
            in_size=in_size,
            filter_size=_as_tuple("filter_size", filter_size, nd),
            pads=_as_tuple("pads", pads, nd),
            strides=_as_tuple("strides", strides, nd),
            dilations=_as_tuple("dilations", dilations, nd),
            groups=groups,
            layouts=(layout, w_layout or layout, out_layout or layout),
            dtypes=(dt, dt, dt),
            math=math,
            transposed=bool(transposed) if isinstance(transposed, int) and transposed in (0, 1) else transposed,
            output_padding=_as_tuple("output_padding", output_padding, nd),
            bias=bias,
            activation=activation,
        )

    def __post_init__(self):
        # the default output_padding (0, 0) also means "none" for a 3D problem
        if isinstance(self.in_size, tuple) and len(self.in_size) == 3 and self.output_padding == (0, 0):
            object.__setattr__(self, "output_padding", (0, 0, 0))
        self._validate()

    def _validate(self):
        if not isinstance(self.direction, str) or self.direction not in DIRECTIONS:
            raise _field_error("direction", self.direction, "expected F (forward), B (backward data) or W (backward weights)")
        for name in ("n", "c", "k", "groups"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise _field_error(name, v, "expected an integer")
            if v < 1:
                raise _field_error(name, v, "must be at least 1")
            if v > MAX_INT:
                raise _field_error(name, v, _TOO_LARGE)
        if not isinstance(self.in_size, tuple):
            raise _field_error("in_size", self.in_size, "expected a tuple of 2 or 3 integers (1D as H=1)")
        nd = len(self.in_size)
        if nd not in (2, 3):
            raise _field_error("in_size", self.in_size, "expected 2 or 3 spatial dimensions (1D as H=1)")
        for name in ("filter_size", "pads", "strides", "dilations", "output_padding"):
            v = getattr(self, name)
            if not isinstance(v, tuple) or len(v) != nd:
                raise _field_error(name, v, f"expected {nd} values to match in_size={self.in_size}")
        for name, lo in (("in_size", 1), ("filter_size", 1), ("pads", 0), ("strides", 1), ("dilations", 1), ("output_padding", 0)):
            for v in getattr(self, name):
                if isinstance(v, bool) or not isinstance(v, int):
                    raise _field_error(name, getattr(self, name), "expected integers")
                if v < lo:
                    raise _field_error(name, getattr(self, name), f"every value must be at least {lo}")
                if v > MAX_INT:
                    raise _field_error(name, getattr(self, name), _TOO_LARGE)
        if self.c % self.groups:
            raise _field_error("c", self.c, f"input channels must be divisible by groups={self.groups}")
        if self.k % self.groups:
            raise _field_error("k", self.k, f"output channels must be divisible by groups={self.groups}")
        if isinstance(self.bias, bool) or not isinstance(self.bias, int) or self.bias not in (0, 1):
            raise _field_error("bias", self.bias, "expected the integer 0 or 1")
        if not isinstance(self.activation, str) or self.activation not in ACTIVATIONS:
            raise _field_error("activation", self.activation, f"expected one of {ACTIVATIONS}")
        if self.activation != "none" and (self.direction != "F" or self.transposed):
            raise _field_error("activation", self.activation,
                               "a fused activation applies only to a forward (F), non-transposed problem")
        if not isinstance(self.transposed, bool):
            raise _field_error("transposed", self.transposed, "expected True or False")
        for name, items in _FIELDS3.items():
            v = getattr(self, name)
            if not isinstance(v, tuple) or len(v) != 3:
                raise _field_error(name, v, f"expected a tuple of 3 values for ({', '.join(items)})")
        if self.math not in MATH_MODES:
            raise _field_error("math", self.math, f"expected one of {MATH_MODES}")
        for i, lay in enumerate(self.layouts):
            if not isinstance(lay, str) or not _LAYOUT_RE.fullmatch(lay):
                raise _field_error(_FIELDS3["layouts"][i], lay, "expected a layout name such as NCHW or NHWC")
            if not _layout_ok(lay, nd):
                raise _field_error(_FIELDS3["layouts"][i], lay,
                                   f"a {nd}D problem needs a layout of the letters {DEFAULT_LAYOUT[nd]} "
                                   f"such as {' or '.join(SUPPORTED_LAYOUTS[nd])}")
        for i, dt in enumerate(self.dtypes):
            if not isinstance(dt, str) or dt not in KNOWN_DTYPES:
                raise _field_error(_FIELDS3["dtypes"][i], dt, f"unknown data type (known: {', '.join(KNOWN_DTYPES)})")
        for i, ct in enumerate(self.cast_types):
            if ct is not None and (not isinstance(ct, str) or ct not in KNOWN_DTYPES):
                raise _field_error(_FIELDS3["cast_types"][i], ct,
                                   f"expected None or a data type name ({', '.join(KNOWN_DTYPES)})")
        if self.math == "tf32" and self.dtypes != ("FP32",) * 3:
            raise _field_error("math", self.math, "TF32 math applies only to FP32 data")
        eff = self.effective_filter
        if self.transposed:
            if self.out_size_override is not None:
                raise _field_error("out_size_override", self.out_size_override, "not for a transposed convolution")
            for i in range(nd):
                if self.output_padding[i] >= self.strides[i]:
                    raise _field_error("output_padding", self.output_padding,
                                       f"each value must be smaller than the stride {self.strides}")
            for i, o in enumerate(self.out_size):
                if o < 1:
                    raise _field_error("pads", self.pads, f"transposed output size {o} along dim {i} is not positive")
        else:
            if any(self.output_padding):
                raise _field_error("output_padding", self.output_padding, "only a transposed convolution has output padding")
            ov = self.out_size_override
            if ov is not None:
                if not isinstance(ov, tuple) or len(ov) != nd or any(
                        isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_INT for v in ov):
                    raise _field_error("out_size_override", ov, f"expected None or {nd} positive integers below 2^63")
                if ov == self._formula_out_size():
                    object.__setattr__(self, "out_size_override", None)
            if self.out_size_override is None:  # an output stated by a key is kept as stated (not solvable)
                for i in range(nd):
                    if eff[i] > self.in_size[i] + 2 * self.pads[i]:
                        raise _field_error(
                            "filter_size", self.filter_size,
                            f"dilated filter {eff[i]} is larger than the padded input "
                            f"{self.in_size[i]}+2*{self.pads[i]} along spatial dim {i}")
        if any(o > MAX_INT for o in self.out_size):
            raise _field_error("out_size", self.out_size, _TOO_LARGE)
        self._validate_key_form(nd)

    def _validate_key_form(self, nd: int) -> None:
        """Check key_pads / key_layouts against the fields they stand for; drop key_layouts when the
        key would write the same tokens anyway."""
        kp = self.key_pads
        if kp is not None:
            if self.transposed:
                raise _field_error("key_pads", kp, "not for a transposed convolution")
            if nd != 3 or not isinstance(kp, tuple) or len(kp) != 2 or any(
                    isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in kp):
                raise _field_error("key_pads", kp, "expected None or two non-negative integers (PH, PW) "
                                                   "stated by a key for a 3D problem")
            if self.pads != (0, *kp):
                raise _field_error("pads", self.pads, f"expected (0, {kp[0]}, {kp[1]}) to match key_pads={kp}")
        kl = self.key_layouts
        if kl is None:
            return
        if self.transposed:
            raise _field_error("key_layouts", kl, "not for a transposed convolution")
        if not isinstance(kl, tuple) or len(kl) not in (1, 3) or any(
                not isinstance(t, str) or not _LAYOUT_RE.fullmatch(t) for t in kl):
            raise _field_error("key_layouts", kl, "expected None or a tuple of 1 or 3 layout names")
        for t in kl:
            if not (_layout_ok(t, nd) or nd == 3 and t == LEGACY_3D_LABEL):
                raise _field_error("key_layouts", kl, f"{show(t)} is not a layout name of a {nd}D problem (a 3D key may state the legacy NCHW)")
        expect = tuple(t if _layout_ok(t, nd) else DEFAULT_LAYOUT[nd] for t in (kl * 3 if len(kl) == 1 else kl))
        if self.layouts != expect:
            raise _field_error("layouts", self.layouts, f"expected {expect} to match key_layouts={kl}")
        if self._layout_tokens(kl) == self._layout_tokens(self.layouts):
            object.__setattr__(self, "key_layouts", None)

    # -- derived -------------------------------------------------------------------------------

    @property
    def spatial_dims(self) -> int:
        return len(self.in_size)

    @property
    def effective_filter(self) -> tuple[int, ...]:
        return tuple(d * (f - 1) + 1 for f, d in zip(self.filter_size, self.dilations))

    @property
    def out_size(self) -> tuple[int, ...]:
        if self.out_size_override is not None:
            return self.out_size_override
        return self._formula_out_size()

    def _formula_out_size(self) -> tuple[int, ...]:
        if self.transposed:
            return tuple(trans_out_size(*a) for a in zip(self.in_size, self.filter_size, self.pads,
                                                          self.strides, self.dilations, self.output_padding))
        return tuple(conv_out_size(*a) for a in zip(self.in_size, self.filter_size, self.pads,
                                                    self.strides, self.dilations))

    @property
    def dtype(self) -> str:
        """The data type when x, w and y share one; else the x type."""
        return self.dtypes[0]

    @property
    def layout(self) -> str:
        return self.layouts[0]

    @property
    def solvable_dtype(self) -> bool:
        return len(set(self.dtypes)) == 1 and self.dtypes[0] in SOLVABLE_DTYPES and self.cast_types == (None, None, None)

    @property
    def unsolvable_reason(self) -> str | None:
        """Why no solver can run this problem as its key states it, or None when it is a runnable
        convolution. Data types are judged separately (``solvable_dtype``)."""
        nd = self.spatial_dims
        why = []
        if self.key_pads is not None:
            why.append(f"the key states 2D pads {'x'.join(map(str, self.key_pads))} for a 3D problem "
                       "(the depth pad is unknown)")
        if self.key_layouts is not None:
            odd = sorted({t for t in self.key_layouts if not _layout_ok(t, nd)})
            if odd:
                why.append(f"the key labels a {nd}D problem with the 2D layout {'/'.join(odd)} "
                           "(its memory layout is unknown)")
        if not self.transposed:
            eff = self.effective_filter
            for i in range(nd):
                if eff[i] > self.in_size[i] + 2 * self.pads[i]:
                    why.append(f"the dilated filter {eff[i]} is larger than the padded input "
                               f"{self.in_size[i]}+2*{self.pads[i]} along spatial dim {i} "
                               f"(the key states output size {self.out_size[i]})")
                    break
        return "; ".join(why) or None

    @property
    def solvable(self) -> bool:
        """False when the problem's key describes no runnable convolution (see ``unsolvable_reason``)."""
        return self.unsolvable_reason is None

    def with_direction(self, direction: str) -> "ProblemDescription":
        """The same convolution in another direction (a fused activation stays with F only)."""
        act = self.activation if direction == "F" else "none"
        return dataclasses.replace(self, direction=direction, activation=act)

    @property
    def fused(self) -> bool:
        """Whether the forward output has a fused epilogue (bias and/or activation): the invoker then
        takes the bias pointer as a sixth argument (see ``miofind.invokers``)."""
        return bool(self.bias) or self.activation != "none"

    def unfused(self) -> "ProblemDescription":
        """The plain convolution under the epilogue (bias 0, no activation)."""
        if not self.fused:
            return self
        return dataclasses.replace(self, bias=0, activation="none")

    def as_conv(self) -> "ProblemDescription":
        """The equivalent non-transposed problem (what solvers see).

        A transposed convolution's forward pass is the backward-data pass of the ordinary
        convolution whose x is the transposed output, and vice versa; weights gradients map to
        weights gradients with the two activations' roles swapped.
        """
        if not self.transposed:
            return self
        d = {"F": "B", "B": "F", "W": "W"}[self.direction]
        return ProblemDescription(
            direction=d, n=self.n, c=self.k, k=self.c, in_size=self.out_size,
            filter_size=self.filter_size, pads=self.pads, strides=self.strides, dilations=self.dilations,
            groups=self.groups, layouts=(self.layouts[2], self.layouts[1], self.layouts[0]),
            dtypes=(self.dtypes[2], self.dtypes[1], self.dtypes[0]), math=self.math, bias=self.bias,
            activation=self.activation,
            output_padding=(0,) * self.spatial_dims,
            cast_types=(self.cast_types[2], self.cast_types[1], self.cast_types[0]),
        )

    # shapes of the three tensors, forward view, in the memory order of their layouts
    def _shape(self, ch: int, spatial: tuple[int, ...], layout: str, lead: int | None = None) -> tuple[int, ...]:
        base = layout[:-1] if layout.endswith("c") else layout  # vectorized: logical order of the base
        dims = {"N": self.n if lead is None else lead, "C": ch, **dict(zip("DHW"[3 - len(spatial):], spatial))}
        return tuple(dims[ch_] for ch_ in base)

    @property
    def x_shape(self) -> tuple[int, ...]:
        return self._shape(self.c, self.in_size, self.layouts[0])

    @property
    def y_shape(self) -> tuple[int, ...]:
        return self._shape(self.k, self.out_size, self.layouts[2])

    @property
    def w_shape(self) -> tuple[int, ...]:
        """Weights: K x C/G x filter (NCHW); for a transposed problem C x K/G x filter, as PyTorch."""
        if self.transposed:
            lead, per = self.c, self.k // self.groups
        else:
            lead, per = self.k, self.c // self.groups
        return self._shape(per, self.filter_size, self.layouts[1], lead=lead)

    def io_shapes(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(first input, second input, output) shapes for this direction, as run_solution takes them.

        F: (x, w) -> y;  B: (dy, w) -> dx;  W: (dy, x) -> dw.
        """
        if self.direction == "F":
            return self.x_shape, self.w_shape, self.y_shape
        if self.direction == "B":
            return self.y_shape, self.w_shape, self.x_shape
        return self.y_shape, self.x_shape, self.w_shape

    def flops(self) -> int:
        """Multiply-adds x 2 of the direct algorithm (the same for F, B and W)."""
        per = 1
        for f in self.filter_size:
            per *= f
        out = 1
        for o in self.out_size:
            out *= o
        return 2 * self.n * self.k * out * (self.c // self.groups) * per

    # -- MIOpen key ------------------------------------------------------------------------------

    def _key_view(self, stated: bool = True):
        """(in channels, in spatial), (out channels, out spatial), layouts, dtypes, cast types in key
        order: (x, w, y) for F, (dy, w, dx) for B, (dy, dw, x) for W. With ``stated`` the layouts are
        those the key writes (``key_layouts``, where one name may stand for all three)."""
        if self.transposed:
            return self.as_conv()._key_view(stated)
        x = (self.c, self.in_size)
        y = (self.k, self.out_size)
        layouts = self.key_layouts if stated and self.key_layouts is not None else self.layouts
        if self.direction == "F":
            return x, y, layouts, self.dtypes, self.cast_types
        rev = lambda t: tuple(reversed(t))  # noqa: E731
        return y, x, rev(layouts), rev(self.dtypes), rev(self.cast_types)

    @staticmethod
    def _layout_tokens(layouts) -> tuple[str, ...]:
        """The layout token(s) a key writes: one name as given, or the default layout once, else three."""
        if len(layouts) == 1 or tuple(layouts) in (("NCHW",) * 3, ("NCDHW",) * 3):
            return (layouts[0],)
        return tuple(layouts)

    def _layout_token(self, sep: str, layouts) -> str:
        return sep.join(self._layout_tokens(layouts))

    def key(self) -> str:
        """MIOpen's FindDB key, e.g. ``64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F``.

        Our own attributes follow MIOpen's optional part: ``_trans`` for a transposed problem
        (written as its equivalent ordinary problem, as MIOpen stores it), ``_tf32``, and the fused
        activation ``_relu`` / ``_gelu``.
        """
        p = self.as_conv()
        (ci, isz), (co, osz), layouts, dtypes, casts = p._key_view()
        x = "x".join
        pads = p.pads if p.key_pads is None else p.key_pads
        parts = [str(ci), *map(str, isz), x(map(str, p.filter_size)), str(co), *map(str, osz), str(p.n),
                 x(map(str, pads)), x(map(str, p.strides)), x(map(str, p.dilations)), str(p.bias),
                 self._layout_token("-", layouts), _encode_dtypes(dtypes), p.direction]
        s = "-".join(parts)
        s += _optional_suffix(p.groups, casts)
        if self.transposed:
            s += "_trans"
        if self.math == "tf32":
            s += "_tf32"
        if self.activation != "none":
            s += "_" + self.activation
        return s

    def network_config(self) -> str:
        """MIOpen's x-joined invoker-cache key (with our own flags appended)."""
        p = self.as_conv()
        (ci, isz), (co, osz), layouts, dtypes, cast_types = p._key_view()
        parts = [str(ci), *map(str, isz), *map(str, p.filter_size), str(co), *map(str, osz), str(p.n),
                 self._layout_token("x", layouts), _encode_dtypes(dtypes)]
        casts = "".join(f"{t}{c}" for t, c in zip(("ci", "cw", "co"), cast_types) if c)
        if casts:
            parts.append(casts)
        pads = p.pads if p.key_pads is None else p.key_pads
        parts += [*map(str, pads), *map(str, p.strides), *map(str, p.dilations), str(p.groups), p.direction, "Default"]
        if self.transposed:
            parts.append("trans")
        if self.math == "tf32":
            parts.append("tf32")
        if self.bias:
            parts.append("bias")
        if self.activation != "none":
            parts.append(self.activation)
        return "x".join(parts)

    @classmethod
    def from_key(cls, key: str) -> "ProblemDescription":
        """Parse any MIOpen FindDB key (2D or 3D, one or three layouts, groups, casts) and ours."""
        return _parse_key(key)

    # -- other constructors ---------------------------------------------------------------------

    @classmethod
    def from_arrays(cls, x, w, *, stride=1, padding=0, dilation=1, groups=1, direction="F",
                    layout: str | None = None, math: str = "strict", transposed: bool = False,
                    output_padding=0) -> "ProblemDescription":
        """The problem that ``conv(x, w)`` poses, in the spirit of PyTorch's functional conv.

        x is (N, C, *spatial) for NCHW/NCDHW or (N, *spatial, C) for NHWC/NDHWC; w is
        (K, C/groups, *filter) or (K, *filter, C/groups) (for transposed: C, K/groups, ...).
        Scalars broadcast; the descriptor is cached, so equal calls return the same object.
        """
        xs, ws = _shape_of("x", x), _shape_of("w", w)
        for field, v in (("layout", layout), ("math", math), ("direction", direction)):
            if not (isinstance(v, str) or v is None and field == "layout"):  # the cache needs hashable values
                raise _field_error(field, v, "expected a string" + (" or None" if field == "layout" else ""))
        if not isinstance(transposed, (bool, int)) or transposed not in (0, 1):
            raise _field_error("transposed", transposed, "expected True or False")
        dt = normalize_dtype(getattr(x, "dtype", "FP32"))
        wdt = normalize_dtype(getattr(w, "dtype", "FP32"))
        if wdt != dt:
            raise _field_error("w.dtype", str(w.dtype), f"must match x.dtype={dt}")

        def hashable(field, v):
            if _is_int_like(v):
                return _index(field, v)
            if isinstance(v, (str, bytes)):
                raise _field_error(field, v, "expected an integer or a sequence of integers")
            try:
                return tuple(_index(field, e) for e in v)
            except TypeError:
                raise _field_error(field, v, "expected an integer or a sequence of integers") from None

        return _from_arrays_cached(xs, ws, dt, hashable("stride", stride), hashable("padding", padding),
                                   hashable("dilation", dilation), _index("groups", groups),
                                   direction.upper(), layout, math, bool(transposed),
                                   hashable("output_padding", output_padding))

    def __str__(self) -> str:
        return self.key()


def _shape_of(name: str, a) -> tuple[int, ...]:
    shape = getattr(a, "shape", None)
    if shape is None or isinstance(shape, (str, bytes)):
        raise _field_error(f"{name}.shape", shape, f"expected an array with a shape, got {type(a).__name__}")
    try:
        return tuple(_index(f"{name}.shape", v) for v in shape)
    except TypeError:
        raise _field_error(f"{name}.shape", shape, "expected a sequence of integers") from None


@functools.lru_cache(maxsize=4096)
def _from_arrays_cached(xs, ws, dt, stride, padding, dilation, groups, direction, layout, math, transposed, output_padding):
    if len(xs) not in (3, 4, 5):
        raise _field_error("x.shape", xs, "expected 3 (1D), 4 (2D) or 5 (3D) dimensions")
    if len(ws) != len(xs):
        raise _field_error("w.shape", ws, f"expected {len(xs)} dimensions like x.shape={show(xs)}")
    nd = len(xs) - 2
    if layout is None:
        layout = {1: "NCHW", 2: "NCHW", 3: "NCDHW"}[nd]
    cl = layout in ("NHWC", "NDHWC")
    if cl:
        n, c, spatial = xs[0], xs[-1], xs[1:-1]
        lead, per, filt = ws[0], ws[-1], ws[1:-1]
    else:
        n, c, spatial = xs[0], xs[1], xs[2:]
        lead, per, filt = ws[0], ws[1], ws[2:]
    if transposed:
        if lead != c:
            raise _field_error("w.shape", ws, f"a transposed convolution's weights lead with C={show(c)}")
        k = per * groups
    else:
        k = lead
        if per * groups != c:
            raise _field_error("w.shape", ws, f"weights carry {show(per)} channels per group but x has C={show(c)} and groups={show(groups)}")
    return ProblemDescription.make(direction, n=n, c=c, k=k, in_size=spatial, filter_size=filt, pads=padding,
                                   strides=stride, dilations=dilation, groups=groups, layout=layout, dtype=dt,
                                   math=math, transposed=transposed, output_padding=output_padding)


def _encode_dtypes(dtypes) -> str:
    if dtypes[0] == dtypes[1] == dtypes[2]:
        return dtypes[0]
    return "".join(dtypes)


def _optional_suffix(groups: int, casts) -> str:
    s = ""
    if groups != 1:
        s += f"_g{groups}"
    for tag, ct in zip(("ci", "cw", "co"), casts):
        if ct:
            s += f"_{tag}{ct}"
    return s


def _int(field: str, tok: str, key: str, part: str | None = None) -> int:
    """The canonical decimal ``part`` (default: all) of the key field ``field``=``tok``, below 2^63."""
    part = tok if part is None else part
    if not _INT_RE.fullmatch(part):
        of = "" if part is tok else f": {show(part)}"
        raise ValueError(f"key field {field}={show(tok)} is not an integer{of} (key {show(key)})")
    if len(part) > 19 or int(part) > MAX_INT:  # length first: Python refuses int() of 4300+ digits
        raise ValueError(f"key field {field}={show(tok)}: {_TOO_LARGE} (key {show(key)})")
    return int(part)


def _ints(field: str, tok: str, n: int, key: str) -> tuple[int, ...]:
    parts = tok.split("x")
    if len(parts) != n:
        raise ValueError(f"key field {field}={show(tok)} should have {n} 'x'-separated values (key {show(key)})")
    return tuple(_int(field, tok, key, p) for p in parts)


def _parse_key(key: str) -> ProblemDescription:
    if not isinstance(key, str) or not key:
        raise ValueError(f"key={show(key)}: expected a non-empty MIOpen FindDB key string")
    if len(key) > MAX_KEY_CHARS:
        raise ValueError(f"key={show(key)}: longer than {MAX_KEY_CHARS} characters, more than any MIOpen key")
    key = key.strip()
    head, *opts = key.split("_")
    toks = head.split("-")
    if len(toks) < 5:
        raise ValueError(f"key={show(key)}: too few '-'-separated fields ({len(toks)}) for a MIOpen key")
    # the filter field (YxX or ZxYxX) is the 4th field of a 2D key and the 5th of a 3D key
    if "x" in toks[3]:
        nd = 2
    elif "x" in toks[4]:
        nd = 3
    else:
        raise ValueError(f"key={show(key)}: no filter field (YxX as 4th field for 2D, ZxYxX as 5th for 3D); "
                         f"got {show(toks[3])} and {show(toks[4])}")
    nfix = 12 if nd == 2 else 14  # fields before the layout token(s)
    tail = toks[nfix:]
    if len(tail) == 3:
        layouts_k = (tail[0],) * 3
    elif len(tail) == 5:
        layouts_k = tuple(tail[0:3])
    else:
        raise ValueError(f"key={show(key)}: expected {nfix + 3} or {nfix + 5} '-'-separated fields for a {nd}D key, "
                         f"got {len(toks)}")
    dtype_tok, dir_tok = tail[-2], tail[-1]
    try:
        dtypes_k = split_dtypes(dtype_tok)
    except ValueError as e:
        raise ValueError(f"{e} (key {show(key)})") from None
    if len(dtypes_k) == 1:
        dtypes_k = dtypes_k * 3
    elif dtypes_k[0] == dtypes_k[1] == dtypes_k[2]:
        raise ValueError(f"key field data type={show(dtype_tok)}: MIOpen writes one type name when all three agree "
                         f"(key {show(key)})")
    if dir_tok not in DIRECTIONS:
        raise ValueError(f"key field direction={show(dir_tok)} must be F, B or W (key {show(key)})")
    i = 0

    def take(field):
        nonlocal i
        v = _int(field, toks[i], key)
        i += 1
        return v

    ci = take("in_channels")
    isz = tuple(take(f) for f in (("in_d",) if nd == 3 else ()) + ("in_h", "in_w"))
    filt = _ints("filter", toks[i], nd, key); i += 1
    co = take("out_channels")
    osz = tuple(take(f) for f in (("out_d",) if nd == 3 else ()) + ("out_h", "out_w"))
    n = take("batch")
    key_pads = None
    if nd == 3 and toks[i].count("x") == 1:  # some MIOpen versions wrote 2D pads (PH x PW) for 3D problems
        key_pads = _ints("pads", toks[i], 2, key)
        pads = (0, *key_pads)
    else:
        pads = _ints("pads", toks[i], nd, key)
    i += 1
    strides = _ints("strides", toks[i], nd, key); i += 1
    dils = _ints("dilations", toks[i], nd, key); i += 1
    bias = take("bias")
    for lay in layouts_k:
        if not _LAYOUT_RE.fullmatch(lay):
            raise ValueError(f"key field layout={show(lay)} is not a layout name (key {show(key)})")
    if layouts_k == (layouts_k[0],) * 3 and len(tail) == 5 and layouts_k[0] in ("NCHW", "NCDHW"):
        raise ValueError(f"key={show(key)}: MIOpen writes a default layout once, not three times")
    stated_layouts = tuple(tail[:-2])  # as written, in key order
    if nd == 3:  # some MIOpen versions labelled 3D problems NCHW: kept as stated, read as the default
        layouts_k = tuple(DEFAULT_LAYOUT[3] if t == LEGACY_3D_LABEL else t for t in layouts_k)

    groups = 1
    casts: dict[str, str] = {}
    transposed = False
    tf32 = False
    activation = "none"
    order = []
    for o in opts:
        if o.startswith("g") and _INT_RE.fullmatch(o[1:] or "x"):
            groups = _int("groups", o[1:], key); order.append(0)
        elif o[:2] in ("ci", "cw", "co") and o[2:] in KNOWN_DTYPES:
            casts[o[:2]] = o[2:]; order.append({"ci": 1, "cw": 2, "co": 3}[o[:2]])
        elif o == "trans":
            transposed = True; order.append(4)
        elif o == "tf32":
            tf32 = True; order.append(5)
        elif o in ACTIVATIONS[1:]:
            activation = o; order.append(6)
        else:
            raise ValueError(f"key suffix _{show(o)} is not one of _g<groups>, _ci/_cw/_co<type>, _trans, _tf32, "
                             f"_relu, _gelu (key {show(key)})")
    if order != sorted(set(order)) or len(order) != len(set(order)):
        raise ValueError(f"key={show(key)}: optional suffixes repeated or out of order (_g, _ci, _cw, _co, _trans, _tf32, "
                         "then _relu or _gelu)")
    if groups == 1 and 0 in order:
        raise ValueError(f"key={show(key)}: MIOpen omits _g1; groups=1 must not be written")

    # key order -> forward view
    casts_k = (casts.get("ci"), casts.get("cw"), casts.get("co"))
    if dir_tok == "F":
        c, in_size, k, out_k = ci, isz, co, osz
        layouts, dtypes, cast_types = layouts_k, dtypes_k, casts_k
    else:  # the key's "in" is dy; stored in the forward view (x, w, y)
        c, in_size, k, out_k = co, osz, ci, isz
        rev = lambda t: tuple(reversed(t))  # noqa: E731
        layouts, dtypes, cast_types = rev(layouts_k), rev(dtypes_k), rev(casts_k)
        stated_layouts = rev(stated_layouts)
    try:
        # an output size the formula does not give is kept as stated (MIOpen's same/valid modes, and
        # its output clamped to 1 where the filter is larger than the padded input); so are 2D pads
        # and layout names of 3D keys; ProblemDescription drops key_layouts when they are canonical
        p = ProblemDescription(direction=dir_tok, n=n, c=c, k=k, in_size=in_size, filter_size=filt, pads=pads,
                               strides=strides, dilations=dils, groups=groups, layouts=layouts, dtypes=dtypes,
                               math="tf32" if tf32 else "strict", bias=bias, activation=activation,
                               output_padding=(0,) * nd,
                               cast_types=cast_types, out_size_override=tuple(out_k), key_pads=key_pads,
                               key_layouts=stated_layouts)
    except ValueError as e:
        raise ValueError(f"key={show(key)}: {e}") from None
    if transposed:
        p = _transpose_back(p, key)
    return p


def _transpose_back(p: ProblemDescription, key: str) -> ProblemDescription:
    """Inverse of ProblemDescription.as_conv for a key carrying ``_trans``."""
    if p.key_pads is not None or p.key_layouts is not None or not p.solvable:
        raise ValueError(f"key={show(key)}: a _trans key describes a runnable convolution in the modern key form "
                         f"({p.unsolvable_reason or 'legacy single layout token'})")
    d = {"F": "B", "B": "F", "W": "W"}[p.direction]
    nd = p.spatial_dims
    in_t = p.out_size          # the transposed input is the ordinary problem's dy
    natural = tuple(trans_out_size(in_t[i], p.filter_size[i], p.pads[i], p.strides[i], p.dilations[i], 0)
                    for i in range(nd))
    op = tuple(p.in_size[i] - natural[i] for i in range(nd))
    if any(v < 0 for v in op):
        raise ValueError(f"key={show(key)}: not a valid transposed problem (negative output padding {op})")
    try:
        return ProblemDescription(
            direction=d, n=p.n, c=p.k, k=p.c, in_size=in_t, filter_size=p.filter_size, pads=p.pads,
            strides=p.strides, dilations=p.dilations, groups=p.groups,
            layouts=(p.layouts[2], p.layouts[1], p.layouts[0]), dtypes=(p.dtypes[2], p.dtypes[1], p.dtypes[0]),
            math=p.math, transposed=True, output_padding=op, bias=p.bias,
            cast_types=(p.cast_types[2], p.cast_types[1], p.cast_types[0]))
    except ValueError as e:
        raise ValueError(f"key={show(key)}: {e}") from None


def iter_directions(mask: int) -> Iterable[str]:
    """MIOpenDriver's -F bitmask: 0 all, 1 F, 2 B, 4 W, sums allowed."""
    if mask == 0:
        mask = 7
    for bit, d in ((1, "F"), (2, "B"), (4, "W")):
        if mask & bit:
            yield d
