"""Hypothesis strategies for valid ``ProblemDescription``s over the whole field space.

2D and 3D, all three directions, one or three layouts (mixed, vectorized and CHWN included), every
MIOpen data type (uniform, INT8INT8INT32, INT8x4 and arbitrary triples), cast types, groups, bias,
dilation, stride, padding, transposed problems with output padding, and TF32 math.
"""

from __future__ import annotations

from hypothesis import strategies as st

from miofind.problem import KNOWN_DTYPES, ProblemDescription, conv_out_size, trans_out_size

DTYPES = KNOWN_DTYPES
CAST_DTYPES = ("FP8", "BF8", "FP16", "BF16", "FP32")

# every layout name the key can carry, per spatial dimensionality
LAYOUTS = {
    2: ("NCHW", "NHWC", "CHWN", "NCHWc", "CHWNc"),
    3: ("NCDHW", "NDHWC"),
}
DEFAULT = {2: "NCHW", 3: "NCDHW"}
CHANNELS_LAST = {2: "NHWC", 3: "NDHWC"}

directions = st.sampled_from(("F", "B", "W"))


@st.composite
def layout_triples(draw, nd: int):
    kind = draw(st.sampled_from(("default", "channels_last", "uniform", "mixed")))
    if kind == "default":
        return (DEFAULT[nd],) * 3
    if kind == "channels_last":
        return (CHANNELS_LAST[nd],) * 3
    if kind == "uniform":
        return (draw(st.sampled_from(LAYOUTS[nd])),) * 3
    return tuple(draw(st.sampled_from(LAYOUTS[nd])) for _ in range(3))


@st.composite
def dtype_triples(draw):
    kind = draw(st.sampled_from(("uniform", "uniform", "int8", "int8x4", "mixed")))
    if kind == "uniform":
        return (draw(st.sampled_from(DTYPES)),) * 3
    if kind == "int8":
        return ("INT8", "INT8", "INT32")
    if kind == "int8x4":
        return ("INT8x4", "INT8x4", "INT32")
    return tuple(draw(st.sampled_from(DTYPES)) for _ in range(3))


cast_triples = st.one_of(
    st.just((None, None, None)),
    st.tuples(*(st.one_of(st.none(), st.sampled_from(CAST_DTYPES)) for _ in range(3))),
)


@st.composite
def problems(draw, nd: int | None = None, direction: str | None = None, transposed: bool | None = None,
             dtypes=None, layouts=None, casts=True, max_size: int = 40):
    """A valid ProblemDescription; arguments pin parts of the field space."""
    nd = nd if nd is not None else draw(st.sampled_from((2, 3)))
    direction = direction or draw(directions)
    transposed = draw(st.booleans()) if transposed is None else transposed
    groups = draw(st.sampled_from((1, 1, 1, 2, 3, 4, 32)))
    c = groups * draw(st.integers(1, 4))
    k = groups * draw(st.integers(1, 4))
    n = draw(st.integers(1, 64))

    filt, pads, strides, dils, in_size, out_pad = [], [], [], [], [], []
    for _ in range(nd):
        f = draw(st.integers(1, 7))
        d = draw(st.sampled_from((1, 1, 1, 2, 3)))
        s = draw(st.sampled_from((1, 1, 2, 3)))
        p = draw(st.integers(0, 3))
        eff = d * (f - 1) + 1
        if transposed:
            i = draw(st.integers(1, max_size))
            op = draw(st.integers(0, s - 1))
            # keep the transposed output positive: (i-1)*s - 2p + eff + op >= 1
            p = min(p, ((i - 1) * s + eff + op - 1) // 2)
            assert trans_out_size(i, f, p, s, d, op) >= 1
        else:
            op = 0
            i = max(1, eff - 2 * p) + draw(st.integers(0, max_size))
            assert conv_out_size(i, f, p, s, d) >= 1
        filt.append(f), pads.append(p), strides.append(s), dils.append(d), in_size.append(i), out_pad.append(op)

    lay = layouts if layouts is not None else draw(layout_triples(nd))
    dts = dtypes if dtypes is not None else draw(dtype_triples())
    cts = draw(cast_triples) if casts else (None, None, None)
    math = draw(st.sampled_from(("strict", "tf32"))) if dts == ("FP32",) * 3 else "strict"
    return ProblemDescription(
        direction=direction, n=n, c=c, k=k, in_size=tuple(in_size), filter_size=tuple(filt), pads=tuple(pads),
        strides=tuple(strides), dilations=tuple(dils), groups=groups, layouts=tuple(lay), dtypes=tuple(dts),
        math=math, transposed=transposed, output_padding=tuple(out_pad), bias=draw(st.sampled_from((0, 1))),
        cast_types=tuple(cts),
    )


keys = problems().map(lambda p: p.key())


# -- MIOpenDriver command lines -----------------------------------------------------------------

DRIVER_COMMANDS = {
    ("FP32",) * 3: "conv", ("FP16",) * 3: "convfp16", ("BF16",) * 3: "convbfp16",
    ("INT8", "INT8", "INT32"): "convint8", ("FP8",) * 3: "convfp8", ("BF8",) * 3: "convbfp8",
    ("FP64",) * 3: "convfp64",
}
DRIVER_LAYOUTS = {2: ("NCHW", "NHWC", "CHWN"), 3: ("NCDHW", "NDHWC")}


@st.composite
def driver_problems(draw):
    """Problems that an MIOpenDriver command line can express (no vectorized layouts, no mixed types)."""
    nd = draw(st.sampled_from((2, 3)))
    dts = draw(st.sampled_from(sorted(DRIVER_COMMANDS)))
    lay = tuple(draw(st.sampled_from(DRIVER_LAYOUTS[nd])) for _ in range(3))
    return draw(problems(nd=nd, dtypes=dts, layouts=lay))


def driver_argv(p: ProblemDescription, long: bool = True) -> list[str]:
    """An MIOpenDriver argv that poses ``p`` (direction via -F)."""
    nd = p.spatial_dims
    dims = ("d", "h", "w")[3 - nd:]
    args = ["MIOpenDriver", DRIVER_COMMANDS[p.dtypes], "--spatial_dim", str(nd),
            "--forw", str({"F": 1, "B": 2, "W": 4}[p.direction]),
            "--batchsize", str(p.n), "--in_channels", str(p.c), "--out_channels", str(p.k),
            "--group_count", str(p.groups), "--bias", str(p.bias),
            "--in_layout", p.layouts[0], "--fil_layout", p.layouts[1], "--out_layout", p.layouts[2],
            "--mode", "trans" if p.transposed else "conv"]
    for i, d in enumerate(dims):
        args += [f"--in_{d}", str(p.in_size[i]), f"--fil_{d}", str(p.filter_size[i]), f"--pad_{d}", str(p.pads[i]),
                 f"--conv_stride_{d}", str(p.strides[i]), f"--dilation_{d}", str(p.dilations[i]),
                 f"--trans_output_pad_{d}", str(p.output_padding[i])]
    for flag, ct in zip(("in_cast_type", "wei_cast_type", "out_cast_type"), p.cast_types):
        if ct:
            args += [f"--{flag}", ct.lower()]
    if p.math == "tf32":
        args += ["--tf32", "1"]
    return args
