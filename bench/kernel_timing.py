"""Four ways to time one solution's call ``fn(stream)`` (a raw stream handle), shared by the benchmarks that
set our kernels beside cuDNN's (bench_fused.py, bench_kernel_time.py). Each returns milliseconds per call:

  isolated  one call captured in a CUDA graph, replayed ``iters`` times, each between two events and a
            synchronisation: the kernels alone (no host launch cost but the graph launch's constant one, no
            overlap with a neighbouring call); the median.
  gpu       ``iters`` calls captured in one graph, replayed: back-to-back kernel time (a neighbour's tail may
            overlap the next call's start); the median of 3 rounds of the mean.
  eager     ``iters`` calls queued from Python back to back: host launch costs count wherever the host is
            slower than the GPU (what an eager framework sees); the median of 3 rounds of the mean.
  find      (not here: ``Harness.time``) one call between two events and a synchronisation per run: how a find
            ranks solvers. Under ``MIOFIND_FIND_TIMING=wall`` (the only timing before 2026-11-26) the call's host
            time before its kernel starts counts in full; under ``device`` (the default since) a spin kernel holds
            the GPU while the host enqueues the call, so it is the call's GPU time.
"""

from __future__ import annotations


def _captured(fn, calls: int):
    """(stream, graph): ``calls`` calls of fn(stream) captured in one CUDA graph on a new non-blocking stream,
    after one call outside the capture (lazy loads, plans), uploaded."""
    import cupy

    st = cupy.cuda.Stream(non_blocking=True)
    with st:
        fn(st.ptr)
        st.synchronize()
        st.begin_capture()
        for _ in range(calls):
            fn(st.ptr)
        g = st.end_capture()
        g.upload(st)
    return st, g


def _replays(st, g, count: int) -> list[float]:
    """Milliseconds of ``count`` replays of graph ``g`` on ``st``, each between two events and a synchronisation."""
    import cupy

    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    out = []
    for _ in range(count):
        st.synchronize()
        start.record(st)
        g.launch(st)
        stop.record(st)
        stop.synchronize()
        out.append(cupy.cuda.get_elapsed_time(start, stop))
    return out


def isolated_ms(fn, iters: int = 50) -> float:
    out = _replays(*_captured(fn, 1), iters)
    return sorted(out)[len(out) // 2]


def graph_ms(fn, iters: int = 50, rounds: int = 3) -> float:
    st, g = _captured(fn, iters)
    g.launch(st)
    out = [t / iters for t in _replays(st, g, rounds)]
    return sorted(out)[rounds // 2]


def queued_ms(fn, iters: int = 50, rounds: int = 3) -> float:
    import cupy

    st = cupy.cuda.get_current_stream()
    for _ in range(5):
        fn(st.ptr)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    out = []
    for _ in range(rounds):
        st.synchronize()
        start.record()
        for _ in range(iters):
            fn(st.ptr)
        stop.record()
        stop.synchronize()
        out.append(cupy.cuda.get_elapsed_time(start, stop) / iters)
    return sorted(out)[rounds // 2]


def timed_configs(h, p, solver, configs, family: str, timings, stop_at: float | None = None) -> list[tuple[dict, dict]]:
    """(solution config, ``timings(call, invoker, workspace)``) for each of ``configs`` of ``solver`` on Harness ``h``
    of problem ``p`` (None: the solver's own ``find_configs``), each built and verified against the float64
    reference first, until ``time.time()`` passes ``stop_at``. A failed build, launch or verification is printed
    and scores as infinite time (no entry)."""
    import time

    from miofind.invokers import build_invoker

    if configs is None:
        try:
            configs = solver.find_configs(p)
        except Exception as e:
            print(f"    {solver.id}: {type(e).__name__}: {str(e)[:200]}", flush=True)
            configs = []
    out = []
    for c in configs:
        if stop_at is not None and time.time() > stop_at:
            break
        try:
            sol = solver.get_solution(p, c)
            inv = build_invoker(p, sol)
            ws = h.workspace(sol.workspace_bytes)
            h.check(inv, ws, family)
            pw = 0 if ws is None else ws.data.ptr
            pa, pb, po = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr
            # the closure binds this config's invoker and workspace: a caller may time it after the loop
            out.append((sol.config, timings(lambda s_, inv=inv, pw=pw: inv(pa, pb, po, pw, s_), inv, ws)))
        except Exception as e:
            print(f"    {solver.id} {c}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    return out
