"""Ahead-of-time compilation into the binary cache, in parallel processes.

NVRTC holds Python's GIL for part of a compile, so threads do not scale over many kernels. Before
a tune measures anything, every kernel its candidates need is compiled here by a pool of
processes (``miofind.procpool``'s: fresh interpreters, so they never touch the parent's CUDA context nor run its
script; NVRTC needs no GPU; they ignore Ctrl-C, which the tuning process handles) straight into the binary cache,
where the measuring process then only loads cubins. This is what MIOpen's fleet tuner does on GPU-less hosts.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from ..compile import binary_key, cached_cubin, compile_into_cache, lower_priority, private_cache_dir
from ..procpool import ProcPool
from ..solver import KernelInfo

_log = logging.getLogger(__name__)
_pool: ProcPool | None = None
_pool_size = 0
# held while a Prefetcher takes the pool and while it is closed, so that no compile goes to a new pool after its
# close (the process's exit would wait for that compile)
_submit_lock = threading.Lock()


def _get_pool(jobs: int) -> ProcPool:
    global _pool, _pool_size
    if _pool is None or _pool_size != jobs:
        from multiprocessing import util

        if _pool is not None:
            _pool.shutdown(wait=False, cancel_futures=True)
        if _pool_size == 0:  # this process's first pool
            # at exit the workers end after their compiles under way; a spawned process (one per GPU, a fleet
            # worker) runs its finalizers (priority >= 0, highest first) before multiprocessing joins it
            util.Finalize(None, shutdown_pool, kwargs={"wait": True}, exitpriority=100)
        from ..env import compile_nice

        _pool = ProcPool(jobs, initializer=lower_priority, initargs=(compile_nice(),))
        _pool_size = jobs
    return _pool


def shutdown_pool(wait: bool = False, terminate: bool = False) -> None:
    """Stop the compile pool, dropping queued work (an interrupted tune must not wait for it);
    ``wait`` waits for the compiles under way (done at every process's exit); ``terminate`` ends
    them instead (their cubins are written atomically with their digests after, so a killed compile
    leaves nothing a later read trusts)."""
    global _pool
    if _pool is not None:
        pool, _pool = _pool, None
        if terminate:
            pool.terminate()
        pool.shutdown(wait=wait, cancel_futures=True)


def default_jobs() -> int:
    return max(1, min(32, (os.cpu_count() or 2)))


def precompile(kernels: list[KernelInfo], arch: str, jobs: int | None = None,
               stop: threading.Event | None = None) -> tuple[int, dict[str, str]]:
    """Compile the kernels missing from the binary cache; returns (how many were compiled, errors by
    kernel description). Failures are left for the measuring process to report per candidate.

    With ``stop`` (a Prefetcher's), every compile goes to the process pool, never this thread (CuPy's
    NVRTC binding holds the GIL, which the measuring thread needs), and nothing is submitted once
    ``stop`` is set; compiles cancelled or ended by ``shutdown_pool`` raise here."""
    cache = private_cache_dir()
    todo, seen = [], set()
    for k in kernels:
        key = binary_key(k, arch)
        path = cache / f"{key}.cubin"
        if key in seen or cached_cubin(path) is not None:
            continue
        seen.add(key)
        todo.append((k, arch, str(path)))
    if not todo:
        return 0, {}
    jobs = jobs or default_jobs()
    t0 = time.perf_counter()
    if stop is None and (jobs == 1 or len(todo) == 1):
        results = [compile_into_cache(t) for t in todo]
    else:
        with _submit_lock:
            if stop is not None and stop.is_set():
                return 0, {}
            pool = _get_pool(jobs)
        # sent from this thread; once the pool is closed (shutdown_pool) it takes no call, and its calls not yet sent
        # are dropped (CancelledError) or ended (BrokenPool)
        results = pool.map(compile_into_cache, todo)
    errors = {f"{k.source}:{k.name} {' '.join(k.compile_options())}": r for (k, _, _), r in zip(todo, results) if r}
    _log.debug("precompiled %d kernel(s) for %s in %.1f s with %d process(es), %d failed (%d already cached)",
               len(todo), arch, time.perf_counter() - t0, min(jobs, len(todo)), len(errors), len(kernels) - len(todo))
    return len(todo) - len(errors), errors


def solution_kernels(problem, solver, configs) -> list[KernelInfo]:
    """The kernels of ``solver``'s solutions for these configs (library-only solutions have none;
    a config whose solution cannot be built is skipped, to fail later where it is measured)."""
    out = []
    for cfg in configs:
        try:
            out += solver.get_solution(problem, cfg).kernels
        except Exception:
            continue
    return out


def problem_kernels(problem, solvers, configs_of) -> list[KernelInfo]:
    """Every kernel a find of ``problem`` compiles: each solver's configs (``configs_of(solver)``)
    and the float64 reference. cuDNN-backed solvers are skipped (no kernels of ours)."""
    from ..registry import reference_solver

    conv = problem.as_conv()
    out = list(reference_solver(conv.direction).get_solution(conv, None, reference=True).kernels)
    for s in solvers:
        if s.family != "cudnn":
            out += solution_kernels(problem, s, configs_of(s))
    return out


class Prefetcher:
    """Compiles the kernels of the coming problems in a background thread (through the process
    pool), so the measuring loop finds them in the binary cache."""

    def __init__(self, problems, arch: str, configs_of, jobs: int | None = None, ahead: int = 4) -> None:
        import threading

        self.problems, self.arch, self.configs_of, self.jobs = list(problems), arch, configs_of, jobs
        self.ahead = ahead
        self.next = 0          # the problem the measuring loop is on
        self.errors: dict[str, str] = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        from ..find import candidates

        chunk: list[KernelInfo] = []
        for i, p in enumerate(self.problems):
            while i > self.next + self.ahead * 8 and not self._stop.is_set():
                self._stop.wait(0.2)
            if self._stop.is_set():
                return
            try:
                chunk += problem_kernels(p, candidates(p, None)[0], lambda s, p=p: self.configs_of(p, s))
            except Exception:
                continue
            if i % self.ahead == self.ahead - 1 or i == len(self.problems) - 1:
                try:
                    self.errors.update(precompile(chunk, self.arch, self.jobs, stop=self._stop)[1])
                except BaseException:  # the pool was shut down (tune finished or interrupted)
                    return
                chunk = []

    def advance(self, i: int) -> None:
        self.next = i

    def close(self) -> None:
        """Stop prefetching: queued compiles are dropped and those under way ended (they are ahead of
        the measuring loop, which compiles what it still needs itself), so an interrupted tune exits
        without waiting for a long NVRTC compile."""
        with _submit_lock:
            self._stop.set()
            shutdown_pool(terminate=True)
