"""The float64 numpy reference: brute force on tiny shapes, and the adjoint identities
<F(x, w), dy> = <x, B(dy, w)> = <w, W(dy, x)> on every layout, group count, stride, dilation and 3D."""

import itertools

import numpy as np
import pytest

from miofind.problem import ProblemDescription
from miofind.reference import conv_reference

CASES = [
    dict(n=2, c=4, k=6, in_size=(7, 5), filter_size=(3, 2), pads=(1, 0), strides=(2, 1), dilations=(1, 2), groups=2),
    dict(n=1, c=3, k=3, in_size=(6, 6), filter_size=3, pads=1, groups=3),
    dict(n=2, c=2, k=4, in_size=(4, 5, 6), filter_size=(2, 3, 3), pads=(0, 1, 1), strides=(1, 2, 1)),
    dict(n=1, c=2, k=2, in_size=(9,), filter_size=(3,), pads=(1,), strides=(2,)),
    dict(n=3, c=3, k=6, in_size=(6, 7), filter_size=3, pads=1, strides=(1, 2), groups=3),   # depthwise x2
    dict(n=2, c=6, k=3, in_size=(5, 5), filter_size=(2, 3), pads=(1, 1), dilations=(2, 1), groups=3),
]
CASES_2D = [c for c in CASES if len(c["in_size"]) == 2]


def brute_forward(x, w, pads, strides, dils, groups):
    n, c, h, wd = x.shape
    k, cpg, r, s = w.shape
    ho = (h + 2 * pads[0] - dils[0] * (r - 1) - 1) // strides[0] + 1
    wo = (wd + 2 * pads[1] - dils[1] * (s - 1) - 1) // strides[1] + 1
    y = np.zeros((n, k, ho, wo))
    kpg = k // groups
    for b, kk, i, j in itertools.product(range(n), range(k), range(ho), range(wo)):
        g = kk // kpg
        for cc, rr, ss in itertools.product(range(cpg), range(r), range(s)):
            ih, iw = i * strides[0] - pads[0] + rr * dils[0], j * strides[1] - pads[1] + ss * dils[1]
            if 0 <= ih < h and 0 <= iw < wd:
                y[b, kk, i, j] += x[b, g * cpg + cc, ih, iw] * w[kk, cc, rr, ss]
    return y


@pytest.mark.parametrize("case", CASES_2D)
def test_forward_matches_brute_force(case):
    rng = np.random.default_rng(0)
    p = ProblemDescription.make("F", **case)
    x, w = rng.standard_normal(p.x_shape), rng.standard_normal(p.w_shape)
    ref = brute_forward(x, w, p.pads, p.strides, p.dilations, p.groups)
    np.testing.assert_allclose(conv_reference(p, x, w), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_adjoint_identities(case, channels_last):
    rng = np.random.default_rng(1)
    nd = 3 if len(case["in_size"]) == 3 else 2
    layout = {(2, False): "NCHW", (2, True): "NHWC", (3, False): "NCDHW", (3, True): "NDHWC"}[(nd, channels_last)]
    f = ProblemDescription.make("F", layout=layout, **case)
    x, w, dy = rng.standard_normal(f.x_shape), rng.standard_normal(f.w_shape), rng.standard_normal(f.y_shape)
    y = conv_reference(f, x, w)
    dx = conv_reference(f.with_direction("B"), dy, w)
    dw = conv_reference(f.with_direction("W"), dy, x)
    lhs = np.vdot(y, dy)
    assert lhs == pytest.approx(np.vdot(x, dx), rel=1e-10)
    assert lhs == pytest.approx(np.vdot(w, dw), rel=1e-10)


def test_transposed_forward_is_backward_data():
    rng = np.random.default_rng(2)
    t = ProblemDescription.make("F", n=2, c=4, k=6, in_size=(5, 5), filter_size=3, pads=1, strides=2,
                                transposed=True, output_padding=1)
    assert t.out_size == (10, 10)
    x, w = rng.standard_normal(t.x_shape), rng.standard_normal(t.w_shape)
    y = conv_reference(t, x, w)
    assert y.shape == t.y_shape
    conv = t.as_conv()
    np.testing.assert_allclose(y, conv_reference(conv, x, w))


def test_stated_output_size_larger_than_formula():
    """'same' padding at stride 2 (MIOpen): out = ceil(in/stride); the extra row reads zeros."""
    rng = np.random.default_rng(3)
    p = ProblemDescription.from_key("4-8-8-3x3-2-4-4-1-0x0-2x2-1x1-0-NCHW-FP32-F")
    assert p.out_size == (4, 4)
    x, w = rng.standard_normal(p.x_shape), rng.standard_normal(p.w_shape)
    xp = np.zeros((1, 4, 10, 10))
    xp[:, :, :8, :8] = x
    ref = brute_forward(xp, w, (0, 0), (2, 2), (1, 1), 1)[:, :, :4, :4]
    np.testing.assert_allclose(conv_reference(p, x, w), ref, rtol=1e-12, atol=1e-12)
    dy = rng.standard_normal(p.y_shape)
    y = conv_reference(p, x, w)
    dx = conv_reference(p.with_direction("B"), dy, w)
    dw = conv_reference(p.with_direction("W"), dy, x)
    assert np.vdot(y, dy) == pytest.approx(np.vdot(x, dx)) == pytest.approx(np.vdot(w, dw))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("direction", "FBW")
def test_batch_chunks_give_the_whole_batch_result(case, direction):
    """A bound on the temporaries takes the batch in chunks (the GPU reference of large problems): the same
    result, W summed over the chunks."""
    from miofind.reference import reference_bytes_per_sample

    rng = np.random.default_rng(4)
    p = ProblemDescription.make(direction, **dict(case, n=5))
    a_shape, b_shape, _ = p.io_shapes()
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    whole = conv_reference(p, a, b)
    for per in (1, 2):
        chunked = conv_reference(p, a, b, max_bytes=per * reference_bytes_per_sample(p))
        np.testing.assert_allclose(chunked, whole, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("widths", [[(1, 1), (1, 1)], [(0, 0), (3, 2)], [(2, 0), (0, 1)], [(1, 1), (0, 0), (2, 3)]])
def test_padded_is_numpys_pad_and_x_itself_without_padding(widths):
    from miofind.reference import _padded

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3) + (4, 5, 3)[:len(widths)])
    got = _padded(np, x, widths)
    assert got.shape == tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, [(0, 0), (0, 0)] + widths))
    assert np.array_equal(got, np.pad(x, [(0, 0), (0, 0)] + widths))
    assert _padded(np, x, [(0, 0)] * len(widths)) is x
