"""cuDNN family: what it claims over tests/shapes.py given an installed frontend, pinned on the CPU; on
the GPU the default plan of every claimed solver x direction x dtype x layout, every plan of a few
problems, FP32 strict never running TF32, CuPy's stream honoured, transposed problems, and the find
integration; all against the numpy float64 reference with poisoned outputs.

The GPU tests need the cuDNN frontend (pip nvidia-cudnn-frontend) and the solvers registered; failures
print each plan's name, error and cuDNN's reason so they can be acted on without a rerun.
"""

import zlib
from unittest import mock

import numpy as np
import pytest

from gpu_helpers import STRICT, accepted, assert_claims_pinned, check_solver, claim_grid, params
from shapes import SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import solvers

from miofind.solvers import cudnn_base

# not importorskip: tests/cudnn itself would import as 'cudnn'
needs_frontend = pytest.mark.skipif(not cudnn_base.frontend_status()[0],
                                    reason=f"{cudnn_base.frontend_status()[1]} (pip install nvidia-cudnn-frontend)")

P = ProblemDescription.make
CUDNN = [s for s in solvers() if s.family == "cudnn"]
BY_DIR = {d: s for s in CUDNN for d in s.directions}
TF32_SHAPES = ("3x3_pad1", "groups2", "3d_3x3x3")
GRID = claim_grid(CUDNN, SHAPES, STRICT) + claim_grid(CUDNN, {n: SHAPES[n] for n in TF32_SHAPES},
                                                     [("FP32", "tf32")])
# what the claim grid's solvers accept: how many cases each, and which (gpu_helpers.claims_digest)
ACCEPTED = {"ConvCudnnFwd": 84, "ConvCudnnBwd": 84, "ConvCudnnWrw": 84}
ACCEPTED_DIGEST = "88365525"


def _with_frontend(fn):
    """fn() with the frontend reported installed: the claim then depends on the problem only, the same
    on every machine (without the frontend the GPU tests skip)."""
    with mock.patch.object(cudnn_base, "frontend_status", return_value=(True, "")):
        return fn()


def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode()) & 0xFFFF


def test_registered():
    assert {s.id for s in CUDNN} == {"ConvCudnnFwd", "ConvCudnnBwd", "ConvCudnnWrw"}, \
        "register ConvCudnnFwd/Bwd/Wrw (solvers/cudnn_fwd.py, cudnn_bwd.py, cudnn_wrw.py) in miofind/registry.py"


def test_cudnn_claims_pinned():
    """With a frontend, each solver takes every case of its direction (cuDNN itself rejects what it
    cannot run when the plans are built)."""
    _with_frontend(lambda: assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST))


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("claim", params(_with_frontend(lambda: accepted(GRID))))
def test_cudnn_default_plan(claim):
    solver, p = claim.solver, claim.problem()
    a = solver.applicability(p)
    assert a, f"{solver.id} rejected {p.key()}: {a.reason}"
    sol = solver.get_solution(p)
    err, tol = check_solver(solver, p, seed=_seed(claim.shape, claim.dtype, claim.layout, claim.math))
    assert err <= tol, f"{solver.id} {p.key()} plan {sol.config['plan']}: relative error {err:.3g} > {tol:.1g}"


# every plan of a few problems: (shape, direction, dtype, layout, math)
PLAN_CASES = [(sh, d, dt, lay, "strict") for d in "FBW" for sh, dt, lay in (
    ("3x3_odd", "FP32", "NCHW"), ("3x3_odd", "FP16", "NHWC"), ("3x3_odd", "BF16", "NHWC"),
    ("groups2", "FP32", "NHWC"), ("stride2", "FP16", "NCHW"), ("3d_3x3x3", "FP32", "NCDHW"))]
PLAN_CASES += [("3x3_pad1", d, "FP32", "NHWC", "tf32") for d in "FBW"]


def _plan_report(rows) -> str:
    return "\n".join(f"  [{r['index']}] {r['name']}: "
                     + (f"ws={r['workspace']} " if r["usable"] else "") + (r.get("result") or r["reason"] or "")
                     for r in rows)


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("shape,direction,dtype,layout,math", PLAN_CASES,
                         ids=[f"{sh}-{d}-{dt}-{lay}-{m}" for sh, d, dt, lay, m in PLAN_CASES])
def test_every_plan(shape, direction, dtype, layout, math):
    p = P(direction, layout=layout, dtype=dtype, math=math, **SHAPES[shape])
    solver = BY_DIR[direction]
    rows = cudnn_base.plan_table(p)
    usable = [r for r in rows if r["usable"]]
    assert usable, f"no cuDNN plan runs {p.key()} ({cudnn_base.versions()}):\n{_plan_report(rows)}"
    bad = []
    for r in usable:
        cfg = {"plan": r["name"]}
        try:
            sol = solver.get_solution(p, cfg)
            assert sol.workspace_bytes == r["workspace"] and sol.config == cfg
            err, tol = check_solver(solver, p, seed=_seed(shape, direction, dtype), config=cfg)
            r["result"] = f"err {err:.3g} (tol {tol:.1g})"
            if not err <= tol:
                bad.append(r)
        except Exception as e:
            r["result"] = f"FAILED {e.__class__.__name__}: {' '.join(str(e).split())[:400]}"
            bad.append(r)
    print(f"{p.key()} ({cudnn_base.versions()}):\n{_plan_report(rows)}")  # shown with -rP or -s
    assert not bad, (f"{len(bad)} of {len(usable)} cuDNN plans fail on {p.key()} ({cudnn_base.versions()}):\n"
                     f"{_plan_report(bad)}\nall plans:\n{_plan_report(rows)}")
    assert cudnn_base.cudnn_candidates(p) == [{"plan": r["name"]} for r in usable]


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("direction", "FBW")
def test_strict_fp32_runs_no_tf32(direction):
    """TF32 rounds inputs to 10 mantissa bits (relative error ~1e-4 to 1e-3 over a 576-term reduction);
    true FP32 stays near 1e-6. Every strict plan must be FP32-accurate, and math=tf32 must offer more plans."""
    kw = dict(n=2, c=64, k=32, in_size=(12, 12), filter_size=3, pads=1)
    strict = P(direction, **kw)
    tf32 = P(direction, math="tf32", **kw)
    solver = BY_DIR[direction]
    strict_plans = [n for n, _ in cudnn_base.list_plans(strict)]
    tf32_plans = [n for n, _ in cudnn_base.list_plans(tf32)]
    assert set(strict_plans) <= set(tf32_plans)
    assert len(tf32_plans) > len(strict_plans), \
        f"math=tf32 offers no plan beyond strict's {strict_plans}: the TENSOR_CORE filter may not be effective"
    errs = {}
    for name in strict_plans:
        errs[name] = check_solver(solver, strict, seed=1, config={"plan": name})[0]
    worst = max(errs.values())
    assert worst < 5e-5, f"strict FP32 plans with TF32-sized errors: { {n: f'{e:.2g}' for n, e in errs.items()} }"
    tf32_only = [n for n in tf32_plans if n not in strict_plans]
    tf32_errs = {n: check_solver(solver, tf32, seed=1, config={"plan": n})[0] for n in tf32_only}
    print(f"{direction}: strict {len(strict_plans)} plans, worst error {worst:.2g}; "
          f"tf32-only {len(tf32_only)} plans, errors { {n: f'{e:.2g}' for n, e in tf32_errs.items()} }")


@pytest.mark.gpu
@needs_frontend
def test_runs_on_cupy_current_stream():
    """Inputs are written on a non-blocking stream after a ~0.1 s spin; a plan that ran on any other stream
    would read the stale zeros."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.reference import conv_reference

    spin = cupy.RawKernel(r'''
    extern "C" __global__ void spin_copy(const float* src, float* dst, long long n, long long cycles) {
        long long t0 = clock64();
        while (clock64() - t0 < cycles) { }
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
            dst[i] = src[i];
    }''', "spin_copy")
    p = P("F", n=2, c=16, k=16, in_size=(20, 20), filter_size=3, pads=1)
    solver = BY_DIR["F"]
    rng = np.random.default_rng(3)
    x_true = cupy.asarray(rng.uniform(-1, 1, p.x_shape).astype(np.float32))
    w = cupy.asarray(rng.uniform(-1, 1, p.w_shape).astype(np.float32))
    sol = Solution(solver.id, solver.algorithm, 0.0, solver.workspace_bytes(p), None, False, p)
    run_solution(sol, x_true, w)  # build and warm up outside the timed race
    cupy.cuda.Device().synchronize()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        x = cupy.zeros_like(x_true)
        y = cupy.full(p.y_shape, cupy.nan, dtype=cupy.float32)
        s.synchronize()
        spin((8,), (128,), (x_true, x, np.int64(x.size), np.int64(200_000_000)))
        run_solution(sol, x, w, y)
        s.synchronize()
    ref = conv_reference(p, cupy.asnumpy(x_true).astype(np.float64), cupy.asnumpy(w).astype(np.float64))
    err = np.linalg.norm(cupy.asnumpy(y) - ref) / np.linalg.norm(ref)
    assert err < 1e-5, f"cuDNN did not run on CuPy's current stream (error {err:.3g})"


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("direction", "FBW")
def test_transposed(direction):
    t = P(direction, n=2, c=6, k=4, in_size=(7, 6), filter_size=3, pads=1, strides=2, transposed=True,
          output_padding=1, groups=2)
    solver = BY_DIR[t.as_conv().direction]
    assert solver.applicability(t)
    err, tol = check_solver(solver, t)
    assert err <= tol, (direction, err)


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("direction", "FBW")
def test_stated_output_size(direction):
    """An output size from a MIOpen key in 'same' mode (ceil(9/2) = 5, not the formula's 4): post-padding."""
    import dataclasses

    p = dataclasses.replace(P(direction, n=2, c=8, k=12, in_size=(9, 9), filter_size=3, strides=2, layout="NHWC"),
                            out_size_override=(5, 5))
    solver = BY_DIR[direction]
    assert solver.applicability(p)
    err, tol = check_solver(solver, p)
    assert err <= tol, (direction, err)


FUSED_CASES = [("FP16", "NHWC", 1, "relu"), ("BF16", "NHWC", 1, "gelu"), ("FP16", "NHWC", 0, "gelu"),
               ("FP32", "NCHW", 1, "none"), ("FP32", "NCHW", 1, "relu"), ("FP16", "NCHW", 1, "relu")]


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("dtype,layout,bias,act", FUSED_CASES, ids=[f"{d}-{l}-b{b}-{a}" for d, l, b, a in FUSED_CASES])
def test_fused_epilogue_graph(dtype, layout, bias, act):
    """A fused forward problem is one graph conv_fprop -> bias -> activation (the baseline of the Hopper fused
    forward): its default plan against the float64 reference with a random bias."""
    p = P("F", n=2, c=24, k=40, in_size=(11, 13), filter_size=3, pads=1, layout=layout, dtype=dtype, bias=bias,
          activation=act)
    solver = BY_DIR["F"]
    assert solver.applicability(p) and not BY_DIR["B"].applicability(P("B", n=2, c=24, k=40, in_size=(11, 13), bias=1))
    err, tol = check_solver(solver, p, seed=5)
    assert err <= tol, (p.key(), err)


@pytest.mark.gpu
@needs_frontend
def test_mixed_layouts():
    p = P("F", n=2, c=8, k=8, in_size=(9, 9), filter_size=3, pads=1, layout="NHWC", w_layout="NCHW",
          out_layout="NHWC")
    solver = BY_DIR["F"]
    assert solver.applicability(p)
    err, tol = check_solver(solver, p)
    assert err <= tol


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("direction", "FBW")
@pytest.mark.parametrize("dtype,layout", [("FP32", "NCHW"), ("FP16", "NHWC"), ("BF16", "NHWC")])
def test_backend_direct_and_public_execute_agree(direction, dtype, layout):
    """Every way the invoker runs a plan gives the public API's results on poisoned outputs, for the first plans
    of a strided, padded, grouped problem: the frontend's C++ binding called directly, the plan rebuilt through
    the backend API (``cudnn_execute``) called from Python, and the default invoker's native replay
    (``launch.replayer``: ``miofind._native``'s cudnn_run on the backend API's plan, as miofind.torch's C++ path
    replays it). Host time per call of each is printed."""
    import time

    import cupy

    from miofind import launch
    from miofind.invokers import call, ptr
    from miofind.verify import random_array

    p = P(direction, n=2, c=16, k=32, in_size=(14, 13), filter_size=3, pads=1, strides=2, groups=2, layout=layout,
          dtype=dtype)
    a_shape, b_shape, out_shape = {"F": (p.x_shape, p.w_shape, p.y_shape), "B": (p.y_shape, p.w_shape, p.x_shape),
                                   "W": (p.y_shape, p.x_shape, p.w_shape)}[direction]
    rng = cupy.random.default_rng(_seed("paths", direction, dtype))
    a, b = random_array(a_shape, dtype, rng), random_array(b_shape, dtype, rng)
    plans = cudnn_base.list_plans(p)[:4]
    assert plans
    stream = cupy.cuda.get_current_stream()
    for name, ws in plans:
        g, plan = cudnn_base.resolve(p, {"plan": name})
        buf = cupy.empty(ws, dtype=cupy.uint8) if ws else None
        outs, host_us = {}, {}
        runs = {path: (lambda inv: (lambda out: call(inv, p, a, b, out, buf)))(g.make_invoker(plan, path))
                for path in ("backend-python", "direct", "public")}
        for path in runs:
            assert g.make_invoker(plan, path).path == path, name
        inv = g.make_invoker(plan)
        assert inv.path == "backend" and getattr(inv, "traceable", False), (name, inv.path)
        got = launch.replayer(inv, bool(ws), stream.ptr)
        assert got, f"{name}: no native replay ({got!r})"
        run, kinds = got
        assert kinds == (1,)
        runs["native"] = lambda out: _check_zero(run(stream.ptr, ptr(a), ptr(b), ptr(out), ptr(buf) if ws else 0))
        for path, fn in runs.items():
            out = cupy.full(out_shape, cupy.nan, dtype=a.dtype)
            fn(out)
            stream.synchronize()
            t0 = time.perf_counter()
            for _ in range(50):
                fn(out)
            host_us[path] = (time.perf_counter() - t0) / 50 * 1e6
            stream.synchronize()
            outs[path] = out.astype(cupy.float32)
        ref = outs["public"]
        assert bool(cupy.isfinite(ref).all()), name
        scale = float(cupy.abs(ref).max()) or 1.0
        for path in ("backend-python", "direct", "native"):
            # the same engine and knobs: equal but for the order of a split reduction's atomic adds
            diff = float(cupy.abs(outs[path] - ref).max()) / scale
            assert diff <= (1e-5 if dtype == "FP32" else 1e-2), (name, path, diff)
        print(f"{p.key()} {name}: host us per call " + ", ".join(f"{k} {v:.1f}" for k, v in host_us.items()))


def _check_zero(status):
    assert status == 0, status


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("direction", "FBW")
@pytest.mark.parametrize("dtype,layout", [("FP32", "NCHW"), ("FP16", "NHWC"), ("BF16", "NHWC")])
def test_stored_plan_prepared_natively_equals_the_public_call(direction, dtype, layout):
    """A stored plan prepared where no heuristics graph is cached (a DB hit) runs as a NativePlan: no frontend graph
    is built, its call from Python and its native replay equal the public call of the same plan, on a strided, padded,
    grouped problem; a call with pointers off 16-byte alignment takes the frontend's plan, built then, which equals
    it too or refuses the pointers by name (CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, as before NativePlan)."""
    import cupy

    from miofind import launch
    from miofind.invokers import call, ptr
    from miofind.verify import random_array

    p = P(direction, n=2, c=16, k=32, in_size=(14, 13), filter_size=3, pads=1, strides=2, groups=2, layout=layout,
          dtype=dtype)
    a_shape, b_shape, out_shape = {"F": (p.x_shape, p.w_shape, p.y_shape), "B": (p.y_shape, p.w_shape, p.x_shape),
                                   "W": (p.y_shape, p.x_shape, p.w_shape)}[direction]
    rng = cupy.random.default_rng(_seed("native-plan", direction, dtype))
    a, b = random_array(a_shape, dtype, rng), random_array(b_shape, dtype, rng)
    stream = cupy.cuda.get_current_stream()

    def off(x):
        """x's values at an address one element past a 16-byte boundary."""
        flat = cupy.empty(x.size + 8, dtype=x.dtype)[1:1 + x.size]
        v = flat.reshape(x.shape)
        v[...] = x
        return v

    solver = BY_DIR[direction]
    names = [n for n, _ in cudnn_base.list_plans(p)][:3]
    assert names
    for name in names:
        cudnn_base.clear_cache()
        sol = solver.get_solution(p, {"plan": name})
        inv = sol.invoker_factory([])
        assert inv.path == "native" and not cudnn_base._graphs and not cudnn_base._replays, (name, inv.path)
        ws = sol.workspace_bytes
        buf = cupy.empty(ws, dtype=cupy.uint8) if ws else None
        outs = {}
        out = cupy.full(out_shape, cupy.nan, dtype=a.dtype)
        call(inv, p, a, b, out, buf)
        outs["python"] = out
        got = launch.replayer(inv, bool(ws), stream.ptr)
        assert got and got[1] == (1,), (name, got)
        out = cupy.full(out_shape, cupy.nan, dtype=a.dtype)
        _check_zero(got[0](stream.ptr, ptr(a), ptr(b), ptr(out), ptr(buf) if ws else 0))
        outs["replay"] = out
        assert not cudnn_base._graphs and not cudnn_base._replays, name
        out = off(cupy.full(out_shape, cupy.nan, dtype=a.dtype))
        try:
            call(inv, p, off(a), off(b), out, buf)
            outs["misaligned"] = out
        except cudnn_base.CudnnPlanError as e:
            # the frontend's plan was built for 16-byte aligned tensors as well: refused, by name
            assert "MISALIGNED" in str(e), e
        g, plan = cudnn_base.resolve(p, {"plan": name})
        ref = cupy.full(out_shape, cupy.nan, dtype=a.dtype)
        call(g.make_invoker(plan, "public"), p, a, b, ref, cupy.empty(plan.workspace, dtype=cupy.uint8)
             if plan.workspace else None)
        stream.synchronize()
        ref = ref.astype(cupy.float32)
        assert bool(cupy.isfinite(ref).all()), name
        scale = float(cupy.abs(ref).max()) or 1.0
        for how, o in outs.items():
            # the same engine and knobs: equal but for the order of a split reduction's atomic adds
            diff = float(cupy.abs(o.astype(cupy.float32) - ref).max()) / scale
            assert diff <= (1e-5 if dtype == "FP32" else 1e-2), (name, how, diff)


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("direction", "FBW")
@pytest.mark.parametrize("dtype,layout", [("FP32", "NCHW"), ("FP16", "NHWC")])
def test_named_plan_is_replayed_without_heuristics(direction, dtype, layout):
    """A stored plan name (a DB hit) is prepared alone, by engine id and knobs, in a process that has not
    listed the problem's plans: the same plan (name, workspace), correct, launched directly."""
    p = P(direction, n=2, c=16, k=24, in_size=(10, 12), filter_size=3, pads=1, layout=layout, dtype=dtype)
    solver = BY_DIR[direction]
    import cudnn

    offered = cudnn_base.list_plans(p)
    # plans whose knobs the frontend can name (not LDGC, USE_TEX...): replayed; the first few of them
    replayable = [(n, ws) for n, ws in offered
                  if cudnn_base.frontend_knobs(cudnn, cudnn_base.parse_plan_name(n)[1]) is not None][:3]
    assert replayable, offered
    for name, ws in replayable:
        cudnn_base.clear_cache()
        g, plan = cudnn_base.resolve(p, {"plan": name})
        assert [pl.name for pl in g.plans] == [name] and plan.name == name and plan.workspace == ws, \
            (name, [pl.name for pl in g.plans])
        assert len(cudnn_base._graphs) == 0     # the heuristics' graph was never built
        err, tol = check_solver(solver, p, seed=_seed("replay", direction, dtype, name), config={"plan": name})
        assert err <= tol, (name, err, tol)
        assert g.invoker(plan).path == "backend"


NOTE_CASES = [(d, "FP32", "NCHW", "strict") for d in "FBW"] + [(d, "FP16", "NHWC", "strict") for d in "FBW"] \
    + [("F", "FP32", "NHWC", "tf32")]


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("direction,dtype,layout,math", NOTE_CASES, ids=["-".join(c) for c in NOTE_CASES])
def test_native_plans_keep_the_frontends_note_filter(direction, dtype, layout, math):
    """A find's graph builds its plans through the backend API (NativePlan), checking the engine's numerical notes
    before the plan compiles: the plans it excludes and the plans it runs are the frontend's, plan by plan (FP32
    strict bars TF32 and down-converting engines; every type bars reduced-precision reductions)."""
    p = P(direction, n=2, c=32, k=32, in_size=(12, 12), filter_size=3, pads=1, layout=layout, dtype=dtype, math=math)
    assert cudnn_base.replays_natively(p)
    dev = cudnn_base._device_id()
    cudnn_base.clear_cache()
    fe = cudnn_base.PlanGraph(p, dev)
    na = cudnn_base.PlanGraph(p, dev, native=True)
    assert not fe.native and na.native
    fe.build_all()
    na.build_all()

    def state(g):
        return {pl.name: ("excluded" if pl.reason.startswith("excluded") else "runs" if pl.usable else "fails")
                for pl in g.plans}

    assert state(na) == state(fe), (state(fe), state(na))
    natives = [pl for pl in na.plans if pl.native is not None]
    assert natives and all(pl.usable and not pl.fe_built for pl in natives)
    assert all(pl.native is None for pl in fe.plans)
    if math == "strict" and dtype == "FP32":
        assert any(v == "excluded" for v in state(fe).values()), "no TF32 plan offered: the check checks nothing"


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("direction,dtype,layout", [("F", "FP16", "NHWC"), ("B", "FP32", "NCHW"),
                                                    ("W", "BF16", "NHWC")])
def test_find_winner_is_built_once_for_its_native_replay(direction, dtype, layout, monkeypatch):
    """A find builds its cuDNN candidates as NativePlans, so the winner's native replay (miofind.torch's C++ path, a
    prepared recipe) reuses the plan the find timed: no second build of it (a runtime-compiled engine compiles at
    each build, 100-200 ms). The winner verifies against the float64 reference, found and replayed."""
    from miofind import launch
    from miofind.api import find_solutions
    from miofind.solvers import cudnn_execute

    built = []
    orig = cudnn_execute.BackendPlan.__init__

    def counting(self, problem, specs, pre, post, handle, name, *rest, **kw):
        built.append(name)
        orig(self, problem, specs, pre, post, handle, name, *rest, **kw)

    monkeypatch.setattr(cudnn_execute.BackendPlan, "__init__", counting)
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "sync")
    p = P(direction, n=4, c=32, k=64, in_size=(14, 14), filter_size=3, pads=1, layout=layout, dtype=dtype)
    solver = BY_DIR[direction]
    cudnn_base.clear_cache()
    res = find_solutions(p, mode="benchmark", store=False, solvers=[solver.id])
    assert not res.failures, res.failures
    best = [s for s in res if s.solver_id == solver.id][0]
    name = best.config["plan"]
    assert best.verified and built.count(name) == 1, (name, built)
    sol = solver.get_solution(p, best.config)
    inv = sol.invoker_factory([])
    assert inv.path == "native", inv.path
    launch.trace(inv, bool(sol.workspace_bytes), 0)
    assert built.count(name) == 1, (name, built)
    err, tol = check_solver(solver, p, seed=_seed("found-native", direction, dtype), config=best.config)
    assert err <= tol, (name, err, tol)
    assert built.count(name) == 1, (name, built)
    # another stream runs the same finalized plan (the device's handle set to that stream per call): no build, and
    # the legacy stream's result within the verification tolerance (cuDNN's plans are not all deterministic: split-K
    # engines' atomics; bit-for-bit failed on the B FP32 NCHW winner in session-nov27e call 5)
    import cupy

    from miofind.invokers import call
    from miofind.verify import random_array

    a_shape, b_shape, out_shape = {"F": (p.x_shape, p.w_shape, p.y_shape), "B": (p.y_shape, p.w_shape, p.x_shape),
                                   "W": (p.y_shape, p.x_shape, p.w_shape)}[direction]
    rng = cupy.random.default_rng(_seed("streams", direction, dtype))
    a, b = random_array(a_shape, dtype, rng), random_array(b_shape, dtype, rng)
    buf = cupy.empty(sol.workspace_bytes, dtype=cupy.uint8) if sol.workspace_bytes else None
    outs = []
    for s in (cupy.cuda.Stream.null, cupy.cuda.Stream(non_blocking=True)):
        with s:
            out = cupy.full(out_shape, cupy.nan, dtype=a.dtype)
            call(inv, p, a, b, out, buf)
            s.synchronize()
            outs.append(out)
    assert built.count(name) == 1, (name, built)
    from miofind.verify import rel_error, to_float64, tolerance

    assert bool(cupy.all(cupy.isfinite(outs[1])))
    err = float(rel_error(to_float64(outs[1], dtype), to_float64(outs[0], dtype)))
    assert err <= tolerance(dtype, solver.family, direction, p.math), f"the side stream's run differs by {err:.3g}"


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("direction,n,c,size", [("F", 8, 144, 56), ("B", 8, 144, 56), ("W", 32, 192, 28)])
def test_runtime_compiled_plans_wait_for_the_later_configs(direction, n, c, size, monkeypatch):
    """Depthwise FP16 NHWC layers of MobileNetV2 whose heuristics' first plan (cuDNN 9.19: eng5 F, eng6 B, eng16 W)
    compiles when built (140-290 ms, session-nov27e call 2; at batch 8 the 192 @28 W layer's first plans are others,
    call 3): a find's first listing passes over the plans the backend API reports as runtime-compiled, building none
    of them; the full listing (the configs measured once no find runs) builds them, and they verify against the
    float64 reference."""
    import time

    monkeypatch.setenv("MIOFIND_CUDNN_DEFER_RTC", "1")
    p = P(direction, n=n, c=c, k=c, in_size=(size, size), filter_size=3, pads=1, groups=c, layout="NHWC",
          dtype="FP16")
    solver = BY_DIR[direction]
    cudnn_base.clear_cache()
    t0 = time.perf_counter()
    now = solver.find_configs(p, 2)
    listed_ms = (time.perf_counter() - t0) * 1e3
    rtc = cudnn_base.deferred_plans(p)
    print(f"{p.key()}: first listing {now} in {listed_ms:.0f} ms, deferred {rtc}")
    assert rtc, f"no plan of {p.key()} reported runtime compilation ({cudnn_base.versions()})"
    assert solver.more_configs(p, now)
    assert not {c["plan"] for c in now if c} & set(rtc)
    full = [c["plan"] for c in solver.find_configs(p)]
    assert set(rtc) <= set(full) and not cudnn_base.deferred_plans(p)
    for name in rtc[:1]:
        err, tol = check_solver(solver, p, seed=_seed("rtc", direction), config={"plan": name})
        assert err <= tol, (name, err, tol)


@pytest.mark.gpu
@needs_frontend
def test_unknown_plan_is_explained():
    p = P("F", n=1, c=8, k=8, in_size=(9, 9), filter_size=3, pads=1)
    with pytest.raises(ValueError, match="not offered"):
        BY_DIR["F"].get_solution(p, {"plan": "eng999999_k1=0"})


@pytest.mark.gpu
@needs_frontend
def test_find_uses_cudnn():
    from miofind.api import find_solutions, run_solution

    p = P("F", n=2, c=16, k=16, in_size=(14, 14), filter_size=3, pads=1, dtype="FP16", layout="NHWC")
    res = find_solutions(p, mode="benchmark", store=False, solvers=["ConvCudnnFwd", "ConvDirectNaiveConvFwd"])
    assert not res.failures, res.failures
    cud = [s for s in res if s.solver_id == "ConvCudnnFwd"]
    assert cud and cud[0].verified and cud[0].config and cud[0].config["plan"]
    import cupy

    x = cupy.random.standard_normal(p.x_shape, dtype=cupy.float32).astype(cupy.float16)
    w = cupy.random.standard_normal(p.w_shape, dtype=cupy.float32).astype(cupy.float16)
    y1 = run_solution(cud[0], x, w)
    y2 = run_solution([s for s in res if s.solver_id == "ConvDirectNaiveConvFwd"][0], x, w)
    cupy.testing.assert_allclose(y1.astype(cupy.float32), y2.astype(cupy.float32), rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.serial     # a timing: under xdist the other workers' kernels share the GPU (session-nov27c call 4: 431 us)
@needs_frontend
@pytest.mark.parametrize("dtype,ref_us", [("FP32", 241.0), ("FP16", 58.0)])
def test_fastest_plan_matches_reference_time(dtype, ref_us):
    """3x3 64->64 @56 N=32 forward (cuDNN 9.19 through PyTorch, benchmark mode, measured on this H100: 241 us FP32, 58 us FP16): the fastest plan, timed
    over 20 back-to-back calls (the best of 5 such bursts), should be within 1.5x. Prints every plan's time."""
    import cupy

    from miofind.invokers import call, get_invoker
    from miofind.verify import random_array

    p = P("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1, dtype=dtype,
          layout="NCHW" if dtype == "FP32" else "NHWC")
    solver = BY_DIR["F"]
    rng = cupy.random.default_rng(0)
    a, b = random_array(p.x_shape, dtype, rng), random_array(p.w_shape, dtype, rng)
    out = cupy.empty(p.y_shape, dtype=a.dtype)
    times = {}
    for name, ws in cudnn_base.list_plans(p):
        inv, need = get_invoker(p, solver.id, {"plan": name})
        buf = cupy.empty(need, dtype=cupy.uint8) if need else None
        call(inv, p, a, b, out, buf)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        reps = []
        for _ in range(5):      # the best of 5 bursts: the suite's other workers share the GPU
            start.record()
            for _ in range(20):
                call(inv, p, a, b, out, buf)
            stop.record()
            stop.synchronize()
            reps.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3 / 20)
        times[name] = min(reps)
    best = min(times, key=times.get)
    print(f"{dtype}: " + ", ".join(f"{n} {t:.0f}us" for n, t in sorted(times.items(), key=lambda kv: kv[1])))
    assert times[best] <= 1.5 * ref_us, f"fastest cuDNN plan {best} takes {times[best]:.0f} us (reference {ref_us} us)"


LISTING_SHAPES = [dict(n=8, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1),
                  dict(n=8, c=64, k=128, in_size=(28, 28), filter_size=1, strides=2),
                  dict(n=4, c=48, k=64, in_size=(17, 17), filter_size=(1, 7), pads=(0, 3)),
                  dict(n=4, c=32, k=32, in_size=(20, 20), filter_size=3, pads=2, dilations=2),
                  dict(n=8, c=96, k=96, in_size=(14, 14), filter_size=3, pads=1, strides=2, groups=96),
                  dict(n=2, c=16, k=32, in_size=(8, 8, 8), filter_size=3, pads=1)]
LISTING_TYPES = [("FP32", "strict", False), ("FP32", "tf32", True), ("FP16", "strict", True), ("BF16", "strict", True),
                 ("FP16", "strict", False)]


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("path", ["native", "ctypes"])
def test_backend_heuristics_list_the_frontends_plans(path, monkeypatch):
    """cuDNN's heuristics asked through the backend API (``cudnn_execute.heuristic_plans``: in C with the GIL released,
    or through ctypes) offer the frontend graph's plans in the same order (duplicates once), for F, B and W of 1x1, 3x3,
    1x7, dilated, depthwise strided and 3-D convolutions in FP32 (strict and TF32), FP16 and BF16, channels-last and
    not, with the same first plans (those a find measures at once): so a native graph lists what the frontend lists.
    The backend may offer a few more (session-nov27f call 2: 86 of 90 lists equal; four FP16 forward lists had one or
    two more eng47 configs among 40-44, which the frontend's graph does not list); at most a tenth more is allowed."""
    from miofind import launch
    from miofind.solvers import cudnn_execute

    if path == "native" and not hasattr(launch.native() or object(), "cudnn_heuristics"):
        pytest.skip("miofind._native (with cudnn_heuristics) is not built")
    monkeypatch.setattr(cudnn_execute, "native_calls", path == "native")
    dev = cudnn_base._device_id()
    handle, _ = cudnn_execute._native_handle(dev)
    first = BY_DIR["F"].configs_now
    compared, equal, differ = 0, 0, []
    for shape in LISTING_SHAPES:
        for dtype, math, last in LISTING_TYPES:
            nd = len(shape["in_size"])
            layout = ("NDHWC" if nd == 3 else "NHWC") if last else ("NCDHW" if nd == 3 else "NCHW")
            for d in "FBW":
                p = P(d, layout=layout, dtype=dtype, math=math, **shape)
                if not BY_DIR[d].applicability(p):
                    continue
                fe = [pl.name for pl in cudnn_base.PlanGraph(p.as_conv(), dev).plans]
                pre, post = cudnn_base.paddings(p.as_conv())
                names = cudnn_execute.heuristic_plans(p.as_conv(), cudnn_base.tensor_specs(p.as_conv()), pre, post, handle)
                once = list(dict.fromkeys(names))
                compared += 1
                equal += once == fe
                rest = iter(once)
                in_order = all(n in rest for n in fe)      # fe a subsequence of once
                if not (in_order and once[:first] == fe[:first] and len(once) <= len(fe) * 1.1):
                    differ.append((p.key(), fe, once))
    assert not differ, f"{len(differ)} of {compared} differ:\n" + "\n".join(
        f"{k}:\n  frontend {fe}\n  backend  {b}" for k, fe, b in differ[:5])
    assert compared >= 80 and equal >= 0.9 * compared, (compared, equal)


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("how", ["list", "build", "load"])
def test_find_prefetches_the_cudnn_listing(how, monkeypatch):
    """A find's miss lists its cuDNN candidate's plans in a thread (MIOFIND_CUDNN_PREFETCH) while it prepares the
    others: the breakdown says so, the cuDNN plans are measured and verified as without the thread, and
    MIOFIND_CUDNN_PREFETCH=off lists them in the find; either way the find's graph is listed through the backend API."""
    from miofind.api import find_solutions

    monkeypatch.setenv("MIOFIND_SPECIALIZE", "sync")
    for i, setting in enumerate((how, "off")):
        monkeypatch.setenv("MIOFIND_CUDNN_PREFETCH", setting)
        p = P("F", n=4, c=32, k=64 + 8 * i, in_size=(14, 14), filter_size=3, pads=1, layout="NHWC", dtype="FP16")
        cudnn_base.clear_cache()
        res = find_solutions(p, mode="benchmark", store=False)
        assert res.timing["cudnn_prefetch"] is (setting != "off"), res.timing
        assert res.timing["prefetch_wait_ms"] >= 0.0 and not cudnn_base._prefetching, res.timing
        cud = [s for s in res if s.solver_id == "ConvCudnnFwd"]
        assert cud and cud[0].verified, [(s.solver_id, s.verified) for s in res]
        assert not [f for f in res.failures if f.solver_id == "ConvCudnnFwd"], res.failures
        g = cudnn_base._graphs[(cudnn_base._device_id(), p.as_conv())]
        assert g.listed == "backend" and g.native, (g.listed, g.native)


@pytest.mark.gpu
@needs_frontend
@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_first_runs_run_each_built_plan_once(direction, monkeypatch):
    """cudnn_base.first_runs (MIOFIND_CUDNN_PREFETCH=load) runs every natively built plan it is given once on scratch
    buffers and waits for them; the plans then verify in a find as before; buffers over FIRST_RUN_BYTES run nothing."""
    from miofind.api import find_solutions

    p = P(direction, n=4, c=32, k=48, in_size=(14, 14), filter_size=3, pads=1, layout="NHWC", dtype="FP16")
    cudnn_base.clear_cache()
    dev = cudnn_base._device_id()
    names = [name for name, _ in cudnn_base.first_plans(p, 3)]
    assert names
    assert cudnn_base.first_runs(p, dev, names) == len(names)
    monkeypatch.setattr(cudnn_base, "FIRST_RUN_BYTES", 1024)
    assert cudnn_base.first_runs(p, dev, names) == 0
    solver = "ConvCudnn" + dict(F="Fwd", B="Bwd", W="Wrw")[direction]
    res = find_solutions(p, mode="benchmark", store=False, solvers=[solver])
    assert res and all(s.verified for s in res), [(s.solver_id, s.verified, s.config) for s in res]
