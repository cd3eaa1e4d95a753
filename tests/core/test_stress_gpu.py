"""Streams and threads under load (issue 16): 8 threads x 4 non-blocking streams each run random
small problems of every solver (every family, F/B/W) for a few seconds, each job with inputs,
output and workspace of its own made on its stream, and every output is compared with a float64
reference computed before the threads start. Each thread also queues jobs on one stream that all
threads of its backend share (as threads share torch's default stream). Jobs alternate between
``Solution.prepare()`` (with miofind's per-stream workspace, or a poisoned workspace of the
caller's) and ``run_solution`` (which allocates the output on the launch stream while the thread's
current stream is another).

Knobs (environment): MIOFIND_STRESS_SECONDS (default 5), MIOFIND_STRESS_THREADS (8),
MIOFIND_STRESS_STREAMS (4 per thread), MIOFIND_STRESS_SHARED (1; 0: no shared stream),
MIOFIND_STRESS_PER_SOLVER (problems per solver, 2), MIOFIND_STRESS_SEED (0),
MIOFIND_STRESS_BACKENDS ("cupy,torch": odd threads use torch tensors and streams when torch is
importable), MIOFIND_STRESS_REPORT (a path: the run's summary as JSON).
"""

from __future__ import annotations

import collections
import importlib.util
import json
import math
import os
import random
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pytest

from miofind.problem import ProblemDescription as P

MODES = ("prepared", "prepared+ws", "run_solution")
DEPTH = 2                      # jobs queued per stream before a thread reads their results
POOL_SIZE = 400                # random problems each solver's cases are drawn from


def _knob(name: str, default, kind=int, minimum=1):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        v = kind(raw)
    except ValueError:
        v = None
    if v is None or not math.isfinite(v) or v < minimum:
        pytest.fail(f"{name}={raw!r}: expected a {kind.__name__} >= {minimum}", pytrace=False)
    return v


def _backends() -> tuple[str, ...]:
    raw = os.environ.get("MIOFIND_STRESS_BACKENDS", "cupy,torch")
    names = tuple(b.strip() for b in raw.split(",") if b.strip())
    bad = [b for b in names if b not in ("cupy", "torch")]
    if bad or not names:
        pytest.fail(f"MIOFIND_STRESS_BACKENDS={raw!r}: expected a comma-separated subset of cupy,torch", pytrace=False)
    if "torch" in names and importlib.util.find_spec("torch") is None:
        names = tuple(b for b in names if b != "torch") or ("cupy",)
    return names


# -- the plan: random small problems, K per solver (CPU) ----------------------------------------

def problem_pool(seed: int, count: int = POOL_SIZE) -> list[P]:
    """``count`` random small problems (2D and a few 3D; dense, 1x1, 3x3, grouped and depthwise;
    NCHW/NHWC; FP32/FP16; F, B or W), the same for the same seed."""
    r = random.Random(seed)
    out: list[P] = []
    while len(out) < count:
        kind = r.choice(("dense", "dense", "3x3", "3x3", "1x1", "grouped", "depthwise", "3d"))
        n, c, k = r.randint(1, 3), r.choice((4, 6, 8, 12, 16)), r.choice((4, 6, 8, 12, 16))
        f = {"3x3": 3, "1x1": 1}.get(kind) or r.choice((1, 3, 5))
        stride = 1 if kind == "3x3" else r.choice((1, 1, 2))
        dil = 1 if kind in ("3x3", "1x1") else r.choice((1, 1, 2))
        pad = 0 if (kind == "1x1" and r.random() < 0.7) else r.randint(0, f // 2)
        groups = 1
        if kind == "grouped":
            groups = 2
        elif kind == "depthwise":
            groups, k = c, c * r.choice((1, 2))
        if kind == "3d":
            size, f, n = (r.randint(3, 6), r.randint(4, 7), r.randint(4, 7)), r.choice((1, 3)), 1
            pad = r.randint(0, f // 2)
            layout = r.choice(("NCDHW", "NDHWC"))
        else:
            size = (r.randint(5, 14), r.randint(5, 14))
            layout = r.choice(("NCHW", "NCHW", "NHWC"))
        dtype = r.choice(("FP32", "FP32", "FP16"))
        direction = r.choice("FBW")
        try:
            out.append(P.make(direction, n=n, c=c, k=k, in_size=size, filter_size=f, pads=pad, strides=stride,
                              dilations=dil, groups=groups, layout=layout, dtype=dtype))
        except ValueError:      # e.g. a dilated filter larger than the padded input
            continue
    # claims a random draw may miss: the Hopper family's channels-last 16-bit F, B and W with C, K % 8 == 0
    out += [P.make("F", n=2, c=16, k=8, in_size=(9, 11), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
            P.make("F", n=1, c=8, k=24, in_size=(7, 6), filter_size=1, layout="NHWC", dtype="FP16"),
            P.make("B", n=2, c=8, k=16, in_size=(10, 7), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
            P.make("B", n=1, c=24, k=8, in_size=(6, 9), filter_size=1, layout="NHWC", dtype="FP16"),
            P.make("W", n=2, c=16, k=8, in_size=(9, 11), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
            P.make("W", n=1, c=8, k=24, in_size=(7, 6), filter_size=1, layout="NHWC", dtype="FP16"),
            # the fused forward's: an activation epilogue (no bias: the runs here pass none; the bias has its own
            # tests, tests/implicit_gemm_hopper/test_fused_epilogue.py)
            P.make("F", n=2, c=16, k=8, in_size=(9, 11), filter_size=3, pads=1, layout="NHWC", dtype="FP16",
                   activation="relu"),
            P.make("F", n=1, c=8, k=24, in_size=(7, 6), filter_size=1, layout="NHWC", dtype="FP16", activation="gelu"),
            # the small-C family's (C <= 4, channels-last 16-bit F and W)
            P.make("F", n=2, c=3, k=16, in_size=(13, 35), filter_size=7, pads=3, strides=2, layout="NHWC", dtype="FP16"),
            P.make("F", n=1, c=1, k=8, in_size=(9, 17), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
            P.make("W", n=2, c=3, k=16, in_size=(13, 35), filter_size=7, pads=3, strides=2, layout="NHWC", dtype="FP16"),
            P.make("W", n=1, c=4, k=8, in_size=(9, 17), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
            # the Hopper TF32 forward and backward data's (FP32 channels-last, TF32 math; offered here: hopper_tf32_on)
            P.make("F", n=2, c=12, k=20, in_size=(9, 11), filter_size=3, pads=1, layout="NHWC", dtype="FP32", math="tf32"),
            P.make("B", n=2, c=8, k=12, in_size=(10, 7), filter_size=3, pads=1, strides=2, layout="NHWC", dtype="FP32",
                   math="tf32"),
            P.make("B", n=1, c=16, k=8, in_size=(6, 9), filter_size=1, layout="NHWC", dtype="FP32", math="tf32"),
            # the swapped-operand Hopper forward and backward data's (input channels of their forward view % 64 == 0)
            P.make("F", n=2, c=64, k=24, in_size=(9, 11), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
            P.make("F", n=1, c=64, k=72, in_size=(7, 6), filter_size=1, layout="NHWC", dtype="FP16"),
            P.make("B", n=2, c=24, k=64, in_size=(10, 7), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
            P.make("B", n=1, c=16, k=128, in_size=(6, 9), filter_size=1, layout="NHWC", dtype="FP16"),
            # the rounding Hopper TF32 forward and backward data's (input channels of their forward view % 32 == 0)
            P.make("F", n=2, c=32, k=20, in_size=(9, 11), filter_size=3, pads=1, layout="NHWC", dtype="FP32", math="tf32"),
            P.make("F", n=1, c=64, k=72, in_size=(7, 6), filter_size=1, layout="NHWC", dtype="FP32", math="tf32"),
            P.make("B", n=2, c=24, k=32, in_size=(10, 7), filter_size=3, pads=1, layout="NHWC", dtype="FP32",
                   math="tf32"),
            P.make("B", n=1, c=16, k=64, in_size=(6, 9), filter_size=1, layout="NHWC", dtype="FP32", math="tf32"),
            # the rounding Hopper TF32 backward weights' (C % 32 == 0; an odd count of 32-pixel K tiles, and a split)
            P.make("W", n=2, c=32, k=20, in_size=(9, 11), filter_size=3, pads=1, layout="NHWC", dtype="FP32", math="tf32"),
            P.make("W", n=4, c=64, k=72, in_size=(14, 13), filter_size=1, layout="NHWC", dtype="FP32", math="tf32"),
            # the Hopper family's NCHW wrappers (16-bit F, B, W; the rounding TF32 forward and backward data)
            P.make("F", n=2, c=16, k=8, in_size=(9, 11), filter_size=3, pads=1, layout="NCHW", dtype="FP16"),
            P.make("F", n=1, c=8, k=24, in_size=(7, 6), filter_size=1, strides=2, layout="NCHW", dtype="FP16"),
            P.make("B", n=2, c=8, k=16, in_size=(10, 7), filter_size=3, pads=1, strides=2, layout="NCHW", dtype="FP16"),
            P.make("B", n=1, c=24, k=8, in_size=(6, 9), filter_size=3, pads=1, layout="NCHW", dtype="FP16"),
            P.make("W", n=2, c=16, k=8, in_size=(9, 11), filter_size=3, pads=1, layout="NCHW", dtype="FP16"),
            P.make("W", n=1, c=8, k=24, in_size=(7, 6), filter_size=3, strides=2, layout="NCHW", dtype="FP16"),
            P.make("F", n=2, c=32, k=20, in_size=(9, 11), filter_size=3, pads=1, layout="NCHW", dtype="FP32", math="tf32"),
            P.make("F", n=1, c=64, k=72, in_size=(7, 6), filter_size=1, strides=2, layout="NCHW", dtype="FP32",
                   math="tf32"),
            P.make("B", n=2, c=24, k=32, in_size=(10, 7), filter_size=3, pads=1, layout="NCHW", dtype="FP32",
                   math="tf32"),
            P.make("B", n=1, c=16, k=64, in_size=(6, 9), filter_size=3, pads=1, layout="NCHW", dtype="FP32", math="tf32"),
            P.make("W", n=2, c=32, k=20, in_size=(9, 11), filter_size=3, pads=1, layout="NCHW", dtype="FP32", math="tf32"),
            P.make("W", n=1, c=64, k=72, in_size=(7, 6), filter_size=3, strides=2, layout="NCHW", dtype="FP32",
                   math="tf32"),
            # the swapped-operand wrappers' (NCHW 16-bit narrow layers; backward data at stride 1)
            P.make("F", n=2, c=64, k=24, in_size=(9, 11), filter_size=3, pads=1, layout="NCHW", dtype="FP16"),
            P.make("F", n=1, c=64, k=72, in_size=(7, 6), filter_size=1, strides=2, layout="NCHW", dtype="FP16"),
            P.make("B", n=2, c=24, k=64, in_size=(10, 7), filter_size=3, pads=1, layout="NCHW", dtype="FP16"),
            P.make("B", n=1, c=16, k=128, in_size=(6, 9), filter_size=3, pads=1, layout="NCHW", dtype="FP16")]
    return out


@pytest.fixture(autouse=True)
def hopper_tf32_on(monkeypatch):
    """Every solver includes the Hopper TF32 ones, off by default (MIOFIND_HOPPER_TF32)."""
    monkeypatch.setenv("MIOFIND_HOPPER_TF32", "1")


@dataclass(frozen=True)
class Case:
    solver_id: str
    family: str
    problem: P

    @property
    def id(self) -> str:
        return f"{self.solver_id}:{self.problem.key()}"


def plan(seed: int, per_solver: int) -> tuple[list[Case], list[str]]:
    """(cases, solvers with no case): ``per_solver`` problems of the pool drawn for each registered
    solver among those it claims (its own random draw, so solvers do not all get the same ones)."""
    from miofind.registry import solvers

    pool = problem_pool(seed)
    cases, uncovered = [], []
    for s in solvers():
        fits = [p for p in pool if p.direction in s.directions and s.applicability(p)]
        if not fits:
            uncovered.append(s.id)
            continue
        picked = random.Random(f"{seed}:{s.id}").sample(fits, min(per_solver, len(fits)))
        cases += [Case(s.id, s.family, p) for p in picked]
    return cases, uncovered


def test_plan_covers_every_solver():
    """Every registered solver (hence every family and direction it takes) gets its cases from the
    pool; cuDNN's only where its frontend is importable (its applicability says so)."""
    from miofind.registry import solvers
    from miofind.solvers.cudnn_base import frontend_status

    cases, uncovered = plan(0, 2)
    expected_missing = set() if frontend_status()[0] else {s.id for s in solvers() if s.family == "cudnn"}
    assert set(uncovered) == expected_missing, uncovered
    per = collections.Counter(c.solver_id for c in cases)
    assert all(n == 2 for n in per.values()), per
    fams = collections.defaultdict(set)
    for c in cases:
        fams[c.family].add(c.problem.direction)
    for f in ("direct", "gemm", "implicit_gemm", "depthwise"):
        assert fams[f] == set("FBW"), (f, fams[f])
    assert fams["winograd"] == fams["fft"] == set("FB"), fams
    assert plan(0, 2)[0] == cases, "the plan must be the same for the same seed"


# -- inputs and references (host, before the threads) -------------------------------------------

def host_inputs(case: Case, index: int):
    """(a, b, reference, ||reference||^2): uniform(-1, 1) inputs in the problem's storage type and
    the float64 reference of exactly those (rounded) values."""
    from miofind.reference import conv_reference
    from miofind.tensors import numpy_dtype

    p = case.problem
    rng = np.random.default_rng(index)
    sa, sb, _ = p.io_shapes()
    dt = numpy_dtype(p.dtype)
    a = rng.uniform(-1, 1, sa).astype(np.float32).astype(dt)
    b = rng.uniform(-1, 1, sb).astype(np.float32).astype(dt)
    ref = conv_reference(p, a.astype(np.float64), b.astype(np.float64))
    return a, b, ref, float(np.sum(ref * ref))


# -- the threads --------------------------------------------------------------------------------

class Worker:
    """One thread: its streams, its own device copies of every case's inputs and reference, and a
    schedule that walks a permutation of the cases, mode (position + pass + thread) mod 3, so that
    every thread has run every (case, mode) after three passes."""

    def __init__(self, index: int, backend: str, cases, hosts, sols, n_streams: int, seconds: float, barrier,
                 shared=None):
        self.index, self.backend, self.cases, self.hosts, self.sols = index, backend, cases, hosts, sols
        self.seconds, self.barrier, self.shared = seconds, barrier, shared
        self.n_streams = n_streams + (shared is not None)       # own streams, then the shared one
        self.counts: collections.Counter = collections.Counter()       # (case index, mode) -> runs
        self.mismatches: list[str] = []
        self.errors: list[str] = []
        self.worst: dict[int, float] = {}
        self.thread = threading.Thread(target=self.run, name=f"stress-{index}", daemon=True)

    # device arrays per backend -------------------------------------------------------------------
    def _setup(self):
        if self.backend == "torch":
            import torch

            own = self.n_streams - (self.shared is not None)
            self.streams = [torch.cuda.Stream() for _ in range(own)]         # non-blocking streams
            with torch.cuda.stream(self.streams[0]):
                self.dev = [tuple(torch.from_numpy(x).cuda() for x in (a, b, ref)) for a, b, ref, _ in self.hosts]
            self.streams[0].synchronize()
            self.streams += [self.shared] if self.shared is not None else []
        else:
            import cupy

            own = self.n_streams - (self.shared is not None)
            self.streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(own)]
            with self.streams[0]:
                self.dev = [tuple(cupy.asarray(x) for x in (a, b, ref)) for a, b, ref, _ in self.hosts]
            self.streams[0].synchronize()
            self.streams += [self.shared] if self.shared is not None else []

    def _enqueue(self, ci: int, mode: str, si: int):
        """Queue one job on stream ``si``; returns the device scalar ||out - ref||^2 (NaN when an
        output element was left unwritten)."""
        from miofind.api import run_solution

        sol, pr = self.sols[ci]
        a0, b0, ref = self.dev[ci]
        s = self.streams[si]
        if self.backend == "torch":
            import torch

            with torch.cuda.stream(s):
                a, b = a0.clone(), b0.clone()
                if mode != "run_solution":
                    out = torch.full(pr._shapes[2], float("nan"), dtype=a.dtype, device=a.device)
                if mode == "prepared":
                    pr(a, b, out)                                   # the current stream: s
                elif mode == "prepared+ws":
                    ws = torch.full((max(1, pr.workspace_bytes),), 0xFF, dtype=torch.uint8, device=a.device)
                    pr(a, b, out, workspace=ws, stream=s)
            if mode == "run_solution":
                out = run_solution(sol, a, b, stream=s)             # current stream: not s
                if pr._cl[2] and (tuple(out.shape) != pr._shapes[2] or not out.is_contiguous()):
                    out = out.movedim(1, -1)    # a channels_last tensor, viewed in its stored order
            with torch.cuda.stream(s):
                d = out.double() - ref
                return (d * d).sum()
        import cupy

        with s:
            a, b = a0.copy(), b0.copy()
            if mode != "run_solution":
                out = cupy.full(pr._shapes[2], cupy.nan, dtype=a.dtype)
            if mode == "prepared":
                pr(a, b, out)
            elif mode == "prepared+ws":
                ws = cupy.full(max(1, pr.workspace_bytes), 0xFF, dtype=cupy.uint8)
                pr(a, b, out, workspace=ws, stream=s)
        if mode == "run_solution":
            out = run_solution(sol, a, b, stream=s)
        with s:
            d = out.astype(cupy.float64) - ref
            return (d * d).sum()

    def _read(self, si: int, num) -> float:
        s = self.streams[si]
        if self.backend == "torch":
            import torch

            with torch.cuda.stream(s):
                return float(num.item())
        with s:
            return float(num)

    # the loop ------------------------------------------------------------------------------------
    def run(self):
        try:
            self._setup()
        except BaseException:
            self.errors.append(f"thread {self.index} setup: {traceback.format_exc(limit=4)}")
            self.barrier.abort()
            return
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            return
        deadline = time.monotonic() + self.seconds
        order = list(range(len(self.cases)))
        random.Random(1000 + self.index).shuffle(order)
        pos, passes, job = 0, 0, None
        try:
            while passes < len(MODES) or time.monotonic() < deadline:
                batch = []
                for j in range(self.n_streams * DEPTH):
                    ci = order[pos]
                    mode = MODES[(pos + passes + self.index) % len(MODES)]
                    si = j % self.n_streams
                    job = (ci, mode, si)
                    batch.append((ci, mode, si, self._enqueue(ci, mode, si)))
                    pos += 1
                    if pos == len(order):
                        pos, passes = 0, passes + 1
                for ci, mode, si, num in batch:
                    job = (ci, mode, si)
                    err = math.sqrt(self._read(si, num) / self.hosts[ci][3])
                    self.counts[(ci, mode)] += 1
                    case = self.cases[ci]
                    tol = _tolerance(case)
                    if not err <= tol:                      # NaN (unwritten output) fails too
                        where = "shared" if self.shared is not None and si == self.n_streams - 1 else si
                        self.mismatches.append(f"{case.id} {mode} thread {self.index} ({self.backend}) stream {where}: "
                                               f"relative error {err:.3g} > {tol:.1g}")
                    self.worst[ci] = max(self.worst.get(ci, 0.0), err) if err == err else math.inf
        except BaseException:
            where = f"{self.cases[job[0]].id} {job[1]} stream {job[2]}" if job else "?"
            self.errors.append(f"thread {self.index} ({self.backend}) at {where}: {traceback.format_exc(limit=6)}")
        finally:
            for s in self.streams:
                s.synchronize()


def _tolerance(case: Case) -> float:
    from miofind.verify import tolerance

    p = case.problem
    return tolerance(p.dtype, case.family, p.direction, p.math)


def _serial_check(cases, hosts, sols) -> dict[int, str]:
    """Each case once on one side stream of the main thread, through both entry points (this also
    warms run_solution's prepared solution): {case index: what failed}. Failures here are the
    solver's, not a race."""
    import cupy

    from miofind.api import run_solution

    s = cupy.cuda.Stream(non_blocking=True)
    bad = {}
    for ci, case in enumerate(cases):
        a_h, b_h, ref_h, den = hosts[ci]
        sol, pr = sols[ci]
        try:
            with s:
                a, b, ref = cupy.asarray(a_h), cupy.asarray(b_h), cupy.asarray(ref_h)
                out = cupy.full(pr._shapes[2], cupy.nan, dtype=a.dtype)
                pr(a, b, out)
                out2 = run_solution(sol, a, b, stream=s)
                for name, o in (("prepared", out), ("run_solution", out2)):
                    d = o.astype(cupy.float64) - ref
                    err = math.sqrt(float((d * d).sum()) / den)
                    if not err <= _tolerance(case):
                        bad[ci] = f"{case.id} {name} (serial): relative error {err:.3g} > {_tolerance(case):.1g}"
        except Exception as e:
            bad[ci] = f"{case.id} (serial): {type(e).__name__}: {e}"
    s.synchronize()
    return bad


@pytest.mark.gpu
def test_threads_and_streams_under_load():
    import cupy

    from miofind.api import Solution, clear_caches
    from miofind.registry import get_solver

    seconds = _knob("MIOFIND_STRESS_SECONDS", 5.0, float, minimum=0)
    n_threads = _knob("MIOFIND_STRESS_THREADS", 8)
    n_streams = _knob("MIOFIND_STRESS_STREAMS", 4)
    per_solver = _knob("MIOFIND_STRESS_PER_SOLVER", 2)
    seed = _knob("MIOFIND_STRESS_SEED", 0, minimum=0)
    share = _knob("MIOFIND_STRESS_SHARED", 1, minimum=0)
    backends = _backends()

    # -- before the clock: the plan, the references, every solution compiled and prepared --------
    t_prep = time.perf_counter()
    cases, uncovered = plan(seed, per_solver)
    from miofind.solvers.cudnn_base import frontend_status
    assert not [u for u in uncovered if get_solver(u).family != "cudnn" or frontend_status()[0]], uncovered
    hosts = [host_inputs(c, seed * 100003 + i) for i, c in enumerate(cases)]

    failed: list[str] = []
    solutions: list = []
    for c in cases:
        s = get_solver(c.solver_id)
        try:
            cfg = s.default_config(c.problem.as_conv())
            solutions.append(Solution(s.id, s.algorithm, 0.0, s.workspace_bytes(c.problem), cfg, False, c.problem))
        except Exception as e:
            solutions.append(None)
            failed.append(f"{c.id} solution: {type(e).__name__}: {e}")

    def prepare(sol):
        try:
            return sol, (sol.prepare() if sol is not None else None)
        except Exception as e:
            failed.append(f"{sol.solver_id}:{sol.problem.key()} prepare: {type(e).__name__}: {e}")
            return sol, None

    # compile in a few threads (NVRTC releases the GIL), as find does; nothing runs yet
    with ThreadPoolExecutor(max_workers=4) as ex:
        prepared = list(ex.map(prepare, solutions))
    keep = [i for i, (sol, pr) in enumerate(prepared) if pr is not None]
    cases, hosts, sols = [cases[i] for i in keep], [hosts[i] for i in keep], [prepared[i] for i in keep]
    serial = _serial_check(cases, hosts, sols)
    failed += serial.values()
    keep = [i for i in range(len(cases)) if i not in serial]     # the load runs the cases that pass alone
    cases, hosts, sols = [cases[i] for i in keep], [hosts[i] for i in keep], [sols[i] for i in keep]
    assert cases, "no case passed on its own:\n" + "\n".join(failed[:20])
    cupy.cuda.Device().synchronize()
    prep_s = time.perf_counter() - t_prep

    # -- the load ------------------------------------------------------------------------------
    barrier = threading.Barrier(n_threads)
    shared = {}
    if share:
        if "torch" in backends:
            import torch
            shared["torch"] = torch.cuda.Stream()
        shared["cupy"] = cupy.cuda.Stream(non_blocking=True)
    workers = [Worker(t, backends[t % len(backends)], cases, hosts, sols, n_streams, seconds, barrier,
                      shared.get(backends[t % len(backends)])) for t in range(n_threads)]
    t0 = time.perf_counter()
    try:
        for w in workers:
            w.thread.start()
        end = time.monotonic() + seconds + 240
        for w in workers:
            w.thread.join(timeout=max(0.0, end - time.monotonic()))
        hung = [w.index for w in workers if w.thread.is_alive()]
        elapsed = time.perf_counter() - t0
    finally:
        if not any(w.thread.is_alive() for w in workers):
            cupy.cuda.Device().synchronize()
            clear_caches()      # drop the per-stream workspaces the prepared solutions made

    counts = sum((w.counts for w in workers), collections.Counter())
    mismatches = [m for w in workers for m in w.mismatches]
    errors = [e for w in workers for e in w.errors]
    missing = [(cases[ci].id, m) for ci in range(len(cases)) for m in MODES if not counts[(ci, m)]]
    by_mode = {m: sum(n for (_, mm), n in counts.items() if mm == m) for m in MODES}
    summary = {
        "runs": sum(counts.values()), "mismatches": len(mismatches), "errors": len(errors), "hung_threads": hung,
        "serial_failures": len(failed), "runs_by_mode": by_mode, "cases": len(cases),
        "families": sorted({c.family for c in cases}), "threads": n_threads, "streams_per_thread": n_streams,
        "shared_stream": bool(share),
        "backends": sorted({w.backend for w in workers}), "seconds": round(elapsed, 2),
        "prepare_seconds": round(prep_s, 2), "seed": seed, "per_solver": per_solver,
        "worst_rel_error_by_solver": {sid: max((w.worst.get(ci, 0.0) for w in workers
                                                for ci, c in enumerate(cases) if c.solver_id == sid), default=0.0)
                                      for sid in sorted({c.solver_id for c in cases})},
        "first_mismatches": mismatches[:20], "first_errors": errors[:5], "serial": failed[:20],
    }
    print(f"\nstress: {summary['runs']} runs {by_mode} of {len(cases)} cases ({', '.join(summary['families'])}) on "
          f"{n_threads} threads x {n_streams} streams{' + 1 shared' if share else ''} "
          f"({', '.join(summary['backends'])}) in {elapsed:.1f} s "
          f"(prepared in {prep_s:.1f} s): {len(mismatches)} mismatches, {len(errors)} errors, "
          f"{len(failed)} serial failures")
    report = os.environ.get("MIOFIND_STRESS_REPORT")
    if report:
        with open(report, "w") as f:
            json.dump(summary, f, indent=1)

    assert not hung, f"threads {hung} still running {seconds + 240:.0f} s after the start (a deadlock?)"
    assert not errors, "\n".join(errors[:5])
    assert not failed, f"{len(failed)} cases fail on their own (not a race):\n" + "\n".join(failed[:20])
    assert not missing, f"(case, mode) pairs never run: {missing[:10]}"
    assert not mismatches, f"{len(mismatches)} of {summary['runs']} runs mismatch:\n" + "\n".join(mismatches[:20])
