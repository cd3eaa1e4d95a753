"""Which solution runs each convolution: an in-process table from the problem to a prepared solution.

The first time a process meets a problem (shapes, strides, pads, dilations, groups, data type,
layout, direction, math mode, deterministic or not, device), it asks ``miofind.find_solutions``
in the find mode of ``MIOFIND_FIND_MODE`` (default normal): the FindDBs (user over shipped) answer
when they know the problem, else the problem is benchmarked and stored. The fastest solution
(among the deterministic ones under ``torch.use_deterministic_algorithms(True)``) is prepared and
kept. Every later call is one dict lookup. ``stats()`` counts what the misses cost.

A find may leave a solver whose kernels are not compiled yet to the background (``miofind.tiered``:
deferred). When its measurement is stored and beats the prepared solution, the problem's Entry is
replaced by one running it, on the next call from a thread that is not capturing a CUDA graph
(``_apply_swaps``; functional's forward plans follow through ``_on_swap``), except under deterministic
algorithms, where a process keeps its first choice.
"""

from __future__ import annotations

import logging
import threading
import time

import torch

from .. import lt_bridge
from ..problem import ProblemDescription
from . import _fast
from ._alloc import first_call_allocator, graph_trees_in_use as _graph_trees_in_use
from ._alloc import in_graph_tree_run as _in_graph_tree_run

log = logging.getLogger(__name__)

_DTYPES = {torch.float32: "FP32", torch.float16: "FP16", torch.bfloat16: "BF16"}
SUPPORTED_DTYPES = frozenset(_DTYPES)

_stats = {"lookups": 0, "db_hits": 0, "finds_run": 0, "predicted": 0, "find_ms": 0.0, "replaced": 0,
          "host_aware": 0, "settled": 0, "settle_ms": 0.0}
_table: dict[tuple, "Entry"] = {}
_ops_base = [0, 0, 0, 0]     # _fast.ops_stats() at the last reset_stats
_lock = threading.Lock()
_on_clear: list = []     # callables run by ``clear`` (functional's forward plans hold Entries)
_on_swap: list = []      # callables (old Entry, new Entry) run when a deferred solution replaces an Entry
_swaps: list = []        # (problem key, Solution) stored by deferred measurements, not yet applied
# Entries running a generic build while their specialised one compiles (``tiered.Switching``); each leaves the set
# when its compile job is done (``_track``)
_unsettled: set = set()
# how long a CUDA-graph tree's warm-up run waits for the specialised builds (``_settle_for_graphs``)
GRAPH_SETTLE_TIMEOUT_S = 600.0
# (device, stream) -> the workspace every Entry launched on that stream shares (``workspace``)
_workspaces: dict[tuple[int, int], "torch.Tensor"] = {}
# a workspace larger than this is allocated per call and given back after it, not kept
KEEP_WORKSPACE_BYTES = 64 << 20


def stats() -> dict:
    """Counters since the start (or ``reset_stats``): ``lookups`` (problems this process met for the
    first time, each one ``find_solutions`` call), ``db_hits`` (of those, answered from a FindDB),
    ``finds_run`` (benchmarked: the FindDBs did not know them), ``predicted`` (fast mode's
    predictions), ``find_ms`` (wall time of those calls, milliseconds), ``replaced`` (Entries replaced
    by a faster solution a find had deferred to the background), ``host_aware`` (problems given a solution the C++
    path launches over a slightly faster one it cannot: ``MIOFIND_TORCH_HOST_US``), ``settled`` and ``settle_ms``
    (specialised builds waited for before a CUDA graph holds them, ``settle``, and the wall time of those waits),
    ``ops_cpp`` and ``ops_python`` (calls of the custom ops, as ``torch.compile``'s graphs make them, launched from the
    C++ extension and through the Python path), ``ops_autograd_cpp`` and ``ops_autograd_python`` (op calls whose
    autograd step was the extension's C++ kernel, recording nothing, and custom_op's Python one), and ``problems``
    (how many are prepared now)."""
    out = dict(_stats)
    now = _fast.ops_stats()
    for i, name in enumerate(("ops_cpp", "ops_python", "ops_autograd_cpp", "ops_autograd_python")):
        out[name] = now[i] - _ops_base[i]
    out["problems"] = len(_table)
    return out


def reset_stats() -> None:
    """Zero the counters (the prepared problems stay)."""
    _ops_base[:] = _fast.ops_stats()
    with _lock:
        _stats.update(lookups=0, db_hits=0, finds_run=0, predicted=0, find_ms=0.0, replaced=0, host_aware=0,
                      settled=0, settle_ms=0.0)


def clear() -> None:
    """Forget every prepared problem (the next call of each asks the FindDBs again), give the kept
    workspaces back to PyTorch's caching allocator, and drop the kept autocast weight casts."""
    with _lock:
        _table.clear()
        _swaps.clear()
        _unsettled.clear()
        _workspaces.clear()
        _fusable.clear()
        for hook in _on_clear:
            hook()


def deterministic() -> bool:
    """Whether PyTorch asks for deterministic algorithms (``torch.use_deterministic_algorithms(True)``
    or ``torch.backends.cudnn.deterministic``)."""
    return _det_algorithms() or _det_cudnn()


# the settings' C getters (what ``torch.are_deterministic_algorithms_enabled``, ``cudnn.deterministic`` and
# ``cudnn.allow_tf32`` read, without their Python property chains: a key is made per call)
_det_algorithms = getattr(torch._C, "_get_deterministic_algorithms", None) or torch.are_deterministic_algorithms_enabled
_det_cudnn = getattr(torch._C, "_get_cudnn_deterministic", None) or (lambda: torch.backends.cudnn.deterministic)
allow_tf32 = getattr(torch._C, "_get_cudnn_allow_tf32", None) or (lambda: torch.backends.cudnn.allow_tf32)
lt_bridge.veto(deterministic)   # deterministic runs: cuBLASLt itself from the first call (see lt_bridge.veto)


def _tup(v) -> tuple:
    return v if type(v) is tuple else tuple(v)


def table_key(direction: str, x_shape, w_shape, stride, padding, dilation, groups: int, dtype, channels_last: bool,
              device: int, bias: bool = False, activation: str = "none") -> tuple:
    """The key of a problem in the prepared table (shapes and parameters as tuples: torch.Size is one,
    the custom ops pass lists), with the TF32 and deterministic settings as they are now; ``bias`` and
    ``activation``: the fused forward problem with that epilogue (``fusable``), keyed by (bias, activation)."""
    tf32 = dtype is torch.float32 and allow_tf32()
    key = (direction, tuple(x_shape), tuple(w_shape), _tup(stride), _tup(padding), _tup(dilation), groups, dtype,
           channels_last, tf32, deterministic(), device)
    return key + ((bool(bias), activation),) if bias or activation != "none" else key


_fusable: dict[tuple, bool] = {}


def fusable(key: tuple, bias: bool, activation: str = "none") -> bool:
    """Whether the forward of ``key`` (a plain ``table_key``) runs the epilogue (``bias``, then
    ``activation``) in its solution: when one of miofind's own solvers with a fused epilogue claims that
    fused problem (the find then chooses among the solvers that fuse: ours and cuDNN's fused graph).
    Otherwise the bias is one PyTorch add after the convolution and the activation one op after that.
    ``MIOFIND_TORCH_FUSE_BIAS=0`` turns off every epilogue with a bias. Answered once per key and
    epilogue (applicability only, no GPU work)."""
    ck = (key, bool(bias), activation)
    hit = _fusable.get(ck)
    if hit is None:
        from .. import env
        from ..registry import solvers
        d, xs, ws, stride, padding, dilation, groups, dtype, cl, tf32 = key[:10]
        if dtype not in _DTYPES or key[11] < 0 or (bias and not env.torch_fuse_bias()):   # not ours, CPU, or off
            _fusable[ck] = False
            return False
        try:
            p = problem_for(d, xs, ws, stride, padding, dilation, groups, dtype, cl, tf32, bias=int(bool(bias)),
                            activation=activation)
            hit = any(s.fused_epilogue and s.family != "cudnn" and s.applicability(p) for s in solvers("F"))
        except ValueError:
            hit = False
        _fusable[ck] = hit
    return hit


def problem_for(direction: str, x_shape, w_shape, stride, padding, dilation, groups: int, dtype,
                channels_last: bool, tf32: bool, bias: int = 0, activation: str = "none") -> ProblemDescription:
    """The ProblemDescription of a torch convolution: ``x_shape``/``w_shape`` in torch's logical
    order (N, C, *spatial) and (K, C/groups, *filter), 2 or 3 spatial dims; ``bias=1`` and/or an
    ``activation``: the fused forward with that epilogue."""
    nd = len(x_shape) - 2
    dt = _DTYPES[dtype]
    layout = ("NHWC" if nd == 2 else "NDHWC") if channels_last else ("NCHW" if nd == 2 else "NCDHW")
    return ProblemDescription.make(direction, n=int(x_shape[0]), c=int(x_shape[1]), k=int(w_shape[0]),
                                   in_size=tuple(int(v) for v in x_shape[2:]),
                                   filter_size=tuple(int(v) for v in w_shape[2:]), pads=tuple(padding),
                                   strides=tuple(stride), dilations=tuple(dilation), groups=int(groups),
                                   layout=layout, dtype=dt, math="tf32" if tf32 and dt == "FP32" else "strict",
                                   bias=bias, activation=activation)


class Entry:
    """A problem's prepared solution and how to call it with torch tensors."""

    __slots__ = ("pr", "ws_bytes", "streams", "solver_id", "source", "a_shape", "invoker", "swap", "dev", "fused",
                 "problem_key", "time_ms", "replay")

    def __init__(self, pr, solver_id: str, source: str, dev: int, problem_key: str | None = None,
                 time_ms: float = float("inf")) -> None:
        self.pr, self.dev = pr, dev
        self.problem_key, self.time_ms = problem_key, time_ms     # what a deferred solution must beat
        self.ws_bytes = int(pr.workspace_bytes)
        self.solver_id, self.source = solver_id, source
        self.streams: set[int] = set()
        # torch's (logical) shape of the first input, the one no caller of ``__call__`` has fixed
        # by construction (dy of B and W comes from autograd); None (always the checked call) for a
        # prepared solution with no raw invoker
        self.invoker = getattr(pr, "invoker", None)
        self.a_shape = (pr._logical[0] if pr._cl[0] else pr._shapes[0]) if self.invoker else None
        self.swap = getattr(pr, "_swap", False)
        self.fused = bool(getattr(pr, "_fused", False))     # a fused problem: the bias goes with every call
        # the Prepared's native replay of a stream (``Prepared.replay``: made by its first call on that stream)
        self.replay = getattr(pr, "replay", None)

    def __call__(self, a, b, out, stream: int, bias=None):
        """Run on torch tensors in the problem's layout (torch's logical shapes) on ``stream``, with
        a workspace from ``workspace``; returns ``out``. The callers (``_ops``) make ``a`` and ``b``
        dense in the problem's memory format, ``b`` of the key's shape and ``out`` new; ``a``'s
        shape is checked here."""
        if _swaps:
            _apply_swaps()
        if _unsettled:
            _settle_for_graphs()
        if stream in self.streams and a.shape == self.a_shape and self.invoker is not None:
            return self.run(a.data_ptr(), b.data_ptr(), out, stream, bias)
        wst = workspace(self.ws_bytes, self.dev, stream) if self.ws_bytes else None
        ws = wst.data_ptr() if wst is not None else None
        args = (a, b, out)
        kw = {"bias": bias} if self.fused else {}
        if stream in self.streams:
            self.pr(*args, workspace=ws, stream=stream, **kw)
            del wst
            return out
        # first call on this stream: a solution may make per-stream state (cuBLAS workspace, cuFFT
        # work area) through CuPy
        with first_call_allocator():
            self.pr(*args, workspace=ws, stream=stream, **kw)
        self.streams.add(stream)
        del wst
        return out

    def run(self, pa: int, pb: int, out, stream: int, bias=None):
        """The hot path on a stream this Entry has run on: launch on device pointers (of arrays the
        caller has checked; a fused Entry's ``bias`` a dense vector of k elements), the workspace from
        ``workspace``; returns ``out``."""
        if self.swap:
            pa, pb = pb, pa
        pw = workspace(self.ws_bytes, self.dev, stream).data_ptr() if self.ws_bytes else 0
        if self.replay is not None and self.replay(stream, pa, pb, out.data_ptr(), pw, make=False):
            return out
        if self.fused:      # an activation-only epilogue has no bias: a null pointer
            self.invoker(pa, pb, out.data_ptr(), pw, stream, bias.data_ptr() if bias is not None else 0)
        else:
            self.invoker(pa, pb, out.data_ptr(), pw, stream)
        return out


def workspace(nbytes: int, dev: int, stream: int) -> "torch.Tensor":
    """A workspace of at least ``nbytes`` (> 0) for launches on ``stream`` of CUDA device ``dev`` (the
    current device and its current stream), from PyTorch's caching allocator.

    One buffer per (device, stream) is kept and shared by every Entry launching there: launches on
    one stream run in order, so they never use it at once, and a kept buffer saves an allocation
    (3-8 us of host time) per launch. It grows when a larger workspace is asked for: the old block
    goes back to PyTorch's pool for this stream, which hands it out only to work queued after the
    launches that used it. ``clear()`` gives the kept buffers back. Not kept: a workspace above
    ``KEEP_WORKSPACE_BYTES`` (it would sit idle beside PyTorch's pool), and any workspace asked for
    during CUDA-graph capture, which comes from the graph's own pool per call, so that a graph never
    holds a buffer that eager launches or a later growth could touch. Nor is a new one kept in a
    process running CUDA-graph trees (``_graph_trees_in_use``): their warm-up runs allocate from a graph
    pool, and a kept buffer there is a live tensor the trees do not track (torch refuses to record)."""
    if _capturing_stream():
        return _new_workspace(nbytes, dev)
    t = _workspaces.get((dev, stream))
    if t is not None and t.numel() >= nbytes:
        return t
    if nbytes > KEEP_WORKSPACE_BYTES or _graph_trees_in_use():
        return _new_workspace(nbytes, dev)
    t = _workspaces[(dev, stream)] = _new_workspace(nbytes, dev)
    return t


def _new_workspace(nbytes: int, dev: int) -> "torch.Tensor":
    return torch.empty(nbytes, dtype=torch.uint8, device=torch.device("cuda", dev))


# whether the current stream is capturing a CUDA graph (one C call; ``torch.cuda``'s wrapper checks
# more first)
_capturing_stream = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None) or torch.cuda.is_current_stream_capturing


def lookup(key: tuple, make_problem, device: int, det: bool) -> Entry:
    """The Entry of ``key``, made on a miss from ``make_problem()`` on CUDA device ``device``, among
    deterministic solvers only when ``det`` (see the module docstring)."""
    e = _table.get(key)
    if e is not None:
        return e
    with _lock:
        e = _table.get(key)
        if e is None:
            if _capturing():
                raise RuntimeError(
                    f"miofind.torch: the first call of {make_problem().key()} came during CUDA-graph capture, "
                    "where a find cannot run; run one warm-up iteration on the capture stream before capturing")
            with _on_device(device):
                e = _choose(make_problem(), det, device)
            _table[key] = e
            _track(e)
    if _swaps:
        _apply_swaps()
        e = _table.get(key, e)
    return e


def _heard(problem, sol) -> None:
    """``tiered.on_deferred``'s listener (a background thread): note the stored solution."""
    with _lock:
        _swaps.append((problem.key(), sol))
    _fast.ops_clear()       # the custom ops' next calls go through Python, which applies the swap


def _apply_swaps() -> None:
    """Replace each Entry whose problem a deferred measurement solved faster with an Entry of that solution;
    never during CUDA-graph capture, and never an Entry of a deterministic key (under
    ``torch.use_deterministic_algorithms(True)`` a process keeps its first choice, so that its runs repeat
    bit for bit; the next process reads the FindDB with the deferred record in it), nor in a process that
    runs CUDA-graph trees (``_graph_trees_in_use``), which also keeps its first choices."""
    if _capturing_stream():
        return
    if _graph_trees_in_use():
        with _lock:
            _swaps.clear()
        return
    with _lock:
        todo, _swaps[:] = list(_swaps), []
        for pkey, sol in todo:
            for tkey, old in list(_table.items()):
                if old.problem_key != pkey or sol.time_ms >= old.time_ms:
                    continue
                if tkey[10]:    # table_key's deterministic flag: the same algorithm for the whole process
                    continue
                try:
                    with _on_device(old.dev):
                        new = Entry(sol.prepare(), sol.solver_id, "deferred", old.dev, pkey, sol.time_ms)
                except Exception as e:      # noqa: BLE001  the Entry it would replace keeps running
                    log.warning("miofind.torch: %s for %s could not be prepared (%s: %s); keeping %s", sol.solver_id,
                                pkey, type(e).__name__, e, old.solver_id)
                    continue
                _table[tkey] = new
                _track(new)
                for hook in _on_swap:
                    hook(old, new)
                _stats["replaced"] += 1
                log.info("miofind.torch: %s: the deferred %s (%.4f ms) replaces %s (%.4f ms)", pkey, sol.solver_id,
                         sol.time_ms, old.solver_id, old.time_ms)


def _track(e: Entry) -> None:
    """Keep ``e`` in ``_unsettled`` while its invoker runs a generic build whose specialised one compiles in the
    background (``tiered.Switching.job``); the job's completion takes it out (at once where it is done)."""
    inv = e.invoker
    job = getattr(inv, "job", None) if type(inv).__name__ == "Switching" else None
    if job is None or job.done():
        return
    _unsettled.add(e)
    job.add_done_callback(lambda _f, e=e: _unsettled.discard(e))


def settle(timeout: float | None = None) -> int:
    """Wait until every prepared problem whose specialised kernels compile in the background
    (``MIOFIND_SPECIALIZE=background`` on a cold kernel cache: it runs its generic build meanwhile) runs them, and
    return how many it waited for. A CUDA graph keeps the kernels it captured for as long as it is replayed, so call
    this after the warm-up iterations and before ``torch.cuda.graph`` capture; the warm-up runs of ``torch.compile``'s
    CUDA-graph trees (``mode="reduce-overhead"``) do it themselves. A build that does not compile, or is not in
    within ``timeout`` seconds, leaves its generic build running (logged)."""
    from concurrent.futures import TimeoutError as FutureTimeout

    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout >= 0):
        raise ValueError(f"miofind.torch.settle: timeout={timeout!r}: expected seconds >= 0, or None to wait for all")
    waiting = list(_unsettled)
    if not waiting:
        return 0
    t0 = time.perf_counter()
    end = None if timeout is None else t0 + timeout
    for e in waiting:
        try:
            e.invoker.job.result(None if end is None else max(0.0, end - time.perf_counter()))
        except FutureTimeout:
            log.warning("miofind.torch: %s for %s: its specialised build was not in within %.0f s; its generic build "
                        "runs", e.solver_id, e.problem_key, timeout)
            _unsettled.discard(e)
        except Exception as x:      # noqa: BLE001  the job logs its own failures; the generic build runs
            log.info("miofind.torch: %s for %s: %s: %s", e.solver_id, e.problem_key, type(x).__name__, x)
            _unsettled.discard(e)
    _stats["settled"] += len(waiting)
    _stats["settle_ms"] += (time.perf_counter() - t0) * 1e3
    return len(waiting)


def _settle_for_graphs() -> None:
    """``settle`` in a warm-up run of ``torch.compile``'s CUDA-graph trees: the graphs it records next replay the
    kernels of that moment for the whole process, so they get the specialised builds, not the generic ones. Not while
    a stream captures (a graph is being recorded: the wait's module loads would come in the middle of it), and not
    on eager calls, which switch to the specialised builds by themselves as each one is in."""
    if _capturing_stream() or not _in_graph_tree_run():     # in_graph_tree_run: False where no trees run
        return
    settle(GRAPH_SETTLE_TIMEOUT_S)


def _capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _on_device(device: int):
    """CuPy's current device set to ``device`` for a find and prepare (a hook for tests)."""
    import cupy
    return cupy.cuda.Device(device)


def _release_find_memory() -> None:
    """Give what CuPy's pool cached during a find (inputs, references, workspaces) back to the
    driver, so that it does not sit beside PyTorch's pool (a hook for tests)."""
    import cupy
    cupy.get_default_memory_pool().free_all_blocks()


def _find(problem: ProblemDescription):
    """``miofind.find_solutions`` in the environment's find mode (a hook for tests)."""
    from ..api import find_solutions
    return find_solutions(problem)


def _find_among(problem: ProblemDescription, ids: list[str]):
    """``miofind.find_solutions`` timing only the solvers ``ids`` (a hook for tests)."""
    from ..api import find_solutions
    return find_solutions(problem, solvers=ids)


HOST_AWARE_TRIES = 3     # the next solutions _host_aware prepares at most


def _host_aware_on(problem: ProblemDescription) -> bool:
    """Whether the host-aware choice applies to ``problem``'s Entries (see ``_host_aware``): ``MIOFIND_TORCH_HOST_US``
    is above 0, the C++ path may run (a fused problem's too: its bias is a pointer of the Hopper forward's
    recipe), and the call is not in a run of ``torch.compile``'s CUDA-graph trees (``mode="reduce-overhead"``,
    whose warm-up run makes the choices of its graphs): a replayed graph spends no host time per call, so there the
    records' GPU time alone decides."""
    from .. import env
    return env.torch_host_us() > 0 and _fast.possible() and not _in_graph_tree_run()


def _host_aware(e: Entry, rest, problem: ProblemDescription, src: str, dev: int) -> Entry:
    """``e`` (the fastest solution that prepared), or, where the C++ path is on and cannot launch ``e`` (each call
    through Python: tens of microseconds of host time more), the fastest of the next solutions ``rest`` that it
    launches and that is within ``MIOFIND_TORCH_HOST_US`` of ``e``'s measured time. A framework's step is
    host-bound wherever its layers are small, and that host time is what such a layer costs it. The Entry chosen
    keeps ``e``'s time as the one a deferred solution must beat."""
    if not _host_aware_on(problem) or _fast.launches(e):
        return e
    return _alternative(e.solver_id, e.time_ms, rest, problem, src, dev) or e


def _native_cudnn(problem: ProblemDescription) -> bool:
    """Whether the C++ path would replay ``problem``'s cuDNN plans natively (``cudnn_base.replays_natively``)."""
    from ..solvers import cudnn_base
    return cudnn_base.replays_natively(problem)


def _alternative(solver_id: str, time_ms: float, rest, problem: ProblemDescription, src: str,
                 dev: int, host_us: float | None = None) -> Entry | None:
    """The host-aware choice's Entry among ``rest`` for a fastest solution (``solver_id``, ``time_ms``) that costs
    ``host_us`` more host time per call (default ``MIOFIND_TORCH_HOST_US``: one the C++ path does not launch) than
    a solution the C++ path launches, or None."""
    from .. import env
    limit = time_ms + (env.torch_host_us() if host_us is None else host_us) / 1e3
    for s in rest[:HOST_AWARE_TRIES]:
        if s.time_ms > limit:
            break
        try:
            alt = Entry(s.prepare(), s.solver_id, src, dev, problem.key(), time_ms)
        except Exception as x:      # noqa: BLE001  e stays
            log.info("miofind.torch: %s for %s could not be prepared (%s: %s)", s.solver_id, problem.key(),
                     x.__class__.__name__, x)
            continue
        if _fast.launches(alt):
            _stats["host_aware"] += 1
            log.info("miofind.torch: %s for %s (%.4f ms) over %s (%.4f ms, each call through Python)",
                     s.solver_id, problem.key(), s.time_ms, solver_id, time_ms)
            return alt
    return None


def _choose(problem: ProblemDescription, det: bool, dev: int) -> Entry:
    from .. import env, tiered
    from ..registry import get_solver

    tiered.on_deferred(_heard)
    t0 = time.perf_counter()
    res = _find(problem)
    _stats["lookups"] += 1
    _stats["find_ms"] += (time.perf_counter() - t0) * 1e3
    src = getattr(res, "source", "find")
    _stats[{"db": "db_hits", "find": "finds_run", "predicted": "predicted"}.get(src, "finds_run")] += 1
    if src == "find":
        _release_find_memory()
    # a candidate a find cut early (clearly slower, not verified) is never run here
    sols = [s for s in res if not getattr(s, "cut", False) and (not det or get_solver(s.solver_id).deterministic)]
    if not sols and det:
        # every deterministic candidate was cut (clearly slower than a nondeterministic one) or not in the
        # DB's answer: a find among the deterministic solvers that apply
        from ..registry import solvers as registered
        ids = [s.id for s in registered(problem.direction) if s.deterministic and s.applicability(problem)]
        if ids:
            res = _find_among(problem, ids)
            sols = [s for s in res if not getattr(s, "cut", False) and get_solver(s.solver_id).deterministic]
    if not sols:
        fails = "; ".join(f"{f.solver_id}: {f.reason}" for f in getattr(res, "failures", ())[:5])
        raise RuntimeError(f"miofind has no {'deterministic ' if det else ''}solution for {problem.key()}"
                           + (f" ({fails})" if fails else ""))
    errors = []
    for i, s in enumerate(sols):   # fastest first; one that cannot be prepared here (e.g. a cuDNN plan) yields
        tried = False
        if get_solver(s.solver_id).family == "cudnn" and _host_aware_on(problem):
            # a cuDNN plan's host-aware alternative first, so that a plan the choice would set aside is not built
            # (a cuDNN graph costs 5-40 ms of host time): charged its native replay's host time over kernel
            # launches where the C++ path replays it (cudnn_run), else a call through Python
            native = _native_cudnn(problem)
            alt = _alternative(s.solver_id, s.time_ms, sols[i + 1:], problem, src, dev,
                               env.torch_cudnn_host_us() if native else None)
            if alt is not None:
                return alt
            tried = not native
        try:
            e = Entry(s.prepare(), s.solver_id, src, dev, problem.key(), s.time_ms)
        except Exception as e:
            log.warning("miofind.torch: %s for %s could not be prepared (%s: %s); trying the next solution",
                        s.solver_id, problem.key(), e.__class__.__name__, e)
            errors.append(f"{s.solver_id}: {e.__class__.__name__}: {e}")
            continue
        return e if tried else _host_aware(e, sols[i + 1:], problem, src, dev)
    raise RuntimeError(f"miofind could not prepare any solution for {problem.key()}: " + "; ".join(errors[:3]))
