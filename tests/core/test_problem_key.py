"""MIOpen's FindDB key, network_config and PerfDB key: round trips, literal keys, malformed keys."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings

from miofind.problem import ProblemDescription as P

from strategies import keys, problems

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- round trips over the whole field space ------------------------------------------------------

@SETTINGS
@given(problems())
def test_key_round_trip(p):
    k = p.key()
    q = P.from_key(k)
    assert q == p
    assert hash(q) == hash(p)
    assert q.key() == k  # idempotent
    assert P.from_key(q.key()) == q


@SETTINGS
@given(keys)
def test_parse_then_serialize_is_identity(k):
    assert P.from_key(k).key() == k


@settings(max_examples=100, deadline=None)
@given(problems())
def test_key_shape_follows_miopen(p):
    """Field count, layout token count, optional-suffix order, as MIOpen's Serialize writes them."""
    k = p.key()
    head, *opts = k.split("_")
    toks = head.split("-")
    kv = p.as_conv()
    (ci, isz), (co, osz), lay, dts, casts = kv._key_view()
    nlay = 1 if lay in (("NCHW",) * 3, ("NCDHW",) * 3) else 3
    assert len(toks) == (12 if p.spatial_dims == 2 else 14) + nlay + 2
    assert toks[-1] == kv.direction
    assert int(toks[0]) == ci
    # a B or W key starts with the forward problem's K (dy leads)
    assert int(toks[0]) == (kv.c if kv.direction == "F" else kv.k)
    expected = []
    if p.groups != 1:
        expected.append(f"g{p.groups}")
    expected += [f"{t}{c}" for t, c in zip(("ci", "cw", "co"), casts) if c]
    if p.transposed:
        expected.append("trans")
    if p.math == "tf32":
        expected.append("tf32")
    assert opts == expected
    if len(set(dts)) == 1:
        assert toks[-2] == dts[0]
    else:
        assert toks[-2] == "".join(dts)


@settings(max_examples=100, deadline=None)
@given(problems())
def test_network_config_and_perfdb_key_are_deterministic_and_distinct_per_direction(p):
    assert p.network_config() == P.from_key(p.key()).network_config()
    assert p.perfdb_key() == P.from_key(p.key()).perfdb_key()
    nc = p.network_config().split("x")
    assert nc[-1 - (p.transposed) - (p.math == "tf32")] == "Default"
    others = {d for d in "FBW" if d != p.direction}
    for d in others:
        assert p.with_direction(d).key() != p.key()


# -- literal MIOpen keys of every form ------------------------------------------------------------

LITERAL_KEYS = [
    # REFERENCE.md's examples
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F",
    "1024-14-14-3x3-1024-14-14-16-1x1-1x1-1x1-0-NCHW-FP16-F_g32",
    "1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1x1-1x1x1-0-NCDHW-FP16-F",
    # three layouts: channels-last, mixed, CHWN, vectorized
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
    "576-4-4-1x1-192-4-4-8-0x0-1x1-1x1-0-NHWC-NCHW-NCHW-FP32-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-NCHW-NHWC-BF16-B",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-CHWN-CHWN-CHWN-FP32-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHWc-NCHWc-NCHWc-INT8x4INT8x4INT32-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHWc-CHWNc-NCHWc-INT8x4-F",
    "32-16-56-56-3x3x3-64-16-56-56-8-1x1x1-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F",
    # groups and depthwise
    "32-112-112-3x3-32-112-112-8-1x1-1x1-1x1-0-NCHW-FP16-F_g32",
    "128-56-56-3x3-128-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-BF16-W_g32",
    "64-8-28-28-3x3x3-64-8-28-28-2-1x1x1-1x1x1-1x1x1-0-NCDHW-FP32-W_g64",
    # casts (FP8 convolutions): in MIOpen's order after _g
    "128-28-28-3x3-128-28-28-64-1x1-1x1-1x1-0-NCHW-FP32-F_ciFP8_cwFP8",
    "128-28-28-3x3-128-28-28-64-1x1-1x1-1x1-0-NCHW-FP16-B_g2_cwBF8_coFP8",
    "128-28-28-3x3-128-28-28-64-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-W_ciBF8_cwFP8_coFP8",
    # every data type, uniform and mixed
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT8INT8INT32-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-INT8INT8INT32-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT32INT8INT8-B",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT8-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT32-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP8-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-BF8-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT64-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP64-W",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP16FP16FP32-F",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP8BF8FP32-F",
    # B and W with stride 2: in (dy) and out (dx / x) sizes differ
    "64-28-28-3x3-32-56-56-16-1x1-2x2-1x1-0-NCHW-FP32-B",
    "64-28-28-3x3-32-55-55-16-1x1-2x2-1x1-0-NCHW-FP32-B",
    "256-14-14-1x1-512-28-28-32-0x0-2x2-1x1-0-NCHW-FP16-W",
    "64-8-28-28-3x3x3-32-16-56-56-4-1x1x1-2x2x2-1x1x1-0-NCDHW-BF16-B",
    "2048-7-7-1x1-1024-14-14-256-0x0-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-W",
    # 1x7 / 7x1 with asymmetric pads, dilation, bias, 1D-as-H=1
    "128-17-17-1x7-128-17-17-32-0x3-1x1-1x1-0-NCHW-FP32-F",
    "128-17-17-7x1-192-17-17-32-3x0-1x1-1x1-0-NCHW-FP32-F",
    "192-17-17-1x7-160-17-17-32-0x3-1x1-1x1-0-NCHW-FP16-B",
    "512-28-28-3x3-512-28-28-8-2x2-1x1-2x2-0-NCHW-FP32-F",
    "3-224-224-7x7-64-112-112-1-3x3-2x2-1x1-1-NCHW-FP32-F",
    "80-1-3000-1x3-80-1-1500-4-0x1-1x2-1x1-0-NCHW-FP32-F",
    # our own suffixes
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F_tf32",
    "64-28-28-3x3-32-56-56-16-1x1-2x2-1x1-0-NCHW-FP32-B_trans",
    "64-28-28-3x3-32-56-56-16-1x1-2x2-1x1-0-NCHW-FP32-B_g2_trans_tf32",
    "32-56-56-4x4-64-28-28-16-1x1-2x2-1x1-0-NCHW-FP16-F_ciFP8_trans",
    "64-28-28-4x4-32-56-56-16-1x1-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-W_g4_trans",
]


@pytest.mark.parametrize("key", LITERAL_KEYS)
def test_literal_key_round_trips(key):
    p = P.from_key(key)
    assert p.key() == key
    assert P.from_key(p.key()) == p


def test_literal_keys_are_distinct_problems():
    assert len({P.from_key(k) for k in LITERAL_KEYS}) == len(LITERAL_KEYS)


# -- hand checks against MIOpen's semantics -------------------------------------------------------

def test_reference_forward_key():
    p = P.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F")
    assert (p.direction, p.n, p.c, p.k, p.in_size, p.filter_size) == ("F", 32, 64, 64, (56, 56), (3, 3))
    assert (p.pads, p.strides, p.dilations, p.groups, p.bias) == ((1, 1), (1, 1), (1, 1), 1, 0)
    assert p.out_size == (56, 56)
    assert p == P.make(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)


def test_w_key_leads_with_forward_k():
    """(dy, dw, x) for W: the key's first field is dy's channel count, the forward K."""
    key = "256-14-14-1x1-512-28-28-32-0x0-2x2-1x1-0-NCHW-FP16-W"
    p = P.from_key(key)
    assert (p.c, p.k, p.in_size, p.out_size) == (512, 256, (28, 28), (14, 14))
    assert p == P.make("W", n=32, c=512, k=256, in_size=(28, 28), filter_size=1, strides=2, dtype="FP16")
    dy, x, dw = p.io_shapes()
    assert dy == (32, 256, 14, 14) and x == (32, 512, 28, 28) and dw == (256, 512, 1, 1)
    # the same convolution forward leads with C
    assert p.with_direction("F").key() == "512-28-28-1x1-256-14-14-32-0x0-2x2-1x1-0-NCHW-FP16-F"


def test_b_key_leads_with_dy_and_keeps_dx_size():
    k56 = "64-28-28-3x3-32-56-56-16-1x1-2x2-1x1-0-NCHW-FP32-B"
    k55 = "64-28-28-3x3-32-55-55-16-1x1-2x2-1x1-0-NCHW-FP32-B"
    p56, p55 = P.from_key(k56), P.from_key(k55)
    assert (p56.c, p56.k, p56.in_size, p56.out_size) == (32, 64, (56, 56), (28, 28))
    assert p55.in_size == (55, 55) and p55.out_size == (28, 28)
    assert p56 != p55
    dy, w, dx = p56.io_shapes()
    assert dy == (16, 64, 28, 28) and w == (64, 32, 3, 3) and dx == (16, 32, 56, 56)


def test_b_and_w_keys_reverse_layouts_dtypes_and_casts():
    """Forward-view fields (x, w, y) are written in-weights-out: (dy, w, dx) for B, (dy, dw, x) for W."""
    p = P(direction="F", n=2, c=4, k=8, in_size=(8, 8), filter_size=(3, 3), pads=(1, 1), strides=(1, 1),
          dilations=(1, 1), layouts=("NHWC", "NCHW", "NCHW"), dtypes=("INT8", "INT8", "INT32"),
          cast_types=("FP8", None, None))
    assert p.key() == "4-8-8-3x3-8-8-8-2-1x1-1x1-1x1-0-NHWC-NCHW-NCHW-INT8INT8INT32-F_ciFP8"
    assert p.with_direction("B").key() == "8-8-8-3x3-4-8-8-2-1x1-1x1-1x1-0-NCHW-NCHW-NHWC-INT32INT8INT8-B_coFP8"
    assert p.with_direction("W").key() == "8-8-8-3x3-4-8-8-2-1x1-1x1-1x1-0-NCHW-NCHW-NHWC-INT32INT8INT8-W_coFP8"
    for d in "FBW":
        q = P.from_key(p.with_direction(d).key())
        assert q.layouts == p.layouts and q.dtypes == p.dtypes and q.cast_types == p.cast_types


def test_3d_reference_key_fields():
    p = P.from_key("1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1x1-1x1x1-0-NCDHW-FP16-F")
    assert p.spatial_dims == 3
    assert (p.c, p.k, p.n) == (1, 32, 1)
    assert p.in_size == (1, 161, 700) and p.filter_size == (1, 5, 20) and p.out_size == (1, 157, 681)
    assert p.layouts == ("NCDHW",) * 3 and p.dtypes == ("FP16",) * 3


def test_transposed_key_is_the_equivalent_ordinary_problem():
    t = P.make("F", n=16, c=64, k=32, in_size=(28, 28), filter_size=3, pads=1, strides=2, transposed=True,
               output_padding=1)
    assert t.out_size == (56, 56)
    # conv-transpose forward == ordinary backward-data with dy = the transposed input
    assert t.key() == "64-28-28-3x3-32-56-56-16-1x1-2x2-1x1-0-NCHW-FP32-B_trans"
    assert t.as_conv().key() == "64-28-28-3x3-32-56-56-16-1x1-2x2-1x1-0-NCHW-FP32-B"
    assert P.from_key(t.key()) == t
    # without output padding the transposed output is 55, a different key
    t55 = P.make("F", n=16, c=64, k=32, in_size=(28, 28), filter_size=3, pads=1, strides=2, transposed=True)
    assert t55.key() == "64-28-28-3x3-32-55-55-16-1x1-2x2-1x1-0-NCHW-FP32-B_trans"


def test_tf32_key_and_default_key_differ():
    s = P.make(n=1, c=8, k=8, in_size=(8, 8))
    t = P.make(n=1, c=8, k=8, in_size=(8, 8), math="tf32")
    assert t.key() == s.key() + "_tf32"
    assert P.from_key(t.key()).math == "tf32"


def test_legacy_single_non_default_layout_token_is_read_as_uniform():
    """Old MIOpen wrote only the in-layout; such a key reads as all three and re-serializes in the
    modern three-token form (the only keys that don't round-trip byte for byte)."""
    p = P.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-FP16-F")
    assert p.layouts == ("NHWC",) * 3
    assert p.key() == "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"


def test_key_tolerates_surrounding_whitespace():
    k = LITERAL_KEYS[0]
    assert P.from_key(f"  {k}\n").key() == k


# -- malformed keys -------------------------------------------------------------------------------

GOOD = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"

BAD_KEYS = [
    # field counts
    ("", r"non-empty"),
    ("64-56-56", r"too few"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-FP32-F", r"expected 15 or 17 '-'-separated fields for a 2D key, got 14"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-NCHW-FP32-F", r"got 16"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F-F", r"got 16"),
    ("1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1x1-1x1x1-NCDHW-FP16-F", r"for a 3D key, got 16"),
    ("64-56-56-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", r"no filter field"),
    # non-integers
    ("64-56-5a-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", r"in_w='5a' is not an integer"),
    ("abc-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", r"in_channels='abc' is not an integer"),
    ("64-56-56-3x3-64-56-56-032-1x1-1x1-1x1-0-NCHW-FP32-F", r"batch='032' is not an integer"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-x-NCHW-FP32-F", r"bias='x' is not an integer"),
    ("64-56-56-3xa-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", r"filter='3xa' is not an integer"),
    # wrong 'x' group sizes
    ("64-56-56-3x3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", r"filter='3x3x3' should have 2 'x'-separated values"),
    ("64-56-56-3x3-64-56-56-32-1x1x1-1x1-1x1-0-NCHW-FP32-F", r"pads='1x1x1' should have 2"),
    ("64-56-56-3x3-64-56-56-32-1x1-1-1x1-0-NCHW-FP32-F", r"strides='1' should have 2"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1x-0-NCHW-FP32-F", r"dilations='1x1x' should have 2"),
    ("1-1-161-700-1x5x20-32-1-157-681-1-0x0-1x1x1-1x1x1-0-NCDHW-FP16-F", r"pads='0x0' should have 3"),
    # data types
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP33-F", r"data type='FP33'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-fp32-F", r"data type='fp32'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT8INT32-F", r"data type='INT8INT32'.*one type name or three"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32FP32FP32-F", r"data type='FP32FP32FP32'.*one type name"),
    # direction
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-X", r"direction='X'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-f", r"direction='f'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-FB", r"direction='FB'"),
    # suffixes
    (GOOD + "_x", r"suffix _'x'"),
    (GOOD + "_", r"suffix _''"),
    (GOOD + "_g", r"suffix _'g'"),
    (GOOD + "_gx", r"suffix _'gx'"),
    (GOOD + "_ciFP99", r"suffix _'ciFP99'"),
    (GOOD + "_cxFP8", r"suffix _'cxFP8'"),
    (GOOD + "_g1", r"_g1"),
    (GOOD + "_g0", r"groups=0"),
    (GOOD + "_g032", r"suffix _'g032'"),
    (GOOD + "_g2_g2", r"repeated or out of MIOpen's order"),
    (GOOD + "_ciFP8_g2", r"repeated or out of MIOpen's order"),
    (GOOD + "_coFP8_ciFP8", r"repeated or out of MIOpen's order"),
    (GOOD + "_tf32_trans", r"repeated or out of MIOpen's order"),
    (GOOD + "_trans_trans", r"repeated or out of MIOpen's order"),
    # layouts
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-NCHW-NCHW-FP32-F", r"default layout once"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCDHW-FP32-F", r"layout='NCDHW'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NCH1-NCHW-FP32-F", r"layout='NCH1'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NXHW-NCHW-FP32-F", r"w_layout='NXHW'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NNNN-NNNN-NNNN-FP32-F", r"layout='NNNN'"),
    # arithmetic
    ("64-56-56-3x3-64-0-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", r"out_size_override=\(0, 56\)"),
    ("60-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F_g32", r"c=60: input channels must be divisible by groups=32"),
    ("64-56-56-3x3-60-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F_g32", r"k=60: output channels must be divisible"),
    ("64-2-2-7x7-64-1-1-32-1x1-1x1-1x1-0-NCHW-FP32-F", r"filter_size=\(7, 7\): dilated filter 7 is larger than the padded input 2\+2\*1"),
    ("64-56-56-3x3-64-56-56-0-1x1-1x1-1x1-0-NCHW-FP32-F", r"n=0: must be at least 1"),
    ("64-0-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", r"in_size=\(0, 56\)"),
    ("64-56-56-3x3-64-56-56-32-1x1-0x1-1x1-0-NCHW-FP32-F", r"strides=\(0, 1\)"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x0-0-NCHW-FP32-F", r"dilations=\(1, 0\)"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-2-NCHW-FP32-F", r"bias=2"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP16-F_tf32", r"math='tf32': TF32 math applies only to FP32"),
]


@pytest.mark.parametrize("key,match", BAD_KEYS)
def test_malformed_key_raises_value_error_naming_the_field(key, match):
    with pytest.raises(ValueError, match=match):
        P.from_key(key)


@pytest.mark.parametrize("key,match", [(k, m) for k, m in BAD_KEYS if k])
def test_malformed_key_message_quotes_the_key(key, match):
    with pytest.raises(ValueError) as ei:
        P.from_key(key)
    assert key.strip() in str(ei.value)


@pytest.mark.parametrize("bad", [None, 42, b"64-56"])
def test_non_string_key(bad):
    with pytest.raises(ValueError, match="key="):
        P.from_key(bad)


# -- network_config -------------------------------------------------------------------------------

def test_network_config_reference_example():
    p = P.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F")
    assert p.network_config() == "64x56x56x3x3x64x56x56x32xNCHWxFP32x1x1x1x1x1x1x1xFxDefault"


@pytest.mark.parametrize("key,config", [
    ("1024-14-14-3x3-1024-14-14-16-1x1-1x1-1x1-0-NCHW-FP16-F_g32",
     "1024x14x14x3x3x1024x14x14x16xNCHWxFP16x1x1x1x1x1x1x32xFxDefault"),
    ("256-14-14-1x1-512-28-28-32-0x0-2x2-1x1-0-NCHW-FP16-W",
     "256x14x14x1x1x512x28x28x32xNCHWxFP16x0x0x2x2x1x1x1xWxDefault"),
    ("576-4-4-1x1-192-4-4-8-0x0-1x1-1x1-0-NHWC-NCHW-NCHW-FP32-F",
     "576x4x4x1x1x192x4x4x8xNHWCxNCHWxNCHWxFP32x0x0x1x1x1x1x1xFxDefault"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT8INT8INT32-F",
     "64x56x56x3x3x64x56x56x32xNCHWxINT8INT8INT32x1x1x1x1x1x1x1xFxDefault"),
    # casts are one token, right after the data type (MIOpen's MakeNetworkConfig)
    ("128-28-28-3x3-128-28-28-64-1x1-1x1-1x1-0-NCHW-FP16-B_g2_cwBF8_coFP8",
     "128x28x28x3x3x128x28x28x64xNCHWxFP16xcwBF8coFP8x1x1x1x1x1x1x2xBxDefault"),
    # 3D: D first in every group
    ("1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1x1-1x1x1-0-NCDHW-FP16-F",
     "1x1x161x700x1x5x20x32x1x157x681x1xNCDHWxFP16x0x0x0x1x1x1x1x1x1x1xFxDefault"),
    ("64-8-28-28-3x3x3-32-16-56-56-4-1x1x1-2x2x2-1x1x1-0-NCDHW-BF16-B",
     "64x8x28x28x3x3x3x32x16x56x56x4xNCDHWxBF16x1x1x1x2x2x2x1x1x1x1xBxDefault"),
    # our flags after MIOpen's alpha/beta field
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F_tf32",
     "64x56x56x3x3x64x56x56x32xNCHWxFP32x1x1x1x1x1x1x1xFxDefaultxtf32"),
    ("64-28-28-3x3-32-56-56-16-1x1-2x2-1x1-0-NCHW-FP32-B_g2_trans_tf32",
     "64x28x28x3x3x32x56x56x16xNCHWxFP32x1x1x2x2x1x1x2xBxDefaultxtransxtf32"),
])
def test_network_config_literals(key, config):
    assert P.from_key(key).network_config() == config


# -- PerfDB key -----------------------------------------------------------------------------------

PERFDB_EXAMPLE = "2x6x256x256x1x1x1x1x512x128x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP32xW"


def test_perfdb_reference_example():
    """W of a 1x1 conv, N=128, C=512 -> K=6 on 256x256: the key's in_channels is dy's (the forward K)."""
    p = P.make("W", n=128, c=512, k=6, in_size=(256, 256), filter_size=1)
    assert p.perfdb_key() == PERFDB_EXAMPLE
    assert P.from_key("6-256-256-1x1-512-256-256-128-0x0-1x1-1x1-0-NCHW-FP32-W") == p
    assert p.key() == "6-256-256-1x1-512-256-256-128-0x0-1x1-1x1-0-NCHW-FP32-W"
    # forward of the same convolution leads with C
    assert p.with_direction("F").perfdb_key() == "2x512x256x256x1x1x1x1x6x128x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP32xF"


@pytest.mark.parametrize("key,perf", [
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F",
     "2x64x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNCHWxFP32xF"),
    ("128-17-17-1x7-128-17-17-32-0x3-1x1-1x1-0-NCHW-FP32-F",
     "2x128x17x17x1x1x7x1x128x32x0x3x0x1x1x0x1x1x0x0x1xNCHWxFP32xF"),
    ("3-224-224-7x7-64-112-112-1-3x3-2x2-1x1-1-NCHW-FP32-F",
     "2x3x224x224x1x7x7x1x64x1x3x3x0x2x2x0x1x1x0x1x1xNCHWxFP32xF"),
    ("1024-14-14-3x3-1024-14-14-16-1x1-1x1-1x1-0-NCHW-FP16-F_g32",
     "2x1024x14x14x1x3x3x1x1024x16x1x1x0x1x1x0x1x1x0x0x32xNCHWxFP16xF"),
    # 3D: in_d, fil_d, pad_d, stride_d, dilation_d are real values
    ("1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1x1-1x1x1-0-NCDHW-FP16-F",
     "3x1x161x700x1x5x20x1x32x1x0x0x0x1x1x1x1x1x1x0x1xNCDHWxFP16xF"),
    ("64-8-28-28-3x3x3-32-16-56-56-4-1x1x1-2x2x2-1x1x1-0-NCDHW-BF16-B",
     "3x64x28x28x8x3x3x3x32x4x1x1x1x2x2x2x1x1x1x0x1xNCDHWxBF16xB"),
    # MIOpen's layout column is one name; uniform channels-last is written once
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
     "2x64x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNHWCxFP16xF"),
    # (mixed layouts: all three, our extension so that they don't collide)
    ("576-4-4-1x1-192-4-4-8-0x0-1x1-1x1-0-NHWC-NCHW-NCHW-FP32-F",
     "2x576x4x4x1x1x1x1x192x8x0x0x0x1x1x0x1x1x0x0x1xNHWCxNCHWxNCHWxFP32xF"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT8INT8INT32-F",
     "2x64x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNCHWxINT8INT8INT32xF"),
])
def test_perfdb_key_literals(key, perf):
    assert P.from_key(key).perfdb_key() == perf


@settings(max_examples=100, deadline=None)
@given(problems(transposed=False))
def test_perfdb_key_field_layout(p):
    """24 fields in MIOpen's column order (one or three layout tokens)."""
    # (MIOpen's old INT8x4 type name carries an 'x' of its own; the x-joined keys are not parsed back)
    f = p.perfdb_key().split("_")[0].replace("INT8x4", "INT8v4").split("x")
    nlay = 1 if len(set(p.layouts)) == 1 else 3
    assert len(f) == 23 + nlay
    assert int(f[0]) == p.spatial_dims
    assert int(f[1]) == (p.c if p.direction == "F" else p.k)
    assert int(f[8]) == (p.k if p.direction == "F" else p.c)
    assert int(f[9]) == p.n
    assert int(f[19]) == p.bias and int(f[20]) == p.groups
    assert f[-1] == p.direction
    if p.spatial_dims == 2:
        assert (f[4], f[7], f[12], f[15], f[18]) == ("1", "1", "0", "0", "0")
    assert re.fullmatch(r"[A-Za-z0-9]+", f[-2])


# Output sizes the formula does not give are kept as stated: MIOpen's "same"/"valid" padding modes
# size the output as ceil(in/stride), and its own doc-comment example is of that kind.
@pytest.mark.parametrize("key,out", [
    ("64-56-56-3x3-64-55-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", (55, 56)),
    ("64-28-28-3x3-32-58-58-16-1x1-2x2-1x1-0-NCHW-FP32-B", (28, 28)),
    ("576-4-4-1x1-192-4-4-8-1x1-2x2-3x3-0-NCHW-FP32-F", (4, 4)),
    ("64-56-56-3x3-64-28-28-32-0x0-2x2-1x1-0-NCHW-FP32-F", (28, 28)),   # 'same' at stride 2: pad 0, out 28
])
def test_stated_output_size_round_trips(key, out):
    p = P.from_key(key)
    assert p.key() == key
    assert p.out_size == out == p.out_size_override
    assert P.from_key(p.key()) == p
