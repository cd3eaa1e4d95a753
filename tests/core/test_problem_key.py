"""MIOpen's FindDB key and network_config: round trips, literal keys, malformed keys."""

from __future__ import annotations

import collections
import re
import sqlite3
from pathlib import Path

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
def test_network_config_is_deterministic_and_distinct_per_direction(p):
    assert p.network_config() == P.from_key(p.key()).network_config()
    nc = p.network_config().split("x")
    assert nc[-1 - (p.transposed) - (p.math == "tf32") - p.bias - (p.activation != "none")] == "Default"
    others = {d for d in "FBW" if d != p.direction}
    for d in others:
        assert p.with_direction(d).key() != p.key()


# -- literal MIOpen keys of every form ------------------------------------------------------------

LITERAL_KEYS = [
    # MIOpen's key examples (2D, groups, 3D)
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
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-1-NHWC-NHWC-NHWC-FP16-F_relu",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F_tf32_gelu",
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-1-NCHW-FP16-F_g2_gelu",
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


def test_fused_epilogue_keys():
    """A fused forward (bias and/or activation) has its own key and invoker-cache key; the activation is F
    only, and the other directions of a fused problem are the plain convolution's."""
    s = P.make(n=2, c=8, k=16, in_size=(8, 8), layout="NHWC", dtype="FP16")
    b = P.make(n=2, c=8, k=16, in_size=(8, 8), layout="NHWC", dtype="FP16", bias=1)
    r = P.make(n=2, c=8, k=16, in_size=(8, 8), layout="NHWC", dtype="FP16", bias=1, activation="relu")
    g = P.make(n=2, c=8, k=16, in_size=(8, 8), layout="NHWC", dtype="FP16", activation="gelu")
    assert not s.fused and b.fused and r.fused and g.fused
    assert r.key() == b.key() + "_relu" and g.key() == s.key() + "_gelu"
    assert len({s.network_config(), b.network_config(), r.network_config(), g.network_config()}) == 4
    assert all(P.from_key(p.key()) == p for p in (b, r, g))
    assert r.unfused() == s and g.unfused() == s and s.unfused() is s
    assert r.with_direction("B").activation == "none" and r.with_direction("F") == r
    for d in "BW":
        with pytest.raises(ValueError, match=r"activation='relu': a fused activation applies only to a forward"):
            P.make(d, n=2, c=8, k=16, in_size=(8, 8), activation="relu")
    with pytest.raises(ValueError, match=r"activation='tanh': expected one of"):
        P.make(n=2, c=8, k=16, in_size=(8, 8), activation="tanh")
    with pytest.raises(ValueError, match=r"activation='relu'.*non-transposed"):
        P.make(n=2, c=8, k=16, in_size=(8, 8), activation="relu", transposed=True)


@pytest.mark.parametrize("d", "FBW")
def test_legacy_single_non_default_layout_token_is_read_as_uniform_and_kept(d):
    """Old MIOpen wrote only the in-layout; such a key reads as that layout on all three tensors and
    re-serializes as written. It is the same convolution as the modern three-token key (same PerfDB
    key, still solvable) but a different key, so a different problem."""
    legacy = f"64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-FP16-{d}"
    modern = f"64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-{d}"
    p, q = P.from_key(legacy), P.from_key(modern)
    assert p.key() == legacy and q.key() == modern
    assert p.layouts == q.layouts == ("NHWC",) * 3
    assert (p.key_layouts, q.key_layouts) == (("NHWC",), None)
    assert p.solvable and q.solvable
    assert p != q and P.from_key(p.key()) == p
    assert p.network_config() == q.network_config().replace("NHWCxNHWCxNHWC", "NHWC")


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
    ("1-1-161-700-1x5x20-32-1-157-681-1-0-1x1x1-1x1x1-0-NCDHW-FP16-F", r"pads='0' should have 3"),
    ("1-1-161-700-1x5x20-32-1-157-681-1-0x0x0x0-1x1x1-1x1x1-0-NCDHW-FP16-F", r"pads='0x0x0x0' should have 3"),
    ("1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1-1x1x1-0-NCDHW-FP16-F", r"strides='1x1' should have 3"),
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
    (GOOD + "_g2_g2", r"repeated or out of order"),
    (GOOD + "_ciFP8_g2", r"repeated or out of order"),
    (GOOD + "_coFP8_ciFP8", r"repeated or out of order"),
    (GOOD + "_tf32_trans", r"repeated or out of order"),
    (GOOD + "_trans_trans", r"repeated or out of order"),
    (GOOD + "_relu_tf32", r"repeated or out of order"),
    (GOOD + "_relu_gelu", r"repeated or out of order"),
    (GOOD + "_silu", r"suffix _'silu'"),
    # layouts
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-NCHW-NCHW-FP32-F", r"default layout once"),
    ("1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1x1-1x1x1-0-NCHW-NCHW-NCHW-FP16-F", r"default layout once"),
    ("1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1x1-1x1x1-0-NCDHW-NCDHW-NCDHW-FP16-F", r"default layout once"),
    ("1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1x1-1x1x1-0-NCW-FP16-F", r"layout='NCW'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCDHW-FP32-F", r"layout='NCDHW'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NCH1-NCHW-FP32-F", r"layout='NCH1'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NXHW-NCHW-FP32-F", r"w_layout='NXHW'"),
    ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NNNN-NNNN-NNNN-FP32-F", r"layout='NNNN'"),
    # arithmetic
    ("64-56-56-3x3-64-0-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", r"out_size_override=\(0, 56\)"),
    ("60-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F_g32", r"c=60: input channels must be divisible by groups=32"),
    ("64-56-56-3x3-60-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F_g32", r"k=60: output channels must be divisible"),
    # our _trans keys are written by us, in the modern form, for runnable convolutions only
    ("64-2-2-7x7-64-1-1-32-1x1-1x1-1x1-0-NCHW-FP32-B_trans", r"_trans key.*dilated filter 7 is larger"),
    ("512-4-14-14-1x1x1-1024-4-14-14-4-0x0-1x1x1-1x1x1-0-NCDHW-FP32-B_trans", r"_trans key.*2D pads 0x0"),
    ("64-28-28-3x3-32-56-56-16-1x1-2x2-1x1-0-NHWC-FP32-B_trans", r"_trans key.*legacy single layout"),
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


# -- MIOpen's own keys: every one kept as stated ---------------------------------------------------

FIXTURE = Path(__file__).with_name("miopen_fdb_keys.txt")
SHIPPED_DB = Path(__file__).resolve().parents[2] / "finddb" / "sm_90-132.sqlite"


def _fixture_keys() -> list[tuple[str, str]]:
    rows = [ln.split("\t") for ln in FIXTURE.read_text().splitlines() if ln and not ln.startswith("#")]
    assert all(len(r) == 2 for r in rows)
    return [(k, why) for k, why in rows]


def _filter_exceeds_padded_input(key: str) -> bool:
    """Straight from the key's text: does the dilated filter exceed the padded input of the forward
    view (x is the key's "in" for F and its "out" for B and W) along some dimension?"""
    t = key.split("_")[0].split("-")
    nd = 2 if "x" in t[3] else 3
    ins, filt = [int(v) for v in t[1:1 + nd]], [int(v) for v in t[1 + nd].split("x")]
    outs = [int(v) for v in t[3 + nd:3 + 2 * nd]]
    pads = [int(v) for v in t[4 + 2 * nd].split("x")][-nd:]
    pads = [0] * (nd - len(pads)) + pads
    dils = [int(v) for v in t[6 + 2 * nd].split("x")]
    x = ins if t[-1] == "F" else outs
    return any(d * (f - 1) + 1 > i + 2 * p for i, f, p, d in zip(x, filt, pads, dils))


def test_fixture_holds_every_kind_of_real_key():
    rows = _fixture_keys()
    kinds = collections.Counter(why for _, why in rows)
    # all 460 keys of MIOpen's shipped FindDBs that did not round-trip, and 3,000 that did
    assert kinds == {"ok": 3000, "filter": 364, "pads+layout": 84, "layout": 12}
    assert len({k for k, _ in rows}) == len(rows)
    keys = [k for k, _ in rows]
    for part in ("-NHWC-NHWC-NHWC-", "-NCDHW-", "-BF16-", "-FP16-", "INT8", "_g", "-B", "-W"):
        assert any(part in k for k in keys), part


def test_every_real_miopen_key_round_trips_byte_exact():
    for key, _ in _fixture_keys():
        p = P.from_key(key)
        assert p.key() == key
        assert P.from_key(p.key()) == p


def test_real_keys_no_solver_runs_are_not_solvable_and_say_why():
    for key, kind in _fixture_keys():
        p = P.from_key(key)
        assert p.solvable == (kind == "ok") == (p.unsolvable_reason is None), key
        why = p.unsolvable_reason or ""
        assert ("dilated filter" in why) == _filter_exceeds_padded_input(key), (key, why)
        assert ("2D pads" in why) == (kind == "pads+layout"), (key, why)
        assert ("2D layout NCHW" in why) == (kind in ("pads+layout", "layout")), (key, why)


def test_shipped_db_keys_round_trip_and_are_solvable():
    """The keys of the FindDB we ship keep their format (read-only: the file's bytes are not touched)."""
    con = sqlite3.connect(f"file:{SHIPPED_DB}?mode=ro", uri=True)
    try:
        keys = {k for t in ("find_records", "perf_records") for (k,) in con.execute(f"SELECT problem_key FROM {t}")}
    finally:
        con.close()
    assert len(keys) > 1000
    for k in keys:
        p = P.from_key(k)
        assert p.key() == k and p.solvable and p.key_pads is None and p.key_layouts is None


# one real key of each kind
K_FILTER = "4096-1-1-7x7-512-1-1-64-0x0-1x1-1x1-0-NCHW-FP32-W"
K_PADS = "512-4-14-14-1x1x1-1024-4-14-14-4-0x0-1x1x1-1x1x1-0-NCHW-FP32-B"
K_LAYOUT = "3-16-112-112-3x7x7-64-16-56-56-4-1x3x3-1x2x2-1x1x1-0-NCHW-FP32-F"


def test_filter_larger_than_padded_input_is_kept_as_stated():
    """MIOpen sizes such an output max(1, ...); the key states it, and no solver runs it."""
    p = P.from_key(K_FILTER)
    assert (p.direction, p.c, p.k, p.in_size, p.filter_size, p.out_size) == ("W", 512, 4096, (1, 1), (7, 7), (1, 1))
    assert p.out_size_override == (1, 1)
    assert p.unsolvable_reason == ("the dilated filter 7 is larger than the padded input 1+2*0 along spatial dim 0 "
                                   "(the key states output size 1)")
    for d in "FB":
        q = p.with_direction(d)
        assert P.from_key(q.key()) == q and not q.solvable
    # building such a problem by hand (no stated output) is still an error
    with pytest.raises(ValueError, match=r"filter_size=\(7, 7\): dilated filter 7 is larger"):
        P.make("W", n=64, c=512, k=4096, in_size=(1, 1), filter_size=7)


def test_3d_key_with_2d_pads_is_kept_as_stated():
    p = P.from_key(K_PADS)
    assert (p.spatial_dims, p.in_size, p.out_size) == (3, (4, 14, 14), (4, 14, 14))
    assert (p.key_pads, p.pads, p.key_layouts, p.layouts) == ((0, 0), (0, 0, 0), ("NCHW",), ("NCDHW",) * 3)
    assert p.unsolvable_reason == ("the key states 2D pads 0x0 for a 3D problem (the depth pad is unknown); "
                                   "the key labels a 3D problem with the 2D layout NCHW (its memory layout is unknown)")
    assert p.network_config() == "512x4x14x14x1x1x1x1024x4x14x14x4xNCHWxFP32x0x0x1x1x1x1x1x1x1xBxDefault"
    # the same problem written properly is another (solvable) problem
    proper = P.from_key(K_PADS.replace("-0x0-", "-0x0x0-").replace("-NCHW-", "-NCDHW-"))
    assert proper.solvable and proper != p and proper.network_config() != p.network_config()
    # NCDHW with 2D pads is kept too
    q = P.from_key(K_PADS.replace("-NCHW-", "-NCDHW-"))
    assert q.key() == K_PADS.replace("-NCHW-", "-NCDHW-") and q.key_layouts is None and not q.solvable


def test_3d_key_labelled_nchw_is_kept_as_stated():
    p = P.from_key(K_LAYOUT)
    assert (p.in_size, p.filter_size, p.pads, p.strides, p.out_size) == \
        ((16, 112, 112), (3, 7, 7), (1, 3, 3), (1, 2, 2), (16, 56, 56))
    assert (p.layouts, p.key_layouts, p.key()) == (("NCDHW",) * 3, ("NCHW",), K_LAYOUT)
    assert p.unsolvable_reason == "the key labels a 3D problem with the 2D layout NCHW (its memory layout is unknown)"
    assert P.from_key(K_LAYOUT.replace("-NCHW-", "-NCDHW-")).solvable
    # three tokens, one of them 2D, in key order for B (dy, w, dx)
    k3 = K_LAYOUT.replace("-NCHW-", "-NDHWC-NCHW-NDHWC-")[:-1] + "B"
    q = P.from_key(k3)
    assert q.key() == k3 and q.layouts == ("NDHWC", "NCDHW", "NDHWC") and q.key_layouts == ("NDHWC", "NCHW", "NDHWC")
    assert "2D layout NCHW" in q.unsolvable_reason


def test_every_solver_says_why_it_cannot_run_a_kept_key():
    from miofind.registry import applicability_table

    for key in (K_FILTER, K_PADS, K_LAYOUT):
        p = P.from_key(key)
        for solver, a in applicability_table(p):
            assert not a, (solver.id, key)
            # cuDNN's solvers first say when the cuDNN frontend is missing (solvers/cudnn_base.py)
            assert a.reason == p.unsolvable_reason or solver.family == "cudnn" and "cuDNN" in a.reason, \
                (solver.id, a.reason)


BASE3 = dict(direction="F", n=4, c=8, k=8, in_size=(4, 14, 14), filter_size=(1, 1, 1), pads=(0, 0, 0),
             strides=(1, 1, 1), dilations=(1, 1, 1), layouts=("NCDHW",) * 3)


@pytest.mark.parametrize("kw,match", [
    (dict(key_pads=(0, 0, 0)), r"key_pads=\(0, 0, 0\): expected None or two"),
    (dict(key_pads=(0, -1)), r"key_pads=\(0, -1\)"),
    (dict(key_pads=[0, 0]), r"key_pads=\[0, 0\]"),
    (dict(key_pads=(1, 1)), r"pads=\(0, 0, 0\): expected \(0, 1, 1\) to match key_pads"),
    (dict(key_layouts=("NCHW", "NCHW")), r"key_layouts=\('NCHW', 'NCHW'\): expected None or a tuple of 1 or 3"),
    (dict(key_layouts=("NCW",)), r"key_layouts=\('NCW',\): 'NCW' is not a layout name of a 3D problem"),
    (dict(key_layouts=("NCHW",), layouts=("NDHWC",) * 3), r"layouts=.*expected \('NCDHW', 'NCDHW', 'NCDHW'\)"),
    # only the legacy NCHW label stands for a 3D layout: another 2D name would be read back as NCDHW
    (dict(key_layouts=("NHWC",)), r"key_layouts=\('NHWC',\): 'NHWC' is not a layout name of a 3D problem"),
    (dict(key_layouts=("NCWH",)), r"'NCWH' is not a layout name of a 3D problem"),
    (dict(key_layouts=("NCHWc",)), r"'NCHWc' is not a layout name of a 3D problem"),
    (dict(key_layouts=("NCHW",), transposed=True), r"key_layouts=.*not for a transposed"),
    (dict(key_pads=(0, 0), transposed=True), r"key_pads=.*not for a transposed"),
])
def test_key_form_fields_are_checked(kw, match):
    with pytest.raises(ValueError, match=match):
        P(**{**BASE3, **kw})


def test_key_form_fields_equal_to_the_canonical_form_are_dropped():
    assert P(**BASE3, key_layouts=("NCDHW",)).key_layouts is None
    assert P(**BASE3, key_layouts=("NCDHW",) * 3).key_layouts is None
    assert P(**BASE3, key_layouts=("NCDHW",)) == P(**BASE3)
    assert P(**{**BASE3, "in_size": (4, 14), "filter_size": (1, 1), "pads": (0, 0), "strides": (1, 1),
                "dilations": (1, 1), "layouts": ("NCHW",) * 3}, key_layouts=("NCHW",)).key_layouts is None


# -- hostile keys (issue 15) ------------------------------------------------------------------------

K2 = "64-56-56-3x3-64-56-56-{n}-1x1-1x1-1x1-0-{lay}-FP32-F"
K3 = "1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1x1-1x1x1-0-{lay}-FP16-F"


@pytest.mark.parametrize("n,match", [
    ("9" * 5000, r"longer than 1024 characters"),
    ("9" * 900, r"^key field batch='9999.*' \(902 characters\): must be below 2\^63"),
    ("9223372036854775808", r"^key field batch='9223372036854775808': must be below 2\^63"),
    ("99999999999999999999", r"^key field batch='99999999999999999999': must be below 2\^63"),
])
def test_huge_numbers_name_the_field(n, match):
    """A 5,000-digit number once gave Python's "Exceeds the limit (4300 digits)", naming nothing."""
    with pytest.raises(ValueError, match=match) as ei:
        P.from_key(K2.format(n=n, lay="NCHW"))
    msg = str(ei.value)
    assert "\n" not in msg and "Exceeds the limit" not in msg and len(msg) < 400


def test_largest_64_bit_field_round_trips():
    k = K2.format(n=2**63 - 1, lay="NCHW")
    assert P.from_key(k).key() == k and P.from_key(k).n == 2**63 - 1


@pytest.mark.parametrize("tail", ["\n", "\n-", " "])
def test_tokens_must_be_whole_integers(tail):
    """'$' matched before a trailing newline: '32\\n' read as 32 and the key wrote back without it."""
    k = K2.format(n="32" + tail, lay="NCHW")
    try:
        p = P.from_key(k)
    except ValueError as e:
        assert "batch" in str(e) or "fields" in str(e)
    else:
        assert p.key() == k.strip()


@pytest.mark.parametrize("lay", ["NCWH", "NCHWc", "NHWC", "CHWN", "NCHW-NCWH-NCHW"])
def test_3d_key_takes_only_the_legacy_nchw_label(lay):
    """A 2D layout name on a 3D key was read as NCDHW whatever it said (so NCWH and NCHWc came back as
    NCDHW); only NCHW, which MIOpen wrote for 3D problems, stands for the default 3D layout."""
    with pytest.raises(ValueError, match=r"layout=.*3D problem"):
        P.from_key(K3.format(lay=lay))
    legacy = P.from_key(K3.format(lay="NCHW"))
    assert legacy.layouts == ("NCDHW",) * 3 and legacy.key() == K3.format(lay="NCHW")


@pytest.mark.parametrize("lay", ["NCWH", "NCHWc", "NWHC", "CHWNc", "NHWC-HWNC-NCHW"])
def test_2d_layout_names_write_back_as_given(lay):
    k = K2.format(n=32, lay=lay)
    p = P.from_key(k)
    assert p.key() == k and P.from_key(p.key()) == p


@pytest.mark.parametrize("key", [None, 3, b"64-56", "", "x" * 2000, "\0", "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F\0"])
def test_non_keys_are_one_line_value_errors(key):
    with pytest.raises(ValueError) as ei:
        P.from_key(key)
    assert "\n" not in str(ei.value) and len(str(ei.value)) < 400
