"""Programmatic dependent launches within a Hopper implicit-GEMM solution (``Launch(pdl=True)``, MIOFIND_PDL):
which launches go as dependents (CPU, fake kernels: a solution's first launch never; a split's reduce, which waits
on the device for the partials; an unsplit stride phase of backward data after the launch before it, whose pixels
are disjoint), and on the GPU that the results equal plain launches bit for bit, that an op queued right after the
solution reads its finished output, and that a CUDA graph captures it."""

from __future__ import annotations

import pytest

from gpu_helpers import FakeKernel
from miofind.problem import ProblemDescription
from miofind.registry import get_solver

FWD, BWD, WRW = (get_solver(f"ConvImplicitGemmHopper{d}") for d in ("Fwd", "Bwd", "Wrw"))


def _p(direction, dt="FP16", **kw):
    return ProblemDescription.make(direction, layout="NHWC", dtype=dt, **kw)


R50_3X3S2 = dict(n=32, c=128, k=128, in_size=(56, 56), filter_size=3, pads=1, strides=2)
R50_1X1S2 = dict(n=32, c=512, k=1024, in_size=(28, 28), filter_size=1, strides=2)
SMALL_3X3S2 = dict(n=2, c=64, k=256, in_size=(14, 14), filter_size=3, pads=1, strides=2)
F_3X3 = dict(n=2, c=64, k=64, in_size=(14, 14), filter_size=3, pads=1)
W_1X1 = dict(n=4, c=64, k=64, in_size=(28, 28), filter_size=1)


def _split(solver, p):
    """A valid config of ``p`` with a global split (SPLITK > 1, no cluster), copy-engine loads where one has them."""
    cfgs = sorted(solver.config_space(p), key=lambda c: -c.get("TMA", 0))
    for cfg in cfgs:
        if cfg["SPLITK"] > 1 and cfg.get("CLUSTER", 1) == 1 and len(solver.get_solution(p, cfg).kernels) > 1:
            return cfg
    raise AssertionError(f"no split config of {solver.id} for {p.key()}")


def _cluster(p):
    return next(c for c in WRW.config_space(p) if c["CLUSTER"] > 1)


def _flags(solver, p, cfg=None):
    """Each launch of the solution's recipe, in order: (kernel name, pdl)."""
    sol = solver.get_solution(p, cfg)
    inv = sol.invoker_factory([FakeKernel() for _ in sol.kernels])
    names = iter(k.name for k in sol.kernels)
    return [(next(names), launch.pdl) for launch, _, _ in inv.recipe[0]]



def test_bwd_phases_after_the_first_are_dependents(no_gpu_arch):
    got = _flags(BWD, _p("B", **R50_3X3S2))
    assert [f for _, f in got] == [False, True, True, True]        # 4 phases of a 3x3 stride-2 filter
    assert {n for n, _ in got} == {"igemm_hopper_fwd"}


def test_bwd_zeroing_then_a_dependent_phase(no_gpu_arch):
    got = _flags(BWD, _p("B", **R50_1X1S2))
    assert got == [("igemm_hopper_bwd_zero", False), ("igemm_hopper_fwd", True)]


def test_bwd_split_phases_wait_in_stream_order(no_gpu_arch):
    """A split phase's main kernel writes the partial planes the reduce before it reads: a plain launch; each
    reduce is a dependent of its phase's main kernel."""
    p = _p("B", **SMALL_3X3S2)
    got = _flags(BWD, p, _split(BWD, p))
    assert any(name.endswith("_reduce") for name, _ in got) and not got[0][1]
    for (name, pdl), (prev, _) in zip(got[1:], got):
        if name.endswith("_reduce"):
            assert pdl and prev == "igemm_hopper_fwd"
        elif prev.endswith("_reduce"):
            assert not pdl


def test_fwd_and_wrw_reduce_is_a_dependent(no_gpu_arch):
    pf = _p("F", **F_3X3)
    assert _flags(FWD, pf, _split(FWD, pf)) == [("igemm_hopper_fwd", False), ("igemm_hopper_fwd_reduce", True)]
    pw = _p("W", **W_1X1)
    assert _flags(WRW, pw, _split(WRW, pw)) == [("igemm_hopper_wrw", False), ("igemm_hopper_wrw_reduce", True)]


def test_single_launches_stay_plain(no_gpu_arch):
    pf, pw = _p("F", **F_3X3), _p("W", **W_1X1)
    assert _flags(FWD, pf) == [("igemm_hopper_fwd", False)]
    assert _flags(WRW, pw, dict(_split(WRW, pw), SPLITK=1)) == [("igemm_hopper_wrw", False)]
    assert _flags(WRW, pw, _cluster(pw)) == [("igemm_hopper_wrw", False)]
    assert _flags(BWD, _p("B", n=2, c=64, k=64, in_size=(14, 14), filter_size=3, pads=1)) == [
        ("igemm_hopper_fwd", False)]


# -- on the GPU ----------------------------------------------------------------------------------------------------

def _gpu_cases():
    """(name, solver, problem, config or None): each dependent-launch pattern, FP16 and BF16."""
    out = []
    for dt in ("FP16", "BF16"):
        pb, pbs, pf, pw = _p("B", dt, **SMALL_3X3S2), _p("B", dt, **R50_3X3S2), _p("F", dt, **F_3X3), _p("W", dt, **W_1X1)
        out += [(f"bwd_phases_{dt}", BWD, pbs, None), (f"bwd_small_{dt}", BWD, pb, None),
                (f"bwd_zero_{dt}", BWD, _p("B", dt, **R50_1X1S2), None),
                (f"bwd_split_{dt}", BWD, pb, "split"), (f"bwd_unsplit_{dt}", BWD, pb, "unsplit"),
                (f"fwd_split_{dt}", FWD, pf, "split"),
                (f"wrw_split_{dt}", WRW, pw, "split")]
    return out


GPU_CASES = _gpu_cases()


def _config(solver, p, cfg):
    """The case's config: its split one, its default unsplit, or the default."""
    if cfg == "split":
        return _split(solver, p)
    if cfg == "unsplit":
        out = dict(solver.default_config(p), SPLITK=1)
        assert solver.is_valid_config(p, out)
        return out
    return cfg


def _invoke(solver, p, cfg, a, b, pdl, monkeypatch, stream=None, check_dependents=True):
    """A fresh invoker of (solver, p, cfg) bound with MIOFIND_PDL=pdl, run once on a poisoned output: the output."""
    import cupy

    from miofind.invokers import build_invoker
    from miofind.verify import poison

    monkeypatch.setenv("MIOFIND_PDL", "1" if pdl else "0")
    sol = solver.get_solution(p, cfg)
    inv = build_invoker(p, sol)
    if check_dependents:
        assert any(launch.dependent() for launch, _, _ in inv.recipe[0]) == pdl
    out = cupy.empty(p.io_shapes()[2], dtype=a.dtype)
    poison(out, p.dtype)
    ws = cupy.empty(max(1, sol.workspace_bytes), dtype=cupy.uint8)
    s = stream or cupy.cuda.get_current_stream()
    inv(a.data.ptr, b.data.ptr, out.data.ptr, ws.data.ptr if sol.workspace_bytes else 0, s.ptr)
    return out, inv, ws, sol


def _inputs(p, seed):
    import cupy

    from miofind.verify import random_array

    rng = cupy.random.default_rng(seed)
    sa, sb, _ = p.io_shapes()
    return random_array(sa, p.dtype, rng), random_array(sb, p.dtype, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("name,solver,p,cfg", GPU_CASES, ids=[c[0] for c in GPU_CASES])
def test_dependent_launches_equal_plain_ones(name, solver, p, cfg, monkeypatch):
    """Bit for bit (the kernels' sums run in a fixed order), and within the float64 reference's tolerance."""
    import cupy

    from miofind.reference import conv_reference
    from miofind.verify import rel_error, to_float64, tolerance

    cfg = _config(solver, p, cfg)
    a, b = _inputs(p, 11)
    on, _, _, _ = _invoke(solver, p, cfg, a, b, True, monkeypatch)
    off, _, _, _ = _invoke(solver, p, cfg, a, b, False, monkeypatch)
    cupy.cuda.get_current_stream().synchronize()
    assert bool((on.view(cupy.uint16) == off.view(cupy.uint16)).all()), f"{name}: PDL and plain launches differ"
    if p.n <= 4:
        dt = p.dtype
        ref = conv_reference(p, cupy.asnumpy(to_float64(a, dt)), cupy.asnumpy(to_float64(b, dt)))
        err = rel_error(to_float64(on, dt), cupy.asarray(ref))
        assert err <= tolerance(dt, solver.family, p.direction, p.math), f"{name}: relative error {err:.3g}"


@pytest.mark.gpu
@pytest.mark.parametrize("name,solver,p,cfg", [c for c in GPU_CASES if c[3] != "split" or "wrw" in c[0]],
                         ids=[c[0] for c in GPU_CASES if c[3] != "split" or "wrw" in c[0]])
def test_an_op_queued_after_reads_the_finished_output(name, solver, p, cfg, monkeypatch):
    """The solution, then at once (no synchronisation) a copy of its output on the same stream, 20 times on new
    inputs into a freshly poisoned output: every copy equals the plain launches' result. A dependent launch that
    could end before the launch it depends on would let the copy read unwritten (NaN) or stale pixels."""
    import cupy

    from miofind.verify import poison

    cfg = _config(solver, p, cfg)
    s = cupy.cuda.Stream(non_blocking=True)
    for i in range(20):
        with s:     # the inputs made on s too: a non-blocking stream does not wait for the legacy default stream
            a, b = _inputs(p, 100 + i)
            ref, _, _, _ = _invoke(solver, p, cfg, a, b, False, monkeypatch, stream=s)
            out, inv, ws, sol = _invoke(solver, p, cfg, a, b, True, monkeypatch, stream=s)
            for _ in range(3):
                poison(out, p.dtype)
                inv(a.data.ptr, b.data.ptr, out.data.ptr, ws.data.ptr if sol.workspace_bytes else 0, s.ptr)
                got = out.copy()
                assert bool((got.view(cupy.uint16) == ref.view(cupy.uint16)).all()), f"{name}: round {i}"


@pytest.mark.gpu
@pytest.mark.parametrize("name,solver,p,cfg", [c for c in GPU_CASES if c[2].n <= 4],
                         ids=[c[0] for c in GPU_CASES if c[2].n <= 4])
def test_captured_in_a_cuda_graph(name, solver, p, cfg, monkeypatch):
    """Captured with dependent launches (programmatic edges) and replayed on new contents of the same buffers:
    equal to the eager plain launches."""
    import cupy

    from miofind.verify import poison, random_array

    cfg = _config(solver, p, cfg)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        a, b = _inputs(p, 21)
        out, inv, ws, sol = _invoke(solver, p, cfg, a, b, True, monkeypatch, stream=s)
        wsp = ws.data.ptr if sol.workspace_bytes else 0
        poison(out, p.dtype)
        s.begin_capture()
        inv(a.data.ptr, b.data.ptr, out.data.ptr, wsp, s.ptr)
        graph = s.end_capture()
        rng = cupy.random.default_rng(22)
        a[...] = random_array(a.shape, p.dtype, rng)
        b[...] = random_array(b.shape, p.dtype, rng)
        graph.launch(s)
        ref, _, _, _ = _invoke(solver, p, cfg, a, b, False, monkeypatch, stream=s)
    s.synchronize()
    assert bool((out.view(cupy.uint16) == ref.view(cupy.uint16)).all()), f"{name}: the graph's result differs"
