"""MIOpenDriver's convolution command line: ``conv -n 32 -c 64 ... -F 1`` into problems.

Flags and defaults follow MIOpenDriver's ``conv_driver.hpp`` (short ``-x VALUE`` and long
``--name VALUE`` or ``--name=VALUE``). Flags that only steer the driver itself (iterations, timing,
verification, solution choice, file names) are parsed and kept in ``DriverOptions``.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Sequence

from .problem import ACTIVATIONS, MAX_INT, ProblemDescription, iter_directions, show

# command word -> (x/in dtype, w dtype, y/out dtype)
COMMANDS = {
    "conv": ("FP32",) * 3,
    "convfp16": ("FP16",) * 3,
    "convbfp16": ("BF16",) * 3,
    "convint8": ("INT8", "INT8", "INT32"),
    "convfp8": ("FP8",) * 3,
    "convbfp8": ("BF8",) * 3,
    "convfp64": ("FP64",) * 3,
}

# long name -> (short flag, default, kind)
FLAGS: dict[str, tuple[str, str, str]] = {
    "in_layout": ("I", "", "str"),
    "out_layout": ("O", "", "str"),
    "fil_layout": ("f", "", "str"),
    "spatial_dim": ("_", "2", "int"),
    "forw": ("F", "0", "int"),
    "batchsize": ("n", "100", "int"),
    "in_channels": ("c", "3", "int"),
    "in_d": ("!", "32", "int"),
    "in_h": ("H", "32", "int"),
    "in_w": ("W", "32", "int"),
    "out_channels": ("k", "32", "int"),
    "fil_d": ("@", "3", "int"),
    "fil_h": ("y", "3", "int"),
    "fil_w": ("x", "3", "int"),
    "conv_stride_d": ("#", "1", "int"),
    "conv_stride_h": ("u", "1", "int"),
    "conv_stride_w": ("v", "1", "int"),
    "pad_d": ("$", "0", "int"),
    "pad_h": ("p", "0", "int"),
    "pad_w": ("q", "0", "int"),
    "pad_val": ("r", "0", "int"),
    "trans_output_pad_d": ("%", "0", "int"),
    "trans_output_pad_h": ("Y", "0", "int"),
    "trans_output_pad_w": ("X", "0", "int"),
    "iter": ("i", "10", "int"),
    "verify": ("V", "1", "int"),
    "verification_cache": ("C", "", "str"),
    "time": ("t", "0", "int"),
    "wall": ("w", "0", "int"),
    "search": ("s", "0", "int"),
    "printconv": ("P", "1", "int"),
    "dump_output": ("o", "0", "int"),
    "in_data": ("d", "", "str"),
    "weights": ("e", "", "str"),
    "bias": ("b", "0", "int"),
    "mode": ("m", "conv", "str"),
    "pad_mode": ("z", "default", "str"),
    "tensor_vect": ("Z", "0", "int"),
    "vector_length": ("L", "1", "int"),
    "dilation_d": ("^", "1", "int"),
    "dilation_h": ("l", "1", "int"),
    "dilation_w": ("j", "1", "int"),
    "in_bias": ("a", "", "str"),
    "group_count": ("g", "1", "int"),
    "dout_data": ("D", "", "str"),
    "solution": ("S", "-1", "str"),
    "gpualloc": ("G", "0", "int"),
    "in_cast_type": ("U", "-1", "str"),
    "out_cast_type": ("T", "-1", "str"),
    "wei_cast_type": ("R", "-1", "str"),
    # miofind's own: allow TF32 tensor-core math for FP32 data (MIOpenDriver has no such flag)
    "tf32": ("", "0", "int"),
    # miofind's own: a fused forward activation after the bias (none, relu, gelu); F problems only
    "activation": ("", "none", "str"),
}
SHORT = {v[0]: k for k, v in FLAGS.items() if v[0]}

# MIOpenDriver's ValidateLayoutInputParameters accepts these; each must also fit the spatial dims.
DRIVER_LAYOUTS = {2: ("NCHW", "NHWC", "CHWN"), 3: ("NCDHW", "NDHWC")}
_DRIVER_INT_RE = re.compile(r"^[+-]?[0-9]+$")
MAX_LINE_CHARS = 16384  # a driver line (or argv, joined) of more characters is refused

_CAST_NAMES = {"fp8": "FP8", "bf8": "BF8", "fp16": "FP16", "fp32": "FP32", "bf16": "BF16", "int8": "INT8",
               "int32": "INT32", "fp64": "FP64"}


@dataclass
class DriverOptions:
    """The parsed command line: the command word, every flag's value, and the flags given."""

    command: str
    values: dict[str, object]
    given: set[str] = field(default_factory=set)

    def __getitem__(self, name):
        return self.values[name]


def parse_driver_args(argv: Sequence[str] | str) -> DriverOptions:
    """Parse MIOpenDriver's argv (with or without a leading 'MIOpenDriver' word)."""
    if isinstance(argv, str):
        if len(argv) > MAX_LINE_CHARS:  # shlex reads a character at a time: megabytes would take seconds
            raise ValueError(f"driver args {show(argv)}: longer than {MAX_LINE_CHARS} characters, more than any "
                             "MIOpenDriver line")
        try:
            argv = shlex.split(argv)
        except ValueError as e:  # "No closing quotation", "No escaped character"
            raise ValueError(f"driver args {show(argv)}: {str(e)[0].lower()}{str(e)[1:]} "
                             "(quote values with matching ' or \")") from None
    elif isinstance(argv, bytes) or not isinstance(argv, Sequence):
        raise ValueError(f"driver args={show(argv)}: expected a command line string or a list of strings")
    args = list(argv)
    for i, a in enumerate(args):
        if not isinstance(a, str):
            raise ValueError(f"driver args: item {i}={show(a)} is not a string")
        if "\0" in a:
            raise ValueError(f"driver args: item {i}={show(a)} contains a NUL character")
    if sum(len(a) + 1 for a in args) > MAX_LINE_CHARS:
        raise ValueError(f"driver args {show(args)}: longer than {MAX_LINE_CHARS} characters, more than any "
                         "MIOpenDriver line")
    if args and os.path.basename(args[0]).lower() in ("miopendriver", "miopendriver.exe"):
        args = args[1:]
    if not args:
        raise ValueError(f"driver args: expected a command word ({', '.join(COMMANDS)}), got nothing")
    command = args[0]
    if command not in COMMANDS:
        raise ValueError(f"driver command={show(command)}: expected one of {', '.join(COMMANDS)}")
    values: dict[str, object] = {k: v[1] for k, v in FLAGS.items()}
    given: set[str] = set()
    i = 1
    while i < len(args):
        tok = args[i]
        if tok.startswith("--"):
            name, eq, val = tok[2:].partition("=")
            if name not in FLAGS:
                raise ValueError(f"driver flag --{_printable(name)}: unknown (known: {', '.join(sorted(FLAGS))})")
        elif tok.startswith("-") and len(tok) >= 2 and not _is_number(tok):
            short, val = tok[1], tok[2:]
            eq = "=" if val else ""
            if short not in SHORT:
                raise ValueError(f"driver flag -{_printable(short)}: unknown")
            name = SHORT[short]
        else:
            raise ValueError(f"driver args: unexpected value {show(tok)} at position {i} (flags take -x VALUE or --name VALUE)")
        if not eq:
            if i + 1 >= len(args):
                raise ValueError(f"driver flag --{name}: missing its value")
            val = args[i + 1]
            i += 2
        else:
            i += 1
        kind = FLAGS[name][2]
        if kind == "int":
            values[name] = _driver_int(name, val)
        else:
            values[name] = val
        given.add(name)
    for name, (_, default, kind) in FLAGS.items():
        if kind == "int" and name not in given:
            values[name] = int(default)
    return DriverOptions(command, values, given)


def _printable(name: str) -> str:
    """A flag name for a message: as typed when printable and short, else shortened like ``show``."""
    return name if name.isprintable() and len(name) <= 40 else show(name)


def _driver_int(name: str, val: str) -> int:
    """A flag's integer value, as MIOpenDriver reads it (surrounding spaces, a sign), below 2^63."""
    v = val.strip()
    if not _DRIVER_INT_RE.fullmatch(v):
        raise ValueError(f"driver flag --{name}={show(val)}: expected an integer")
    digits = v.lstrip("+-").lstrip("0")
    if len(digits) > 19 or int(v) > MAX_INT or int(v) < -MAX_INT:  # length first: Python refuses int() of 4300+ digits
        raise ValueError(f"driver flag --{name}={show(val)}: must be below 2^63 in magnitude")
    return int(v)


def _is_number(tok: str) -> bool:
    return _DRIVER_INT_RE.fullmatch(tok) is not None


def _cast(name: str, value: str) -> str | None:
    if value in ("", "-1"):
        return None
    v = _CAST_NAMES.get(str(value).lower())
    if v is None:
        raise ValueError(f"driver flag --{name}={show(value)}: expected one of {', '.join(_CAST_NAMES)}")
    return v


def problems_from_options(opts: DriverOptions) -> list[ProblemDescription]:
    v = opts.values
    nd = v["spatial_dim"]
    if nd not in (2, 3):
        raise ValueError(f"driver flag --spatial_dim={nd}: expected 2 or 3")
    mode = str(v["mode"]).lower()
    if mode not in ("conv", "trans"):
        raise ValueError(f"driver flag --mode={show(v['mode'])}: expected conv or trans")
    pad_mode = str(v["pad_mode"]).lower()
    if pad_mode not in ("default", "same", "valid"):
        raise ValueError(f"driver flag --pad_mode={show(v['pad_mode'])}: expected default, same or valid")
    forw = v["forw"]
    if not isinstance(forw, int) or forw < 0 or forw > 7:
        raise ValueError(f"driver flag --forw={forw!r}: expected a bitmask 0..7 (0 all, 1 fwd, 2 bwd-data, 4 bwd-weights)")
    for name in ("batchsize", "in_channels", "out_channels"):
        if v[name] < 1:
            raise ValueError(f"driver flag --{name}={v[name]}: must be at least 1")
    # only the dims in use are checked: 2D lines from MIOpen's perf-model files carry
    # --conv_stride_d 0 --dilation_d 0 --pad_d 0, which MIOpenDriver ignores for spatial_dim 2
    dims = ("d", "h", "w") if nd == 3 else ("h", "w")
    in_size = [v[f"in_{d}"] for d in dims]
    filt = [v[f"fil_{d}"] for d in dims]
    pads = [v[f"pad_{d}"] for d in dims]
    strides = [v[f"conv_stride_{d}"] for d in dims]
    dils = [v[f"dilation_{d}"] for d in dims]
    out_pad = [v[f"trans_output_pad_{d}"] for d in dims]
    for name, vals in (("in", in_size), ("fil", filt), ("conv_stride", strides), ("dilation", dils)):
        for d, x in zip(dims, vals):
            if x < 1:
                raise ValueError(f"driver flag --{name}_{d}={x}: must be at least 1")
    for d, x in zip(dims, pads):
        if x < 0:
            raise ValueError(f"driver flag --pad_{d}={x}: must not be negative")
    if mode == "trans":
        for d, x, s in zip(dims, out_pad, strides):
            if x < 0 or x >= s:
                raise ValueError(f"driver flag --trans_output_pad_{d}={x}: must be at least 0 and smaller than "
                                 f"--conv_stride_{d}={s}")
    # MIOpenDriver adjusts the pads for pad_mode only in conv mode with unit dilation or 1x1 filters
    if mode == "conv" and (all(x == 1 for x in dils) or all(x == 1 for x in filt)):
        if pad_mode == "same":
            pads = [max(f - (s if i % s == 0 else i % s), 0) // 2 for i, f, s in zip(in_size, filt, strides)]
        elif pad_mode == "valid":
            pads = [0] * nd
    groups = v["group_count"]
    if groups < 1:
        raise ValueError(f"driver flag --group_count={groups}: must be at least 1")
    if v["bias"] not in (0, 1):
        raise ValueError(f"driver flag --bias={v['bias']}: expected 0 or 1")
    c, k = v["in_channels"], v["out_channels"]
    if groups > 1 and (c % groups or k % groups or groups > c or groups > k):
        raise ValueError(f"driver flag --group_count={groups}: must divide in_channels={c} and out_channels={k}")
    dt = COMMANDS[opts.command]
    default = "NCDHW" if nd == 3 else "NCHW"
    in_l = v["in_layout"] or default
    out_l = v["out_layout"] or default
    fil_l = v["fil_layout"] or default
    for name, lay in (("in_layout", in_l), ("fil_layout", fil_l), ("out_layout", out_l)):
        if lay not in DRIVER_LAYOUTS[nd]:
            raise ValueError(f"driver flag --{name}={show(lay)}: expected one of {', '.join(DRIVER_LAYOUTS[nd])} "
                             f"for --spatial_dim {nd}")
    casts = (_cast("in_cast_type", v["in_cast_type"]), _cast("wei_cast_type", v["wei_cast_type"]),
             _cast("out_cast_type", v["out_cast_type"]))
    bias = v["bias"]
    act = v["activation"]
    if act not in ACTIVATIONS:
        raise ValueError(f"driver flag --activation={show(act)}: expected one of {', '.join(ACTIVATIONS)}")
    if act != "none" and mode == "trans":
        raise ValueError(f"driver flag --activation={act}: a fused activation needs --mode conv (forward only)")
    problems = []
    for d in iter_directions(forw):
        try:
            problems.append(ProblemDescription(
                direction=d, n=v["batchsize"], c=c, k=k, in_size=tuple(in_size), filter_size=tuple(filt),
                pads=tuple(pads), strides=tuple(strides), dilations=tuple(dils), groups=groups,
                layouts=(in_l, fil_l, out_l), dtypes=dt, math="tf32" if v["tf32"] else "strict",
                transposed=(mode == "trans"), output_padding=tuple(out_pad) if mode == "trans" else (0,) * nd,
                bias=bias, activation=act if d == "F" else "none", cast_types=casts))
        except ValueError as e:
            raise ValueError(f"driver args: {e}") from None
    return problems


def problems_from_driver_args(argv: Sequence[str] | str) -> list[ProblemDescription]:
    return problems_from_options(parse_driver_args(argv))
