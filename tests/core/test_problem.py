"""ProblemDescription: validation, make(), from_arrays(), shapes, io_shapes(), as_conv()."""

from __future__ import annotations

import dataclasses

import types

import numpy as np
import pytest
from hypothesis import given, settings

from miofind.problem import ProblemDescription as P
from miofind.problem import conv_out_size, normalize_dtype, trans_out_size

from strategies import problems

BASE = dict(direction="F", n=2, c=4, k=8, in_size=(8, 8), filter_size=(3, 3), pads=(1, 1), strides=(1, 1),
            dilations=(1, 1))


def base(**kw):
    return P(**{**BASE, **kw})


# -- validation: every invalid field raises ValueError naming the field and value ------------------

@pytest.mark.parametrize("kw,match", [
    (dict(direction="X"), r"direction='X'"),
    (dict(direction="f"), r"direction='f'"),
    (dict(direction="FB"), r"direction='FB'"),
    (dict(direction=1), r"direction=1"),
    (dict(n=0), r"n=0: must be at least 1"),
    (dict(n=-1), r"n=-1"),
    (dict(c=0), r"c=0"),
    (dict(k=-8), r"k=-8"),
    (dict(groups=0), r"groups=0"),
    (dict(n=2.0), r"n=2.0: expected an integer"),
    (dict(n="2"), r"n='2': expected an integer"),
    (dict(n=True), r"n=True: expected an integer"),
    (dict(c=True, k=True), r"c=True"),
    (dict(groups=True), r"groups=True"),
    (dict(bias=True), r"bias=True"),
    (dict(bias=2), r"bias=2"),
    (dict(bias=-1), r"bias=-1"),
    (dict(bias=1.0), r"bias=1.0"),
    (dict(transposed=1), r"transposed=1"),
    (dict(in_size=(8,)), r"in_size=\(8,\)"),
    (dict(in_size=(8, 8, 8, 8)), r"in_size=\(8, 8, 8, 8\)"),
    (dict(in_size=[8, 8]), r"in_size=\[8, 8\]"),
    (dict(in_size=8), r"in_size=8"),
    (dict(in_size=(0, 8)), r"in_size=\(0, 8\): every value must be at least 1"),
    (dict(in_size=(-3, 8)), r"in_size=\(-3, 8\)"),
    (dict(in_size=(8.0, 8)), r"in_size=\(8.0, 8\): expected integers"),
    (dict(in_size=(True, 8)), r"in_size=\(True, 8\): expected integers"),
    (dict(filter_size=(3,)), r"filter_size=\(3,\): expected 2 values"),
    (dict(filter_size=[3, 3]), r"filter_size=\[3, 3\]"),
    (dict(filter_size=(0, 3)), r"filter_size=\(0, 3\)"),
    (dict(pads=(-1, 0)), r"pads=\(-1, 0\): every value must be at least 0"),
    (dict(strides=(0, 1)), r"strides=\(0, 1\): every value must be at least 1"),
    (dict(strides=(1, -2)), r"strides=\(1, -2\)"),
    (dict(dilations=(1, 0)), r"dilations=\(1, 0\)"),
    (dict(output_padding=(1, 0)), r"output_padding=\(1, 0\): only a transposed convolution"),
    (dict(output_padding=(0, 0, 0)), r"output_padding=\(0, 0, 0\): expected 2 values"),
    (dict(c=6, groups=4, k=8), r"c=6: input channels must be divisible by groups=4"),
    (dict(c=8, groups=4, k=6), r"k=6: output channels must be divisible by groups=4"),
    (dict(filter_size=(11, 3)), r"filter_size=\(11, 3\): dilated filter 11 is larger than the padded input 8\+2\*1"),
    (dict(dilations=(1, 5)), r"filter_size=\(3, 3\): dilated filter 11 is larger.*spatial dim 1"),
    (dict(layouts=("NCDHW",) * 3), r"layout='NCDHW': a 2D problem"),
    (dict(layouts=("NCHW", "NCDHW", "NCHW")), r"w_layout='NCDHW'"),
    (dict(layouts=("NCHW", "NCHW", "NHW")), r"out_layout='NHW'"),
    (dict(layouts=("NCHW", "NCHW", "NCHX")), r"out_layout='NCHX'"),
    (dict(layouts=("NNHW",) * 3), r"layout='NNHW'"),
    (dict(layouts=("NC-HW",) * 3), r"layout='NC-HW'"),
    (dict(layouts=("NCHW", "NCHW")), r"layouts=\('NCHW', 'NCHW'\): expected a tuple of 3"),
    (dict(layouts="NCHW"), r"layouts='NCHW'"),
    (dict(layouts=["NCHW"] * 3), r"layouts=\['NCHW', 'NCHW', 'NCHW'\]"),
    (dict(dtypes=("FP32", "FP32", "FP33")), r"y_dtype='FP33': unknown data type"),
    (dict(dtypes=("float32",) * 3), r"dtype='float32'"),
    (dict(dtypes=("FP32",) * 2), r"dtypes=\('FP32', 'FP32'\)"),
    (dict(cast_types=("FP7", None, None)), r"x_cast_type='FP7'"),
    (dict(cast_types=(None, None, "fp8")), r"y_cast_type='fp8'"),
    (dict(cast_types=(None, None)), r"cast_types=\(None, None\)"),
    (dict(math="fast"), r"math='fast'"),
    (dict(math="tf32", dtypes=("FP16",) * 3), r"math='tf32': TF32 math applies only to FP32"),
    (dict(math="tf32", dtypes=("FP32", "FP32", "FP16")), r"math='tf32'"),
])
def test_invalid_field(kw, match):
    with pytest.raises(ValueError, match=match):
        base(**kw)


@pytest.mark.parametrize("kw,match", [
    (dict(output_padding=(2, 0), strides=(2, 2)), r"output_padding=\(2, 0\): each value must be smaller than the stride"),
    (dict(output_padding=(1, 0)), r"output_padding=\(1, 0\)"),  # stride 1
    (dict(output_padding=(0, -1), strides=(2, 2)), r"output_padding=\(0, -1\)"),
    (dict(in_size=(1, 1), filter_size=(1, 1), pads=(1, 1)), r"pads=\(1, 1\): transposed output size -1"),
])
def test_invalid_transposed(kw, match):
    with pytest.raises(ValueError, match=match):
        base(transposed=True, **kw)


def test_transposed_filter_may_exceed_input():
    t = base(transposed=True, in_size=(2, 2), filter_size=(5, 5), pads=(0, 0))
    assert t.out_size == (6, 6)


@pytest.mark.parametrize("layouts", [("NCHW",) * 3, ("NHWC",) * 3, ("CHWN",) * 3, ("NCHWc", "CHWNc", "NCHWc"),
                                     ("NHWC", "NCHW", "NHWC"), ("NWHC",) * 3])
def test_valid_2d_layouts(layouts):
    assert base(layouts=layouts).layouts == layouts


def test_valid_3d_layouts():
    p = base(in_size=(4, 8, 8), filter_size=(1, 3, 3), pads=(0, 1, 1), strides=(1, 1, 1), dilations=(1, 1, 1),
             layouts=("NDHWC", "NCDHW", "NDHWC"))
    assert p.spatial_dims == 3
    with pytest.raises(ValueError, match=r"layout='NCHW': a 3D problem"):
        dataclasses.replace(p, layouts=("NCHW",) * 3)


def test_3d_default_output_padding():
    p = P(direction="F", n=1, c=2, k=2, in_size=(4, 8, 8), filter_size=(1, 3, 3), pads=(0, 1, 1),
          strides=(1, 1, 1), dilations=(1, 1, 1), layouts=("NCDHW",) * 3)
    assert p.output_padding == (0, 0, 0)
    assert p == P.make(n=1, c=2, k=2, in_size=(4, 8, 8), filter_size=(1, 3, 3), pads=(0, 1, 1))


def test_problem_is_frozen_and_hashable():
    p = base()
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.n = 3  # type: ignore[misc]
    assert {p: 1}[base()] == 1
    assert p != base(direction="B")


def test_filter_equal_to_padded_input_is_allowed():
    p = base(in_size=(1, 1), filter_size=(3, 3), pads=(1, 1))
    assert p.out_size == (1, 1)


# -- make() ---------------------------------------------------------------------------------------

def test_make_broadcasts_and_defaults():
    p = P.make(n=2, c=4, k=8, in_size=(8, 8))
    assert p == base(pads=(0, 0))
    assert p.layouts == ("NCHW",) * 3 and p.dtypes == ("FP32",) * 3
    q = P.make("b", n=2, c=4, k=8, in_size=[8, 8], filter_size=3, pads=1, strides=1, dilations=1)
    assert q == base(direction="B")


def test_make_3d_and_1d():
    p = P.make(n=1, c=2, k=2, in_size=(4, 5, 6), filter_size=(1, 3, 3), pads=(0, 1, 1))
    assert p.layouts == ("NCDHW",) * 3 and p.out_size == (4, 5, 6)
    q = P.make(n=1, c=2, k=2, in_size=(100,), filter_size=5, pads=2, strides=2, dilations=1)
    assert q.in_size == (1, 100) and q.filter_size == (1, 5) and q.pads == (0, 2) and q.strides == (1, 2)
    assert q.out_size == (1, 50)


def test_make_layouts_and_dtype_names():
    p = P.make(n=1, c=2, k=2, in_size=(8, 8), layout="NHWC", dtype="float16")
    assert p.layouts == ("NHWC",) * 3 and p.dtypes == ("FP16",) * 3
    q = P.make(n=1, c=2, k=2, in_size=(8, 8), layout="NHWC", w_layout="NCHW", dtype=np.float32)
    assert q.layouts == ("NHWC", "NCHW", "NHWC") and q.dtype == "FP32"


def test_make_accepts_numpy_integers():
    p = P.make(n=np.int64(2), c=np.int32(4), k=8, in_size=np.array([8, 8]), filter_size=np.int64(3),
               pads=np.array([1, 1]), groups=np.int64(1), bias=np.int8(0))
    assert p == base()
    assert all(type(v) is int for v in (p.n, p.c, *p.in_size, *p.pads, *p.filter_size, p.groups, p.bias))


@pytest.mark.parametrize("kw,match", [
    (dict(in_size=(8.5, 8)), r"in_size=\(8.5, 8\)"),
    (dict(in_size=(8.0, 8)), r"in_size=\(8.0, 8\)"),
    (dict(in_size="88"), r"in_size='88'"),
    (dict(in_size=8), r"in_size=8"),
    (dict(in_size=()), r"in_size=\(\)"),
    (dict(in_size=(1, 2, 3, 4)), r"in_size=\(1, 2, 3, 4\)"),
    (dict(filter_size=3.0), r"filter_size=3.0"),
    (dict(filter_size=(3, 3, 3)), r"filter_size=\(3, 3, 3\): expected 2 values"),
    (dict(pads=True), r"pads=True"),
    (dict(strides="2"), r"strides='2'"),
    (dict(n=2.5), r"n=2.5: expected an integer"),
    (dict(n=True), r"n=True"),
    (dict(groups=2.0), r"groups=2.0"),
    (dict(bias=True), r"bias=True"),
    (dict(dtype="complex64"), r"dtype='complex64': unknown data type"),
    (dict(direction="Q"), r"direction='Q'"),
    (dict(layout="NCDHW"), r"layout='NCDHW'"),
    (dict(math="tf32", dtype="FP16"), r"math='tf32'"),
    (dict(output_padding=1), r"output_padding=\(1, 1\): only a transposed"),
    (dict(transposed=True, strides=2, output_padding=2), r"output_padding=\(2, 2\)"),
])
def test_make_rejects(kw, match):
    args = dict(n=2, c=4, k=8, in_size=(8, 8))
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        P.make(**args)


@pytest.mark.parametrize("name,expected", [
    ("FP32", "FP32"), ("float32", "FP32"), ("float", "FP32"), ("half", "FP16"), ("float16", "FP16"),
    ("bfloat16", "BF16"), ("torch.bfloat16", "BF16"), ("fp8", "FP8"), ("float8_e4m3fn", "FP8"),
    ("float8_e5m2", "BF8"), ("int8", "INT8"), ("INT8x4", "INT8x4"), ("float64", "FP64"), ("int32", "INT32"),
    ("int64", "INT64"), ("bf16", "BF16"), (np.dtype("float16"), "FP16"), (np.float32, "FP32"),
])
def test_normalize_dtype(name, expected):
    assert normalize_dtype(name) == expected


@pytest.mark.parametrize("name", ["complex64", "uint8", "", "fp33", np.dtype("bool")])
def test_normalize_dtype_rejects(name):
    with pytest.raises(ValueError, match=r"dtype=.*unknown data type"):
        normalize_dtype(name)


# -- shapes ---------------------------------------------------------------------------------------

def test_shapes_nchw_and_nhwc():
    p = P.make(n=2, c=4, k=8, in_size=(9, 7), filter_size=(3, 1), pads=(1, 0), strides=2)
    assert p.out_size == (5, 4)
    assert p.x_shape == (2, 4, 9, 7) and p.w_shape == (8, 4, 3, 1) and p.y_shape == (2, 8, 5, 4)
    q = dataclasses.replace(p, layouts=("NHWC",) * 3)
    assert q.x_shape == (2, 9, 7, 4) and q.w_shape == (8, 3, 1, 4) and q.y_shape == (2, 5, 4, 8)
    r = dataclasses.replace(p, layouts=("CHWN",) * 3)
    assert r.x_shape == (4, 9, 7, 2) and r.w_shape == (4, 3, 1, 8) and r.y_shape == (8, 5, 4, 2)


def test_shapes_3d_and_groups():
    p = P.make(n=2, c=8, k=4, in_size=(3, 9, 7), filter_size=(1, 3, 3), groups=2, layout="NDHWC")
    assert p.x_shape == (2, 3, 9, 7, 8) and p.w_shape == (4, 1, 3, 3, 4) and p.y_shape == (2, 3, 7, 5, 4)


def test_io_shapes_per_direction():
    f = P.make("F", n=2, c=4, k=8, in_size=(16, 16), filter_size=3, strides=2, groups=2)
    x, w, y = (2, 4, 16, 16), (8, 2, 3, 3), (2, 8, 7, 7)
    assert f.io_shapes() == (x, w, y)                       # (x, w) -> y
    assert f.with_direction("B").io_shapes() == (y, w, x)   # (dy, w) -> dx
    assert f.with_direction("W").io_shapes() == (y, x, w)   # (dy, x) -> dw


def test_io_shapes_transposed():
    t = P.make("F", n=2, c=8, k=4, in_size=(5, 5), filter_size=3, pads=1, strides=2, transposed=True,
               output_padding=1)
    assert t.out_size == (10, 10)
    x, w, y = (2, 8, 5, 5), (8, 4, 3, 3), (2, 4, 10, 10)   # w is C x K/G x filter, as PyTorch
    assert t.io_shapes() == (x, w, y)
    assert t.with_direction("B").io_shapes() == (y, w, x)
    assert t.with_direction("W").io_shapes() == (y, x, w)


def test_flops():
    p = P.make(n=2, c=4, k=8, in_size=(8, 8), filter_size=3, pads=1, groups=2)
    assert p.flops() == 2 * 2 * 8 * 64 * 2 * 9
    assert p.with_direction("W").flops() == p.flops()


# -- as_conv --------------------------------------------------------------------------------------

def test_as_conv_of_ordinary_problem_is_itself():
    p = base()
    assert p.as_conv() is p


def test_as_conv_arithmetic():
    t = P.make("F", n=16, c=64, k=32, in_size=(28, 27), filter_size=(3, 4), pads=(1, 2), strides=(2, 3),
               dilations=(1, 2), transposed=True, output_padding=(1, 2), groups=4)
    expected_out = tuple(trans_out_size(i, f, p, s, d, o) for i, f, p, s, d, o in
                         zip((28, 27), (3, 4), (1, 2), (2, 3), (1, 2), (1, 2)))
    assert t.out_size == expected_out == ((28 - 1) * 2 - 2 + 3 + 1, (27 - 1) * 3 - 4 + 7 + 2)
    c = t.as_conv()
    assert not c.transposed and c.direction == "B"
    assert (c.c, c.k, c.groups) == (32, 64, 4)
    assert c.in_size == t.out_size            # the transposed output is the ordinary input
    assert c.out_size == t.in_size            # and the ordinary output is the transposed input
    assert (c.filter_size, c.pads, c.strides, c.dilations) == (t.filter_size, t.pads, t.strides, t.dilations)
    assert c.output_padding == (0, 0)
    assert t.with_direction("B").as_conv().direction == "F"
    assert t.with_direction("W").as_conv().direction == "W"


def test_as_conv_swaps_x_and_y_fields():
    t = P(direction="F", n=1, c=4, k=2, in_size=(4, 4), filter_size=(2, 2), pads=(0, 0), strides=(2, 2),
          dilations=(1, 1), transposed=True, layouts=("NHWC", "NCHW", "CHWN"), dtypes=("FP16", "BF16", "FP32"),
          cast_types=("FP8", None, "BF8"))
    c = t.as_conv()
    assert c.layouts == ("CHWN", "NCHW", "NHWC")
    assert c.dtypes == ("FP32", "BF16", "FP16")
    assert c.cast_types == ("BF8", None, "FP8")
    assert P.from_key(t.key()) == t


@settings(max_examples=100, deadline=None)
@given(problems(transposed=True))
def test_as_conv_property(t):
    c = t.as_conv()
    assert c.in_size == t.out_size and c.out_size == t.in_size
    assert c.x_shape == t.y_shape and c.y_shape == t.x_shape and c.w_shape == t.w_shape
    a, b, out = t.io_shapes()
    if t.direction == "W":
        assert c.io_shapes() == (b, a, out)   # weight grad with the activations' roles swapped
    else:
        assert c.io_shapes() == (a, b, out)   # the very same tensors
    assert (c.c, c.k, c.groups, c.n) == (t.k, t.c, t.groups, t.n)


@settings(max_examples=100, deadline=None)
@given(problems(transposed=False))
def test_out_size_formula(p):
    assert p.out_size == tuple(conv_out_size(*a) for a in zip(p.in_size, p.filter_size, p.pads, p.strides,
                                                              p.dilations))
    assert all(o >= 1 for o in p.out_size)


# -- from_arrays ----------------------------------------------------------------------------------

def arr(*shape, dtype=np.float32):
    return np.empty(shape, dtype=dtype)


def test_from_arrays_nchw():
    p = P.from_arrays(arr(2, 4, 16, 12), arr(8, 4, 3, 3), stride=2, padding=1)
    assert p == P.make(n=2, c=4, k=8, in_size=(16, 12), filter_size=3, pads=1, strides=2)
    assert p.x_shape == (2, 4, 16, 12) and p.w_shape == (8, 4, 3, 3)


def test_from_arrays_nhwc():
    p = P.from_arrays(arr(2, 16, 12, 4, dtype=np.float16), arr(8, 3, 5, 4, dtype=np.float16), padding=(1, 2),
                      layout="NHWC")
    assert (p.n, p.c, p.k, p.in_size, p.filter_size, p.pads) == (2, 4, 8, (16, 12), (3, 5), (1, 2))
    assert p.layouts == ("NHWC",) * 3 and p.dtypes == ("FP16",) * 3
    assert p.x_shape == (2, 16, 12, 4) and p.w_shape == (8, 3, 5, 4)


def test_from_arrays_1d():
    p = P.from_arrays(arr(2, 4, 100), arr(8, 4, 5), stride=2, padding=2)
    assert p.in_size == (1, 100) and p.filter_size == (1, 5) and p.strides == (1, 2) and p.pads == (0, 2)
    assert p.out_size == (1, 50)
    q = P.from_arrays(arr(2, 100, 4), arr(8, 5, 4), layout="NHWC")
    assert q.in_size == (1, 100) and q.c == 4 and q.k == 8


def test_from_arrays_3d():
    p = P.from_arrays(arr(1, 2, 4, 8, 8), arr(4, 2, 3, 3, 3), padding=1)
    assert p.layouts == ("NCDHW",) * 3 and p.in_size == (4, 8, 8) and p.out_size == (4, 8, 8)
    q = P.from_arrays(arr(1, 4, 8, 8, 2), arr(4, 3, 3, 3, 2), padding=1, layout="NDHWC")
    assert q.layouts == ("NDHWC",) * 3 and q.in_size == (4, 8, 8) and (q.c, q.k) == (2, 4)


def test_from_arrays_groups():
    p = P.from_arrays(arr(2, 8, 5, 5), arr(16, 2, 3, 3), groups=4)
    assert (p.c, p.k, p.groups) == (8, 16, 4)
    assert p.w_shape == (16, 2, 3, 3)


def test_from_arrays_transposed():
    p = P.from_arrays(arr(2, 8, 5, 5), arr(8, 3, 3, 3), stride=2, padding=1, transposed=True, output_padding=1)
    assert (p.c, p.k, p.transposed, p.output_padding) == (8, 3, True, (1, 1))
    assert p.out_size == (10, 10)
    g = P.from_arrays(arr(2, 8, 5, 5), arr(8, 2, 3, 3), groups=4, transposed=True)
    assert (g.c, g.k, g.groups) == (8, 8, 4)
    assert g.w_shape == (8, 2, 3, 3)


def test_from_arrays_direction_math_dtype():
    p = P.from_arrays(arr(1, 2, 4, 4), arr(2, 2, 1, 1), direction="w", math="tf32")
    assert p.direction == "W" and p.math == "tf32"
    b = P.from_arrays(arr(1, 2, 4, 4, dtype=np.float64), arr(2, 2, 1, 1, dtype=np.float64))
    assert b.dtypes == ("FP64",) * 3


def test_from_arrays_is_cached():
    a = P.from_arrays(arr(2, 4, 8, 8), arr(8, 4, 3, 3), stride=1, padding=(1, 1))
    b = P.from_arrays(arr(2, 4, 8, 8), arr(8, 4, 3, 3), stride=1, padding=[1, 1])
    assert a is b
    c = P.from_arrays(arr(2, 4, 8, 8), arr(8, 4, 3, 3), stride=np.int64(1), padding=(np.int64(1), 1))
    assert c is a
    assert P.from_arrays(arr(2, 4, 8, 8), arr(8, 4, 3, 3), padding=1) == a


@pytest.mark.parametrize("x,w,kw,match", [
    (arr(2, 4, 8, 8), arr(8, 3, 3, 3), {}, r"w.shape=\(8, 3, 3, 3\): weights carry 3 channels per group but x has C=4"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3), dict(groups=2), r"w.shape=.*groups=2"),
    (arr(2, 4, 8, 8), arr(8, 4, 3), {}, r"w.shape=\(8, 4, 3\): expected 4 dimensions"),
    (arr(2, 4), arr(8, 4), {}, r"x.shape=\(2, 4\): expected 3 \(1D\), 4 \(2D\) or 5 \(3D\)"),
    (arr(1, 2, 3, 4, 5, 6), arr(1, 2, 3, 4, 5, 6), {}, r"x.shape="),
    (arr(2, 4, 8, 8), arr(6, 3, 3, 3), dict(transposed=True), r"w.shape=\(6, 3, 3, 3\): a transposed convolution's weights lead with C=4"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3, dtype=np.float16), {}, r"w.dtype='float16': must match x.dtype=FP32"),
    (arr(2, 4, 8, 8, dtype=np.complex64), arr(8, 4, 3, 3, dtype=np.complex64), {}, r"dtype=.*unknown data type"),
    (arr(2, 4, 8, 8, dtype=np.uint8), arr(8, 4, 3, 3, dtype=np.uint8), {}, r"dtype=.*unknown data type"),
    (arr(2, 4, 2, 2), arr(8, 4, 3, 3), {}, r"filter_size=\(3, 3\): dilated filter 3 is larger"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3), dict(stride=0), r"strides=\(0, 0\)"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3), dict(stride=1.5), r"stride=1.5"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3), dict(padding="1"), r"padding='1'"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3), dict(padding=(1, 1, 1)), r"pads=\(1, 1, 1\): expected 2 values"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3), dict(groups=1.5), r"groups=1.5"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3), dict(layout="NCDHW"), r"layout='NCDHW'"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3), dict(direction="X"), r"direction='X'"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3), dict(output_padding=1), r"output_padding=\(1, 1\)"),
    (arr(2, 4, 8, 8), arr(8, 4, 3, 3), dict(math="tf32", ), None),
])
def test_from_arrays_rejects(x, w, kw, match):
    if match is None:  # (control: valid)
        assert P.from_arrays(x, w, **kw).math == "tf32"
        return
    with pytest.raises(ValueError, match=match):
        P.from_arrays(x, w, **kw)


@pytest.mark.parametrize("xs,ws,kw,field", [
    # a value past Python's 4300-digit str limit in the message's own text (found by bench/fuzz_campaign.py)
    ((6, 6, 8, 8), (1, 6, 3, 3), dict(groups=10**5000), "groups=<a 16610-bit integer>"),
    # an over-long x.shape quoted in the w.shape message
    ((-10**30, -10**300, 129), (10**5000, 17), {}, "x.shape=(-1000000000000000000000000000000, <a 997-bit integer>, 129)"),
    ((6, 6, 8, 8), (10**5000, 6, 3, 3), dict(transposed=True), "w.shape=(<a 16610-bit integer>, 6, 3, 3)"),
])
def test_from_arrays_huge_values_give_short_messages(xs, ws, kw, field):
    shaped = lambda shape: types.SimpleNamespace(shape=shape, dtype=np.dtype(np.float32))
    with pytest.raises(ValueError) as e:
        P.from_arrays(shaped(xs), shaped(ws), **kw)
    msg = str(e.value)
    assert field in msg and len(msg) < 300 and "\n" not in msg and "Exceeds the limit" not in msg, msg


def test_from_arrays_tf32_needs_fp32():
    with pytest.raises(ValueError, match=r"math='tf32'"):
        P.from_arrays(arr(1, 2, 4, 4, dtype=np.float16), arr(2, 2, 1, 1, dtype=np.float16), math="tf32")


# -- hostile values (issue 15): one-line ValueErrors naming the field, never a TypeError ------------

@pytest.mark.parametrize("kw,match", [
    (dict(layout=["NCHW"]), r"^layout=\['NCHW'\]: expected a string or None$"),
    (dict(layout={"NCHW": 1}), r"^layout=\{'NCHW': 1\}: expected a string or None$"),
    (dict(math=["tf32"]), r"^math=\['tf32'\]: expected a string$"),
    (dict(direction=1), r"^direction=1: expected a string$"),
    (dict(transposed="no"), r"^transposed='no': expected True or False$"),
    (dict(stride=[[1]]), r"stride"),
])
def test_from_arrays_unhashable_or_wrong_type_keywords(kw, match):
    """from_arrays caches on its arguments: a list once raised TypeError: unhashable type."""
    with pytest.raises(ValueError, match=match):
        P.from_arrays(arr(2, 4, 8, 8), arr(8, 4, 3, 3), **kw)


class _Shaped:
    def __init__(self, shape, dtype="float32"):
        self.shape, self.dtype = shape, dtype


@pytest.mark.parametrize("x,match", [
    (_Shaped((2, 4, 8.5, 8)), r"^x.shape=8.5: expected an integer$"),
    (_Shaped(None), r"^x.shape=None: expected an array with a shape, got _Shaped$"),
    (_Shaped("2x4x8x8"), r"^x.shape='2x4x8x8'"),
    (object(), r"^x.shape=None: expected an array with a shape, got object$"),
])
def test_from_arrays_bad_shapes(x, match):
    with pytest.raises(ValueError, match=match):
        P.from_arrays(x, arr(8, 4, 3, 3))


HUGE = 10**5000  # past Python's 4300-digit str() limit: an error message must not try to print it


@pytest.mark.parametrize("field", ["n", "c", "k", "groups"])
def test_sizes_must_fit_64_bits(field):
    if field != "groups":  # the largest 64-bit value is a size
        assert getattr(base(**{field: 2**63 - 1}), field) == 2**63 - 1
    with pytest.raises(ValueError, match=rf"^{field}=9223372036854775808: must be below 2\^63"):
        base(**{field: 2**63})
    with pytest.raises(ValueError, match=rf"^{field}=<a 16610-bit integer>: must be below 2\^63"):
        base(**{field: HUGE})


@pytest.mark.parametrize("field", ["in_size", "filter_size", "pads", "strides", "dilations"])
def test_tuple_fields_must_fit_64_bits(field):
    v = list(BASE[field])
    v[1] = HUGE
    with pytest.raises(ValueError, match=rf"^{field}=\(\d+, <a 16610-bit integer>\): must be below 2\^63"):
        base(**{field: tuple(v)})


def test_output_size_must_fit_64_bits():
    """A transposed output grows with the stride: (2^62 - 1) * 4 + 3 is past 2^63."""
    with pytest.raises(ValueError, match=r"^out_size=\(\d+, \d+\): must be below 2\^63"):
        base(transposed=True, in_size=(2**62, 8), strides=(4, 1), pads=(0, 0))


@pytest.mark.parametrize("kw,match", [
    (dict(n=HUGE), r"^n=<a 16610-bit integer>: must be below 2\^63"),
    (dict(direction=HUGE), r"^direction=<a 16610-bit integer>: expected F"),
    (dict(dtype=HUGE), r"^dtype=<a 16610-bit integer>: not a data type$"),
    (dict(in_size=[HUGE, 1]), r"^in_size=\(<a 16610-bit integer>, 1\): must be below 2\^63"),
    (dict(layout=HUGE), r"^layout=<a 16610-bit integer>: expected a layout name"),
    (dict(transposed="yes"), r"^transposed='yes': expected True or False$"),
    (dict(in_size="8x8"), r"^in_size='8x8': expected a sequence of integers$"),
])
def test_make_hostile_values(kw, match):
    spec = dict(n=2, c=4, k=4, in_size=(8, 8))
    with pytest.raises(ValueError, match=match) as ei:
        P.make(**{**spec, **kw})
    assert "\n" not in str(ei.value) and "Exceeds the limit" not in str(ei.value)


def test_long_values_are_shortened_in_messages():
    with pytest.raises(ValueError) as ei:
        base(layouts=("N" * 100_000,) * 3)
    msg = str(ei.value)
    assert len(msg) < 300 and "(100002 characters)" in msg
