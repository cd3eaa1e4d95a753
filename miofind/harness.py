"""The measuring harness that find, tune and ``miofind run`` share: fresh random inputs for one
problem, a float64 reference output, and per-solution verify-then-time.

Inputs are random (never zeros) and made once per harness; the output is poisoned with NaN before
every verification run, so a kernel that skips elements cannot pass. Verification compares
against a float64 reference computed on the GPU (``Reference``: float64 GEMMs per filter tap, or the
naive solver's float64 kernel) with the bounds of ``verify.tolerance_for`` (data type,
family, direction, math mode and reduction length): an RMS error and a per-element error. Timing
takes CUDA events around each launch, the GPU's time of the call (``MIOFIND_FIND_TIMING``): warm-ups, then the
median with 20%/80% quantiles; under a time budget (find's), slow kernels get fewer runs.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time as _time
import weakref
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from .invokers import build_invoker, call
from .problem import ProblemDescription
from .reference import apply_epilogue
from .registry import reference_solver

log = logging.getLogger(__name__)


class VerifyError(RuntimeError):
    """The solution's output differs from the float64 reference beyond the tolerance."""


def describe(e: BaseException) -> str:
    """An exception as a stored failure reason: its class and message, at most 2000 characters."""
    return f"{e.__class__.__name__}: {str(e).strip()[:2000]}"


def failure_stage(e: Exception) -> tuple[str, str]:
    """(stage, reason) of a solution that failed in ``Harness.measure``: ``verify`` for a wrong
    result, ``launch`` for anything the kernel or its invoker raised."""
    return ("verify", str(e)) if isinstance(e, VerifyError) else ("launch", describe(e))


@dataclass
class Timing:
    """What ``timed_runs`` measured: median and 20%/80% quantiles (ms) of ``runs`` timed runs, and
    whether it stopped early (``cut``) because the candidate was clearly slower than ``cut_ms``."""

    median_ms: float
    q20_ms: float
    q80_ms: float
    runs: int
    cut: bool = False
    retimed: bool = False   # the first set of timed runs was unstable (``unstable``): these figures are a second set's


def timed_runs(fn, warmup: int, iters: int, budget_ms: float | None = None, cut_ms: float | None = None,
               first_ms: float | None = None, settle: float | None = None) -> Timing:
    """Time ``fn`` with CUDA events (its cuBLASLt matmuls through cuBLASLt itself, never the bridge GEMM that
    stands in for them while the library sets itself up: ``miofind.lt_bridge``): ``warmup`` runs, then ``iters`` timed runs.

    ``first_ms``: a run of ``fn`` already made and timed (the verification run), counted as the
    first warm-up. With ``budget_ms``, the first warm-up run made here is timed and a slow kernel gets
    fewer runs (``plan_runs``): a 100 ms kernel takes 4 runs here instead of 13; that probe is left out where
    ``first_ms`` shows every run fits BUDGET_PROBE_MARGIN times over. With ``cut_ms``
    (early stop), the warm-up runs are timed too (they never enter the figures of a kernel that is
    kept): once CUT_AFTER_WARMUPS of them ran and even the fastest took ``cut_ms`` or more, timing
    ends there; else it ends after the first TIMED_FIRST_GROUP timed runs (at least CUT_AFTER_RUNS) if the fastest
    of them took ``cut_ms`` or more. The figures are then those of the runs made, and ``cut`` is True. The fastest
    is what decides, so a first run slowed by one-time work (a module load) cannot cut a kernel.
    With ``settle``, timing also ends (not cut) after those first runs (at least SETTLE_AFTER_RUNS) when they all lie
    within ``settle`` x their median of each other: the median is then known as well as more runs would tell.
    A set of timed runs that ends neither way and spreads too widely (``unstable``) is timed once more, and
    the set of lower median kept (``retimed``; a second set that is cut leaves the first's figures).

    What a timed run measures follows ``MIOFIND_FIND_TIMING``: ``device`` (default) holds the GPU with a spin
    kernel (``Hold``) while the host enqueues the calls, so the events time the calls' GPU work alone, as
    cuDNN's and MIOpen's finds and Triton's ``do_bench`` do. The runs are then made in sets back to back, an event
    between each two, and synchronised once a set (the timed warm-ups; the first TIMED_FIRST_GROUP timed runs; the
    rest; the first two as one set where ``first_ms`` says they take at most MERGED_SET_MS): a run's time is still its
    own GPU work (``Hold.covered``: the host had queued it before the GPU reached it), without a synchronisation and a
    hold for each run.
    ``wall`` times each run alone and synchronised, and also counts the host's time before the call's first kernel
    starts (a cuDNN plan's longer host path was charged to its time)."""
    from .lt_bridge import direct

    with direct(), prompt_gil():
        return _timed_runs(fn, warmup, iters, budget_ms, cut_ms, first_ms, settle)


# While a thread times a call, another Python thread (a background build, a prefetch, the caller's own) holds the GIL
# for up to the switch interval (5 ms by default) before handing it over: a timed call whose launches wait for it
# leaves the GPU idle between its kernels, and the events count the wait. The interval is lowered to this many
# seconds while any thread verifies or times (``prompt_gil``). Six CuPy launches of 43.5 us beside a busy Python
# thread timed 36.7 ms at the default interval, every run alike (so the spread check missed 13 of 15 sets), and
# 43.5 us with it lowered (bench/results/session-nov27k/call7/gil.txt).
TIMING_SWITCH_INTERVAL = 5e-5
_switch_lock = threading.Lock()
_switch_depth = 0
_switch_saved = 0.0


@contextmanager
def prompt_gil():
    """Lower ``sys``'s thread switch interval to TIMING_SWITCH_INTERVAL (never raise it) until the outermost of any
    overlapping uses, in any thread, ends; then restore it."""
    global _switch_depth, _switch_saved
    with _switch_lock:
        if _switch_depth == 0:
            _switch_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_saved, TIMING_SWITCH_INTERVAL))
        _switch_depth += 1
    try:
        yield
    finally:
        with _switch_lock:
            _switch_depth -= 1
            if _switch_depth == 0:
                sys.setswitchinterval(_switch_saved)


def _timed_runs(fn, warmup, iters, budget_ms, cut_ms, first_ms, settle) -> Timing:
    import cupy

    from .env import find_timing

    hold = Hold() if find_timing() == "device" else None
    events: list = []

    def back_to_back(k: int) -> list[float]:
        """``k`` runs of ``fn`` back to back after one hold, an event between each two: their times in ms. A set with
        a run the host did not queue in time (``Hold.covered``) is made once more under a hold sized from what the
        host took; a run still not covered then is made again alone (as one set). Wall timing (no hold) makes one
        run a set: its start event must follow the host's work."""
        while len(events) <= k:
            events.append(cupy.cuda.Event())
        for attempt in range(2):
            t0 = _time.perf_counter()   # from before the hold's launch: it cannot start earlier
            if hold is not None:
                hold.launch(k)
            events[0].record()
            queued = []
            for i in range(k):
                fn()
                events[i + 1].record()
                queued.append(_time.perf_counter() - t0)
            events[k].synchronize()
            times = [cupy.cuda.get_elapsed_time(events[i], events[i + 1]) for i in range(k)]
            if hold is None:
                return times
            ok = hold.covered(queued, times)
            if all(ok) or (attempt and k == 1):
                return times
        return [t if c else back_to_back(1)[0] for t, c in zip(times, ok)]

    def runs(k: int) -> list[float]:
        size = 1 if hold is None else TIMED_SET_MAX     # a long set would fill the launch queue behind the hold
        out: list[float] = []
        while len(out) < k:
            out += back_to_back(min(size, k - len(out)))
        return out

    def untimed() -> None:
        t0 = _time.perf_counter()
        fn()
        if hold is not None:
            hold.enqueued(_time.perf_counter() - t0)

    def figures(times: list[float], cut: bool) -> Timing:
        times.sort()
        q = lambda f: times[min(len(times) - 1, int(round(f * (len(times) - 1))))]  # noqa: E731
        return Timing(q(0.5), q(0.2), q(0.8), len(times), cut)

    def cut_in_warmups() -> bool:
        return cut_ms is not None and len(warm) >= CUT_AFTER_WARMUPS and min(warm) >= cut_ms

    warm: list[float] = []
    done = 0                          # warm-up runs made
    if first_ms is not None and warmup > 0:
        warm.append(first_ms)
        done = 1
    # the budget's probe: one timed warm-up, unless the verification run already shows that every run fits
    # BUDGET_PROBE_MARGIN times over
    fits = first_ms is not None and 0 < first_ms * (warmup + iters) * BUDGET_PROBE_MARGIN <= (budget_ms or 0)
    if budget_ms is not None and warmup > done and not fits:
        warm += runs(1)
        done += 1
        if cut_in_warmups():
            return figures(warm, True)
        warmup, iters = plan_runs(warm[-1], warmup, iters, budget_ms)
    n_first = min(max(1, iters), TIMED_FIRST_GROUP) if cut_ms is not None or settle is not None else max(1, iters)
    ahead: list[float] = []     # the first timed runs, made in one set with the timed warm-ups (a short kernel's)
    if warmup > done:
        if cut_ms is None:
            for _ in range(warmup - done):
                untimed()
        else:
            # a kernel whose warm-ups and first timed runs take at most MERGED_SET_MS together (by the verification
            # run) makes one warm-up untimed, then the others and the first timed runs in one set: one hold and one
            # synchronisation fewer. The untimed call's enqueue time and the verification run's GPU time size that
            # set's hold (a fresh Hold knows neither, and holds HOLD_START_US a run). The warm-ups' early stop is
            # then judged after that set, which costs such a kernel under MERGED_SET_MS
            merge = hold is not None and first_ms is not None and warmup - done >= 2 and \
                0 < first_ms * (warmup - done + n_first) <= MERGED_SET_MS
            if merge:
                hold.ran(first_ms)
                untimed()
                done += 1
            got = runs(warmup - done + (n_first if merge else 0))
            warm += got[:warmup - done]
            ahead = got[warmup - done:]
            if cut_in_warmups():
                return figures(warm, True)

    def timed_set() -> Timing:
        nonlocal ahead
        times: list[float] = []
        n = max(1, iters)
        # the runs that early stop and settling judge first, back to back (made already where ``ahead``); then the rest
        for k in (n_first, n - n_first):
            if k <= 0:
                continue
            times += ahead or runs(k)
            ahead = []
            if len(times) >= n:
                break
            if cut_ms is not None and len(times) >= CUT_AFTER_RUNS and min(times) >= cut_ms:
                return figures(times, True)
            if (settle is not None and len(times) >= SETTLE_AFTER_RUNS
                    and max(times) - min(times) <= settle * sorted(times)[len(times) // 2]):
                break
        return figures(times, False)

    first = timed_set()
    if not unstable(first):
        return first
    again = timed_set()
    kept = first if again.cut or first.median_ms <= again.median_ms else again
    log.info("timing: a disturbed set of %d runs (median %.4g ms, q20 %.4g, q80 %.4g) timed again: median %.4g ms "
             "(q20 %.4g, q80 %.4g); kept the %s", first.runs, first.median_ms, first.q20_ms, first.q80_ms,
             again.median_ms, again.q20_ms, again.q80_ms, "first" if kept is first else "second")
    return replace(kept, retimed=True)


HOLD_SOURCE = "timing_hold.cu"


def hold_kernel_info():
    """The ``KernelInfo`` of the timing hold (kernels_src/timing_hold.cu): one thread spinning for a given
    number of nanoseconds."""
    from .solver import KernelInfo

    return KernelInfo(HOLD_SOURCE, "timing_hold", (1, 1, 1), (1, 1, 1))


class Hold:
    """The GPU held while the host enqueues timed calls (``MIOFIND_FIND_TIMING=device``): ``launch(runs)`` queues a
    spin on the current stream before the start event, long enough for the host to queue ``runs`` calls back to back
    before the GPU reaches each (``runs_us``); ``enqueued`` takes the host's enqueue time of an untimed call, and
    ``covered`` the queue times and GPU times of a timed set, says for each run whether the GPU was still held or busy
    with the earlier runs when its work had been queued (so the events timed the GPU's work alone), and sizes the next
    hold. The size follows the last HOLD_RECENT calls: one slow early call (a module's first load) would otherwise
    hold every later set for up to HOLD_MAX_US, and a set the host outruns is made again anyway."""

    def __init__(self) -> None:
        from .compile import compile_kernel

        self._kernel = compile_kernel(hold_kernel_info())
        self.us = HOLD_START_US     # the hold for one call
        self._held_us = 0.0
        self._recent: deque[float] = deque(maxlen=HOLD_RECENT)   # host us to queue one call
        self._gpu: deque[float] = deque(maxlen=HOLD_RECENT)      # GPU us of one run

    def runs_us(self, runs: int) -> float:
        """The hold for ``runs`` calls back to back. Call i (from 0) is queued about (i + 1) e after the hold's launch
        (e: the longest recent enqueue) and reached by the GPU after the hold and i runs of at least g us (the
        shortest recent run), so the hold must outlast e + (runs - 1) max(0, e - g): twice that plus HOLD_PAD_US,
        at most HOLD_MAX_US a call. With no call seen yet, HOLD_START_US a call."""
        if runs <= 1:
            return self.us
        if not self._recent:
            return HOLD_START_US * runs
        e, g = max(self._recent), min(self._gpu, default=0.0)
        return min(HOLD_MAX_US * runs, max(HOLD_MIN_US, 2.0 * (e + (runs - 1) * max(0.0, e - g)) + HOLD_PAD_US))

    def launch(self, runs: int = 1) -> None:
        self._held_us = self.runs_us(runs)
        self._kernel((1,), (1,), (np.uint64(int(self._held_us * 1e3)),))

    def ran(self, ms: float) -> None:
        """Take ``ms``, a run's GPU time measured elsewhere (the verification run's), as a recent run's."""
        self._gpu.append(ms * 1e3)

    def _resize(self) -> None:
        self.us = min(HOLD_MAX_US, max(HOLD_MIN_US, 2.0 * max(self._recent) + HOLD_PAD_US))

    def enqueued(self, seconds: float) -> bool:
        us = seconds * 1e6
        self._recent.append(us)
        self._resize()
        return us <= self._held_us

    def covered(self, queued_s: list[float], times_ms: list[float]) -> list[bool]:
        """For each run of a set made after ``launch``, whether it was covered: its work queued (``queued_s[i]``,
        seconds after the host began to launch the hold) before the GPU could reach it (the hold, then the runs
        before it, ``times_ms``)."""
        ok, reach, prev = [], self._held_us, 0.0
        for q, t in zip(queued_s, times_ms):
            us = q * 1e6
            self._recent.append(us - prev)
            self._gpu.append(t * 1e3)
            ok.append(us <= reach)
            reach += t * 1e3
            prev = us
        self._resize()
        return ok


# the first hold covers a call whose host path has not been seen (the warm-ups before the timed runs size it)
HOLD_START_US = 100.0
HOLD_MIN_US = 10.0
HOLD_MAX_US = 2000.0
HOLD_PAD_US = 25.0   # the hold's own launch and the two event records, which a warm-up's enqueue time lacks
HOLD_RECENT = 4      # enqueues that size the next hold
# a find's timed runs are made in sets back to back after one hold (``timed_runs``): first this many (early stop and
# settling judge them), then the rest
TIMED_FIRST_GROUP = 5
# ... and never more than this many in one set (``miofind run -i 1000``): the runs' launches queue behind the hold, and
# a full launch queue would stall the host past it
TIMED_SET_MAX = 20
# a find's timed warm-ups and first TIMED_FIRST_GROUP timed runs are made in one set where the verification run says
# that together they take at most this many ms (bench_cold's warm finds time 4-5 candidates of 0.07-0.2 ms, each
# paying a hold and a synchronisation per set: bench/results/session-dec01c/)
MERGED_SET_MS = 2.0
# the budget's timed probe run is left out where the verification run times every requested run this many times over
# within the budget
BUDGET_PROBE_MARGIN = 4.0


def time_ms(fn, warmup: int, iters: int, budget_ms: float | None = None) -> tuple[float, float, float]:
    """(median, q20, q80) in ms of ``fn`` over ``iters`` runs after ``warmup`` runs, by CUDA events
    (``timed_runs`` without early stop)."""
    t = timed_runs(fn, warmup, iters, budget_ms)
    return t.median_ms, t.q20_ms, t.q80_ms


MIN_TIMED_RUNS = 3
# early stop (``timed_runs``' ``cut_ms``) is judged after at least this many timed runs (the first set,
# TIMED_FIRST_GROUP): enough for a median and quantiles, and the fastest of three is not one lucky or unlucky run
CUT_AFTER_RUNS = 3
# ... and a kernel whose warm-up runs (after the verification run) are all that slow is cut before its
# timed runs: at the default factor of 3 a kept kernel is never that far behind in two runs
CUT_AFTER_WARMUPS = 2
# a find's timing (``timed_runs``' ``settle``) ends after this many timed runs when they all lie within
# SETTLE_SPREAD x their median: in ResNet-50's first FP32 step 41-46% of the fully timed candidates settle
# there (FP16: 12%), and the step's timing fell from 1.37 to 1.15 s, its winners unchanged beyond run-to-run
# noise (bench/results/session-ref/call7)
SETTLE_AFTER_RUNS = 5
SETTLE_SPREAD = 0.03
# a full set of timed runs whose 80% quantile is more than UNSTABLE_SPREAD x its 20% quantile was disturbed (in the
# shipped DB's 30939 records, 7 such sets had medians 3-1300x their own q20: e.g. 20.8 ms against 0.016 ms, something
# else held the GPU or the host for most of the runs), so it is timed once more and the set of lower median is kept:
# a disturbance only adds time. 57 records had a spread over 1.1 and 18 over 1.2 (bench/results/session-nov27k/).
UNSTABLE_SPREAD = 1.5


def spread_too_wide(q20_ms: float, q80_ms: float) -> bool:
    """Whether timed runs whose 20% and 80% quantiles are these spread too widely to trust their median."""
    return q80_ms > UNSTABLE_SPREAD * q20_ms


def unstable(t: Timing) -> bool:
    """Whether a full set of timed runs (not cut, at least MIN_TIMED_RUNS) spread too widely (``spread_too_wide``)."""
    return not t.cut and t.runs >= MIN_TIMED_RUNS and spread_too_wide(t.q20_ms, t.q80_ms)


def plan_runs(first_ms: float, warmup: int, iters: int, budget_ms: float) -> tuple[int, int]:
    """(warm-up runs, timed runs) for a kernel whose first warm-up run took ``first_ms``: the
    requested counts when they fit in ``budget_ms``; else one warm-up and as many timed runs as fit,
    never fewer than MIN_TIMED_RUNS (the median and quantiles need three)."""
    if first_ms <= 0 or first_ms * (warmup + iters) <= budget_ms:
        return warmup, iters
    fit = int(budget_ms // first_ms) - 1
    return 1, max(min(MIN_TIMED_RUNS, iters), min(iters, fit))


@dataclass
class Measurement:
    time_ms: float
    q20_ms: float
    q80_ms: float
    max_error: float | None
    runs: int = 1           # timed runs behind the figures (1: the verification run alone)
    cut: bool = False       # timing stopped early (``timed_runs``): clearly slower than the cut
    verify_ms: float = 0.0  # host wall time of the verification run and its comparison
    timing_ms: float = 0.0  # host wall time of the warm-ups and timed runs


class Harness:
    """Inputs, reference and output buffer for one problem on the current GPU.

    The float64 reference is computed once per harness (``reference_ms`` is its time, with the
    float64 input copies: host wall time, synchronised; with ``wait=False`` the launches are only
    queued, ``ready()`` waits for them, and ``reference_ms`` is their GPU time by CUDA events, which
    the caller's host work meanwhile overlapped, and ``reference_wait_ms`` the host time ``ready()``
    still waited). ``Harness.shared`` hands a find the live harness of the same problem when one
    exists (e.g. the tuner's, while it tunes that problem), so its inputs and reference are made once."""

    _live: weakref.WeakValueDictionary
    bias = None     # a fused problem's bias (k elements), made in __init__
    _pending = None   # (start, stop) CUDA events of a reference not waited for yet
    reference_wait_ms = 0.0

    def __init__(self, problem: ProblemDescription, *, verify: bool = True, seed: int | None = None,
                 reference_invoker=None, wait: bool = True) -> None:
        import cupy

        from .verify import random_array, to_float64

        self.problem = problem
        self.verify = verify
        dt = problem.dtype
        rng = cupy.random.default_rng(seed)
        a_shape, b_shape, out_shape = problem.io_shapes()
        self.a = random_array(a_shape, dt, rng)
        self.b = random_array(b_shape, dt, rng)
        self.out = cupy.empty(out_shape, dtype=self.a.dtype)
        # a fused problem's bias (k elements; None without one)
        self.bias = random_array((problem.k,), dt, rng, scale=4.0) if problem.bias else None
        self.check_ms = float("nan")
        self.errors = None
        self.ref = None
        self.reference_ms = 0.0
        if verify:
            t0 = _time.perf_counter()
            ref = reference_invoker if reference_invoker is not None else reference_invoker_for(problem)
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            self.ref = ref.output(problem, to_float64(self.a, dt), to_float64(self.b, dt),
                                  None if self.bias is None else to_float64(self.bias, dt))
            stop.record()
            self._pending = (start, stop)
            if wait:
                self.ready()
                self.reference_ms = (_time.perf_counter() - t0) * 1e3

    def ready(self) -> None:
        """Wait for a reference queued by ``wait=False`` (no-op otherwise): its GPU time goes to
        ``reference_ms``, the host time spent waiting here to ``reference_wait_ms``."""
        if self._pending is None:
            return
        import cupy

        start, stop = self._pending
        t0 = _time.perf_counter()
        stop.synchronize()
        self.reference_wait_ms = (_time.perf_counter() - t0) * 1e3
        self.reference_ms = cupy.cuda.get_elapsed_time(start, stop)
        self._pending = None
        self.release()   # the float64 input copies are gone: give their memory back for the candidates

    @classmethod
    def shared(cls, problem: ProblemDescription, *, verify: bool = True, seed: int | None = None,
               reference_invoker=None, wait: bool = True) -> tuple["Harness", bool]:
        """(harness, made now): the live harness of ``problem``, ``seed`` and ``verify`` in this
        process when there is one, else a new one (``wait`` as for the constructor), registered until
        it is garbage."""
        key = (problem, seed, verify)
        h = cls._live.get(key)
        if h is not None:
            return h, False
        h = cls(problem, verify=verify, seed=seed, reference_invoker=reference_invoker, wait=wait)
        cls._live[key] = h
        return h, True

    def release(self) -> None:
        """Return the memory pool's cached free blocks to the device when the problem is large (a
        cached 16 GiB block of one size cannot serve the next candidate's other sizes)."""
        import cupy

        if self.out.nbytes >= 1 << 30:
            cupy.cuda.get_current_stream().synchronize()
            cupy.get_default_memory_pool().free_all_blocks()

    def workspace(self, nbytes: int):
        import cupy
        return cupy.empty(nbytes, dtype=cupy.uint8) if nbytes else None

    def check(self, invoker, workspace, family: str) -> float | None:
        """Run once on a poisoned output; the relative L2 error (what find stores as ``max_error``),
        or None when not verifying. Raises VerifyError when the output fails
        ``verify.tolerance_for(problem, family)`` (its RMS error, or any one element's error); the
        errors of the run are kept in ``errors``, its time (CUDA events) in ``check_ms``."""
        self.run_poisoned(invoker, workspace)
        return self.verify_output(family)

    def run_poisoned(self, invoker, workspace) -> None:
        """The verification run: poison the output, run once, keep its time (CUDA events) in
        ``check_ms``; ``verify_output`` then judges what it wrote."""
        import cupy

        from .lt_bridge import direct
        from .verify import poison

        self.ready()
        p = self.problem
        poison(self.out, p.dtype)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        with direct():      # the solution's own cuBLASLt matmuls are verified, never the bridge GEMM
            call(invoker, p, self.a, self.b, self.out, workspace, bias=self.bias)
        stop.record()
        stop.synchronize()
        self.check_ms = cupy.cuda.get_elapsed_time(start, stop)

    def verify_output(self, family: str) -> float | None:
        """The output buffer against the float64 reference (see ``check``); None when not verifying.
        Runs after ``run_poisoned``, or after more runs of the same invoker on the same inputs: an
        element none of them wrote is still poison, and a later run must write what the first did."""
        from .verify import errors_of, tolerance_for

        if not self.verify:
            return None
        self.errors = errors_of(self.out, self.problem.dtype, self.ref)
        why = tolerance_for(self.problem, family).failure(self.errors)
        if why is not None:
            raise VerifyError(why)
        return self.errors.rel_l2

    def time(self, invoker, workspace, warmup: int = 3, iters: int = 10,
             budget_ms: float | None = None) -> tuple[float, float, float]:
        return time_ms(lambda: call(invoker, self.problem, self.a, self.b, self.out, workspace, bias=self.bias), warmup, iters,
                       budget_ms)

    def measure(self, invoker, workspace, family: str, warmup: int = 3, iters: int = 10,
                budget_ms: float | None = None, cut_ms: float | None = None,
                settle: float | None = None) -> Measurement:
        """The verification run on a poisoned output, the timing, then the verification of the
        output (``verify_output``). With ``budget_ms``, a kernel whose verification run alone took
        longer is recorded from that one run (median = q20 = q80): at that length one sample ranks
        it, and a 10 s naive kernel costs 10 s rather than 50. Otherwise ``timed_runs`` with the same
        budget, early stop at ``cut_ms`` and ``settle``, the verification run counting as the first of the
        ``warmup`` runs: a kernel cut there (the result's ``cut``) is not
        verified (``max_error`` None): find neither stores nor offers it as a verified solution."""
        with TIMING_LOCK, prompt_gil():
            t0 = _time.perf_counter()
            self.run_poisoned(invoker, workspace)
            t1 = _time.perf_counter()
            once = budget_ms is not None and self.check_ms > budget_ms
            if not once:
                t = timed_runs(lambda: call(invoker, self.problem, self.a, self.b, self.out, workspace, bias=self.bias),
                               warmup, iters, budget_ms, cut_ms, first_ms=self.check_ms, settle=settle)
            t2 = _time.perf_counter()
        if once:
            err = self.verify_output(family)
            return Measurement(self.check_ms, self.check_ms, self.check_ms, err, 1, False,
                               (_time.perf_counter() - t0) * 1e3, 0.0)
        err = None if t.cut else self.verify_output(family)
        return Measurement(t.median_ms, t.q20_ms, t.q80_ms, err, t.runs, t.cut,
                           (t1 - t0 + _time.perf_counter() - t2) * 1e3, (t2 - t1) * 1e3)


Harness._live = weakref.WeakValueDictionary()

# Held while a measurement runs and times its candidate: two threads timing at once (a find and the
# background work of ``miofind.tiered``) would each time the other's kernels too.
TIMING_LOCK = threading.Lock()


# The GEMM reference holds float64 temporaries of at most this many bytes (a batch chunk's); a problem one
# of whose samples needs more gets the naive kernel, which needs none.
REFERENCE_TEMP_BYTES = 1 << 30
# The naive float64 reference's rate in FLOP/s per direction on an H100, to estimate what it would take. Forward and
# backward data run the reference's own kernels (kernels_src/reference_fwd.cu, reference_bwd.cu), and so does
# backward weights (kernels_src/reference_wrw.cu). Channels-first (bench/results/session-nov27i/call1/r/ref_time.md): F
# 1.8-2.8e12 at stride 1 and 1.2-1.75e12 at stride 2 (divided here by the square root of the largest stride); B
# 2.0-3.4e12 at stride 1 and 0.95-1.08e12 at stride 2 (divided by the largest stride); W 0.44-0.76e12, 0.6e12 typical
# (reference_conv_wrw_cf, bench/results/session-nov27j/call1/r/ref_time_wcf.md; naive_conv_wrw 0.39-0.47e12). Channels-last
# (NAIVE_REFERENCE_CHANNELS_LAST_FLOPS), at either stride: F 0.48-0.52e12 (a thread's weights lie C*R*S apart from its
# neighbour's), B 2.3-3.6e12 (c fastest: a warp reads consecutive weights), W 1.6-2.5e12 (kernels_src/reference_wrw.cu,
# 1.1e12 on a 3-channel first layer, 0.18e12 depthwise; bench/results/session-nov27i/call6/r/ref_time_w.md).
NAIVE_REFERENCE_FLOPS = {"F": 2.4e12, "B": 2.4e12, "W": 0.6e12}
NAIVE_REFERENCE_CHANNELS_LAST_FLOPS = {"F": 0.49e12, "B": 2.4e12, "W": 1.8e12}
# Channels-last forward where the reference runs a warp per output (wide groups: the naive forward solver's
# reference_fwd_warp): 0.73-2.05e12, 1.5e12 typical (bench/results/session-nov27i/call9/r/ref_time_f.md).
NAIVE_REFERENCE_FWD_WARP_FLOPS = 1.2e12
# The GEMM reference's first use in a process costs 70-100 ms (cuBLAS sets itself up). As in ski rental, a
# process takes the naive kernel until the naive references it has run, with the one at hand, would have
# taken about that long (a few small cold finds never pay it; a network's first step pays it after a few
# layers) ...
REFERENCE_GEMM_SETUP_MS = 60.0
# ... counting only the problems where the naive kernel would take at least this long, where the GEMMs
# are then taken
REFERENCE_GEMM_MIN_MS = 2.0
# ... plus this much per filter tap and batch chunk: each tap's GEMM is a CuPy einsum with a strided patch
# copy, 0.33-0.7 ms of host time per tap on the H100 host, which its GPU time follows (a find's warm process,
# bench/results/session-warmfind/call3/: an Inception 5x5 layer's GEMM reference cost 8-15 ms of host time
# where the naive kernel takes about 2.5 ms of GPU time, overlapped by the find's host work)
REFERENCE_GEMM_TAP_MS = 0.5
# ... but never where a group's input or output channels are fewer than this: each tap's GEMM is then too
# thin to gain (a network's 7x7 stem over 3 channels: 6.5 ms naive against 25 ms in GEMMs; depthwise)
REFERENCE_GEMM_MIN_CHANNELS = 8
_gemm_used = False      # whether this process has run a GEMM reference
_naive_spent_ms = 0.0   # the estimated time of the naive references it has run where the GEMMs could gain


def _gemm_gain_ms(conv: ProblemDescription) -> float:
    """The naive reference's estimated ms (``naive_reference_ms``) of a plain convolution where the GEMMs
    could gain (at least REFERENCE_GEMM_MIN_CHANNELS per group, at least REFERENCE_GEMM_MIN_MS plus
    REFERENCE_GEMM_TAP_MS per filter tap and batch chunk), else 0."""
    if min(conv.c, conv.k) // conv.groups < REFERENCE_GEMM_MIN_CHANNELS:
        return 0.0
    from .reference import reference_chunk

    ms = naive_reference_ms(conv)
    chunks = -(-conv.n // reference_chunk(conv, conv.n, REFERENCE_TEMP_BYTES))
    return ms if ms >= REFERENCE_GEMM_MIN_MS + REFERENCE_GEMM_TAP_MS * math.prod(conv.filter_size) * chunks else 0.0


def _count_naive(problem: ProblemDescription) -> None:
    """Adds a naive reference run of ``problem`` to ``_naive_spent_ms`` where the GEMMs could gain."""
    global _naive_spent_ms
    _naive_spent_ms += _gemm_gain_ms(problem.unfused().as_conv())


def naive_reference_ms(problem: ProblemDescription) -> float:
    """The naive float64 reference's estimated time for ``problem`` (``NAIVE_REFERENCE_FLOPS``,
    ``NAIVE_REFERENCE_CHANNELS_LAST_FLOPS``, ``NAIVE_REFERENCE_FWD_WARP_FLOPS``), in ms."""
    conv = problem.unfused().as_conv()
    if conv.direction == "F" and reference_solver("F").reference_fwd_warp(conv):
        rate = NAIVE_REFERENCE_FWD_WARP_FLOPS
    elif conv.layouts[0] in ("NHWC", "NDHWC"):
        rate = NAIVE_REFERENCE_CHANNELS_LAST_FLOPS[conv.direction]
    elif conv.direction == "F":
        rate = NAIVE_REFERENCE_FLOPS["F"] / math.sqrt(max(conv.strides))
    elif conv.direction == "B":
        rate = NAIVE_REFERENCE_FLOPS["B"] / max(conv.strides)
    else:
        rate = NAIVE_REFERENCE_FLOPS["W"]
    return conv.flops() / rate * 1e3


class Reference:
    """How a harness computes its float64 reference output.

    ``kind`` is ``gemm``: ``miofind.reference.conv_reference`` on the GPU, one float64 GEMM (cuBLAS DGEMM
    through CuPy) per filter tap batched over the groups, in batch chunks of at most REFERENCE_TEMP_BYTES
    of temporaries; or ``naive``: the naive solver's float64 kernel (``invoker``), one thread per output
    element (for backward data its own kernel, the same sum with the filter taps outermost). Neither shares
    code with the solvers it verifies. ``output`` only queues GPU work."""

    def __init__(self, kind: str, invoker=None) -> None:
        self.kind = kind
        self.invoker = invoker

    def output(self, problem: ProblemDescription, a64, b64, bias64=None):
        """The float64 output (CuPy, in the output's layout) of ``problem`` for float64 inputs in the
        order of ``problem.io_shapes()``, a fused problem's epilogue applied with ``bias64``."""
        import cupy

        from .reference import conv_reference

        if self.kind == "gemm":
            global _gemm_used
            _gemm_used = True
            return conv_reference(problem, a64, b64, bias64, max_bytes=REFERENCE_TEMP_BYTES)
        _count_naive(problem)
        out = cupy.empty(problem.io_shapes()[2], dtype=cupy.float64)
        out.fill(cupy.nan)
        call(self.invoker, problem.unfused(), a64, b64, out, None)
        if problem.fused:
            apply_epilogue(out, problem, bias64)
        return out

    def __repr__(self) -> str:
        return f"<float64 reference: {self.kind}>"


def reference_kind(problem: ProblemDescription) -> str:
    """``gemm`` or ``naive`` for ``problem`` (``Reference``): $MIOFIND_REFERENCE, where ``auto`` (the
    default) takes the GEMMs for a problem with at least REFERENCE_GEMM_MIN_CHANNELS input and output
    channels per group whose naive reference would take at least REFERENCE_GEMM_MIN_MS
    (``naive_reference_ms``), once this process has run a GEMM reference or once its naive references of
    such problems, with this one, add up to REFERENCE_GEMM_SETUP_MS; both only where one sample's
    temporaries fit REFERENCE_TEMP_BYTES (``gemm`` too)."""
    from . import env
    from .reference import reference_bytes_per_sample

    choice = env.reference()
    if choice == "naive":
        return "naive"
    conv = problem.unfused().as_conv()
    if reference_bytes_per_sample(conv) > REFERENCE_TEMP_BYTES:
        return "naive"
    if choice == "auto":
        gain_ms = _gemm_gain_ms(conv)
        if not gain_ms or (not _gemm_used and _naive_spent_ms + gain_ms < REFERENCE_GEMM_SETUP_MS):
            return "naive"
    return "gemm"


def reference_invoker_for(problem: ProblemDescription) -> Reference:
    """The float64 reference of ``problem`` (``Reference``, of ``reference_kind``), compiled where it is
    the naive kernel (of the plain convolution under a fused problem's epilogue, which ``output``
    adds)."""
    return reference_invoker_for_kind(problem, reference_kind(problem))


def reference_invoker_for_kind(problem: ProblemDescription, kind: str) -> Reference:
    """``reference_invoker_for`` with the kind (``gemm`` or ``naive``) given."""
    if kind == "gemm":
        return Reference("gemm")
    conv = problem.unfused().as_conv()
    return Reference("naive", build_invoker(conv, reference_solver(conv.direction).get_solution(conv, None,
                                                                                                  reference=True)))
