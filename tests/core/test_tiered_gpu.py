"""Tiered find on the GPU (miofind.tiered): with an empty kernel cache, a find measures the generic
builds (records build='generic'), the background specialisation then verifies and times the
specialised build and replaces the record where faster; ``sync`` measures the specialised build."""

from __future__ import annotations

import pytest

from miofind import tiered
from miofind.api import clear_caches, find_solutions, run_solution
from miofind.db import FindDB
from miofind.device import current_device
from miofind.problem import ProblemDescription

P = ProblemDescription.make("F", n=4, c=32, k=48, in_size=(19, 23), filter_size=3, pads=1)   # NCHW: both apply
SOLVERS = ["ConvImplicitGemmFwd", "ConvDirectTiledFwd"]


@pytest.fixture
def fresh(tmp_path, monkeypatch, tmp_db):
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path / "cubin"))
    tiered.clear()
    clear_caches()
    yield tmp_db
    tiered.wait(300)
    tiered.clear()
    clear_caches()


@pytest.mark.gpu
def test_background_measures_generic_then_specialises(fresh, monkeypatch):
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "background")
    # no early stop: a generic build slower than 3x the best would be cut and get no record
    res = find_solutions(P, mode="benchmark", solvers=SOLVERS, cut_factor=0)
    assert {s.solver_id for s in res} == set(SOLVERS) and all(s.verified for s in res), res.failures
    db = FindDB(fresh)
    dev = current_device().db_name
    first = {r.solver_id: r for r in db.lookup(dev, P.key())}
    assert {r.build for r in first.values()} == {"generic"}
    tiered.wait(300)
    after = {r.solver_id: r for r in db.lookup(dev, P.key())}
    for sid, r in after.items():
        # replaced only by a verified specialised measurement that was faster
        assert r.build == "generic" or (r.verified and r.time_ms < first[sid].time_ms), (sid, r)
    import cupy as cp
    x = cp.random.standard_normal(P.x_shape, dtype=cp.float32)
    w = cp.random.standard_normal(P.w_shape, dtype=cp.float32)
    y = run_solution(res[0], x, w)
    assert not cp.isnan(y).any()


@pytest.mark.gpu
def test_sync_measures_the_specialised_build(fresh, monkeypatch):
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "sync")
    find_solutions(P, mode="benchmark", solvers=SOLVERS)
    recs = FindDB(fresh).lookup(current_device().db_name, P.key())
    assert recs and {r.build for r in recs} == {"specialized"}
    assert tiered.pending() == 0


PH = ProblemDescription.make("F", n=4, c=64, k=64, in_size=(20, 20), filter_size=3, pads=1, layout="NHWC", dtype="FP16")
HOPPER = "ConvImplicitGemmHopperFwd"


def _hopper_device():
    if current_device().arch != "sm_90":
        pytest.skip("the Hopper family (no generic build) applies on sm_90 only")


@pytest.mark.gpu
def test_an_uncompiled_solver_without_generic_build_is_deferred_then_stored(fresh, monkeypatch):
    """With an empty kernel cache but the Ampere implicit GEMM's generic build compiled, a find measures that
    generic build at once and leaves the Hopper solver (no generic build) to the background: a failure of
    stage 'deferred', then a verified record in the user FindDB, told to the listeners; a normal-mode find
    then answers from the DB."""
    _hopper_device()
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "background")
    find_solutions(PH, mode="benchmark", solvers=["ConvImplicitGemmFwd"], defer=False)   # compiles its generic build
    heard = []
    tiered.on_deferred(lambda p, s: heard.append((p.key(), s.solver_id, s.verified)))
    both = ["ConvImplicitGemmFwd", HOPPER]
    res = find_solutions(PH, mode="benchmark", solvers=both, cut_factor=0, defer=True)
    assert [s.solver_id for s in res] == ["ConvImplicitGemmFwd"], (res, res.failures)
    assert [(f.solver_id, f.stage) for f in res.failures] == [(HOPPER, "deferred")]
    assert res.timing["deferred"] == 1
    # marked in the user FindDB until its background job stores a record (find.mark_deferred), so that a process that
    # ends first leaves the next one a DB answer and the job to resume
    dev = current_device().db_name
    marks = [(f.solver_id, f.stage) for f in FindDB(fresh).find_failures(dev, PH.key())]
    assert marks == [(HOPPER, "deferred")] or HOPPER in {r.solver_id for r in FindDB(fresh).lookup(dev, PH.key())}
    # a normal-mode find meanwhile answers from the DB: the deferred solver is not waited for (or already stored)
    mid = find_solutions(PH, solvers=both)
    assert mid.source == "db" and "ConvImplicitGemmFwd" in {s.solver_id for s in mid}, (mid, mid.failures)
    tiered.wait(600)
    recs = {r.solver_id: r for r in FindDB(fresh).lookup(current_device().db_name, PH.key())}
    assert recs[HOPPER].verified and recs[HOPPER].build == "specialized" and recs[HOPPER].time_ms > 0
    assert (PH.key(), HOPPER, True) in heard
    assert FindDB(fresh).find_failures(dev, PH.key()) == []     # the stored record dropped the mark
    again = find_solutions(PH, solvers=both)
    assert again.source == "db" and {s.solver_id for s in again} == set(both)
    tiered._listeners.clear()


@pytest.mark.gpu
def test_a_find_with_only_deferrable_solvers_measures_them_now(fresh, monkeypatch):
    """An empty kernel cache: both solvers would wait for NVRTC, so neither is deferred."""
    _hopper_device()
    monkeypatch.setenv("MIOFIND_SPECIALIZE", "background")
    both = ["ConvImplicitGemmFwd", HOPPER]
    res = find_solutions(PH, mode="benchmark", solvers=both, defer=True, cut_factor=0)
    assert {s.solver_id for s in res} == set(both) and all(s.verified for s in res)
    assert not [f for f in res.failures if f.stage == "deferred"]


@pytest.mark.gpu
def test_warm_device_fills_cupys_kernel_cache(tmp_path):
    """`miofind warmup` on a GPU runs a find's steps on tiny problems: a fresh CuPy kernel cache
    (a fresh install's) then holds the kernels of those steps, the GEMM reference's of larger layers too."""
    import json
    import os
    import subprocess
    import sys

    from miofind.warmup import _GEMM_REFERENCE_SHAPES

    env = dict(os.environ, CUPY_CACHE_DIR=str(tmp_path / "cupy"))
    # then the GEMM reference of ResNet-like layers of other sizes: CuPy compiles nothing more for them
    code = """
import json, os, cupy
from miofind.warmup import warm_device
from miofind.harness import reference_invoker_for_kind
from miofind.problem import ProblemDescription
out = warm_device()
cache = os.environ["CUPY_CACHE_DIR"]
files = lambda: sorted(os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs)
before = files()
rng = cupy.random.default_rng(1)
for layout in ("NCHW", "NHWC"):
    for kw in (dict(c=64, k=64, in_size=(28, 28), filter_size=3, pads=1), dict(c=64, k=256, in_size=(28, 28), filter_size=1),
               dict(c=128, k=128, in_size=(29, 29), filter_size=3, pads=1, strides=2),
               dict(c=256, k=512, in_size=(14, 14), filter_size=1, strides=2)):
        for d in "FBW":
            p = ProblemDescription.make(d, n=4, layout=layout, **kw)
            a_shape, b_shape, _ = p.io_shapes()
            reference_invoker_for_kind(p, "gemm").output(p, rng.standard_normal(a_shape), rng.standard_normal(b_shape))
cupy.cuda.Device().synchronize()
out["new_files"] = [f for f in files() if f not in before]
print(json.dumps(out))
"""
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out.get("problems") == 18 + 2 * 3 * len(_GEMM_REFERENCE_SHAPES), out
    assert any((tmp_path / "cupy").rglob("*")), "CuPy's kernel cache is empty"
    assert out["new_files"] == [], out["new_files"]


@pytest.mark.gpu
def test_background_work_leaves_another_threads_capture_valid():
    """A job of the specialisation pool (its threads in the relaxed capture mode, its work on its own
    non-blocking stream) allocates, loads a module and launches while the main thread captures a CUDA graph
    in the default global mode (as torch.cuda.graph does): the capture stays valid and its replay is right."""
    import threading

    import cupy

    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.registry import get_solver

    # only this test's job runs beside the capture: background work earlier tests on this worker left (deferred
    # solvers, specialisations) is waited for first (a background cuFFT plan made during a capture on a blocking
    # stream broke it once; see bench/results/README.md, session-overlap/mends)
    tiered.wait(600)
    solver = get_solver("ConvDirectNaiveConvFwd")
    plain = ProblemDescription.make("F", n=1, c=8, k=8, in_size=(9, 9), filter_size=3, pads=1)
    inv = build_invoker(plain, solver.get_solution(plain))
    other = ProblemDescription.make("F", n=2, c=8, k=16, in_size=(7, 11), filter_size=3, pads=1)
    capturing, worked = threading.Event(), threading.Event()
    errors = []

    def job():
        try:
            capturing.wait(30)
            with tiered._own_stream():
                h = Harness(other, verify=True, seed=4)        # allocations, a module load, launches
                h.check(build_invoker(other, solver.get_solution(other)), None, solver.family)
                cupy.cuda.get_current_stream().synchronize()
        except Exception as e:      # reported below
            errors.append(e)
        finally:
            worked.set()

    fut = tiered._executor().submit(job)
    x = cupy.random.default_rng(1).uniform(-1, 1, plain.x_shape, dtype=cupy.float32)
    w = cupy.random.default_rng(2).uniform(-1, 1, plain.w_shape, dtype=cupy.float32)
    y = cupy.full(plain.y_shape, cupy.nan, dtype=cupy.float32)
    st = cupy.cuda.Stream(non_blocking=False)
    with st:
        inv(x.data.ptr, w.data.ptr, y.data.ptr, 0, st.ptr)      # warm outside the capture
        st.synchronize()
        y.fill(cupy.nan)
        st.begin_capture(cupy.cuda.runtime.streamCaptureModeGlobal)
        capturing.set()
        worked.wait(60)
        inv(x.data.ptr, w.data.ptr, y.data.ptr, 0, st.ptr)
        g = st.end_capture()
        g.launch(st)
        st.synchronize()
    fut.result(60)
    assert not errors, errors
    from miofind.reference import conv_reference
    ref = conv_reference(plain, cupy.asnumpy(x).astype("float64"), cupy.asnumpy(w).astype("float64"))
    assert float(abs(cupy.asnumpy(y) - ref).max()) < 1e-4


@pytest.mark.gpu
def test_cudnn_plans_after_the_first_ones_are_measured_in_the_background(fresh, monkeypatch):
    """A find that may defer measures cuDNN's first plans (``configs_now``) and leaves the others to
    the background, which stores a verified record only where one of them beats the find's; defer=False
    measures every plan at once."""
    from miofind.registry import get_solver

    monkeypatch.setenv("MIOFIND_SPECIALIZE", "background")
    cudnn = get_solver("ConvCudnnFwd")
    if not cudnn.applicability(P):
        pytest.skip(f"cuDNN does not apply: {cudnn.applicability(P).reason}")
    n_plans = len(cudnn.find_configs(P))
    if n_plans <= cudnn.configs_now:
        pytest.skip(f"cuDNN offers only {n_plans} plans here")
    both = ["ConvCudnnFwd", "ConvImplicitGemmFwd"]
    res = find_solutions(P, mode="benchmark", solvers=both, cut_factor=0, defer=True)
    now = [c for c in res.timing["candidates"] if c["solver_id"] == "ConvCudnnFwd"]
    assert len(now) == cudnn.configs_now and res.timing["configs_later"] == 1, res.timing
    found = {s.solver_id: s for s in res}["ConvCudnnFwd"]
    tiered.wait(300)
    rec = {r.solver_id: r for r in FindDB(fresh).lookup(current_device().db_name, P.key())}["ConvCudnnFwd"]
    assert rec.verified and (rec.config == found.config or rec.time_ms < found.time_ms), (rec, found)
    every = find_solutions(P, mode="benchmark", solvers=both, cut_factor=0, defer=False)
    assert len([c for c in every.timing["candidates"] if c["solver_id"] == "ConvCudnnFwd"]) == n_plans
    assert "configs_later" not in every.timing
