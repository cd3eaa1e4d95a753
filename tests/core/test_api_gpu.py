"""find_solutions / run_solution on the GPU: verified sorted results, the FindDB round trip, array
interop and argument errors; and agreement with PyTorch's conv and its gradients on random shapes."""

import os
import time

import numpy as np
import pytest

from miofind import ProblemDescription, find_solutions, run_solution


@pytest.mark.gpu
def test_find_then_db(tmp_db):
    p = ProblemDescription.make("F", n=2, c=8, k=8, in_size=(12, 12), filter_size=3, pads=1)
    first = find_solutions(p, db=tmp_db, with_naive=True, cut_factor=0, defer=False)   # every candidate gets a record
    assert first.source == "find" and first.stored
    assert {"ConvDirectNaiveConvFwd", "ConvDirectTiledFwd"} <= {s.solver_id for s in first}
    assert all(s.verified and s.max_error < 1e-5 for s in first)
    assert [s.time_ms for s in first] == sorted(s.time_ms for s in first)
    t0 = time.perf_counter()
    second = find_solutions(p, db=tmp_db, with_naive=True)
    assert (time.perf_counter() - t0) < 0.5
    assert second.source == "db" and all(s.source == "db" for s in second)
    assert [s.solver_id for s in second] == [s.solver_id for s in first]
    third = find_solutions(p, db=tmp_db, mode="benchmark")
    assert third.source == "find"


@pytest.mark.gpu
def test_find_each_direction_and_workspace_sort(tmp_db):
    for d in "FBW":
        p = ProblemDescription.make(d, n=1, c=4, k=4, in_size=(9, 9), filter_size=3, pads=1, dtype="FP16")
        res = find_solutions(p, db=tmp_db, sort_by="workspace")
        # every fully timed solution is verified; one cut early (clearly slower) is listed unverified
        assert res and all(s.verified != s.cut for s in res) and any(s.verified for s in res)


@pytest.mark.gpu
def test_run_solution_arrays(tmp_db):
    import cupy

    p = ProblemDescription.make("F", n=2, c=4, k=6, in_size=(8, 8), filter_size=3, pads=1)
    best = find_solutions(p, db=tmp_db)[0]
    x = cupy.random.standard_normal(p.x_shape, dtype=cupy.float32)
    w = cupy.random.standard_normal(p.w_shape, dtype=cupy.float32)
    y = run_solution(best, x, w)
    y2 = cupy.full(p.y_shape, cupy.nan, dtype=cupy.float32)
    assert run_solution(best, x, w, y2) is y2
    cupy.testing.assert_allclose(y, y2, rtol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        run_solution(best, x[:, :2], w)
    with pytest.raises(ValueError, match="dtype"):
        run_solution(best, x.astype(cupy.float16), w)
    with pytest.raises(ValueError, match="CUDA array"):
        run_solution(best, cupy.asnumpy(x), w)


def _torch():
    return pytest.importorskip("torch")


def _random_problem(rng, nd):
    """A random problem drawn at run time (not from tests/shapes.py)."""
    g = int(rng.choice([1, 1, 2, 3]))
    c, k = g * int(rng.integers(1, 6)), g * int(rng.integers(1, 6))
    f = tuple(int(v) for v in rng.integers(1, 5, nd))
    dil = tuple(int(v) for v in rng.integers(1, 3, nd))
    pad = tuple(int(rng.integers(0, fi)) for fi in f)
    stride = tuple(int(v) for v in rng.integers(1, 3, nd))
    size = tuple(int(dil[i] * (f[i] - 1) + 1 + rng.integers(0, 9 if nd == 2 else 5)) for i in range(nd))
    return dict(n=int(rng.integers(1, 4)), c=c, k=k, in_size=size, filter_size=f, pads=pad, strides=stride,
                dilations=dil, groups=g)


@pytest.mark.gpu
@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("trial", range(6))
def test_matches_torch_and_gradients(nd, trial, tmp_db):
    torch = _torch()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    seed = int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    kw = _random_problem(rng, nd)
    f = ProblemDescription.make("F", **kw)
    x = torch.randn(f.x_shape, device="cuda", dtype=torch.float64, requires_grad=True)
    w = torch.randn(f.w_shape, device="cuda", dtype=torch.float64, requires_grad=True)
    conv = torch.nn.functional.conv2d if nd == 2 else torch.nn.functional.conv3d
    y = conv(x, w, stride=f.strides, padding=f.pads, dilation=f.dilations, groups=f.groups)
    dy = torch.randn_like(y)
    dx, dw = torch.autograd.grad(y, (x, w), dy)
    x32, w32, dy32 = (t.detach().float().contiguous() for t in (x, w, dy))
    for d, (a, b), ref in (("F", (x32, w32), y), ("B", (dy32, w32), dx), ("W", (dy32, x32), dw)):
        p = f.with_direction(d)
        for sol in find_solutions(p, db=tmp_db):
            out = run_solution(sol, a, b)
            assert isinstance(out, torch.Tensor)
            err = (out.double() - ref.detach()).norm() / ref.detach().norm()
            assert err < 1e-5, f"seed={seed} {p.key()} {sol.solver_id}: rel err {float(err):.3g}"
