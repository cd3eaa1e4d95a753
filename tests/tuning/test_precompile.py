"""Ahead-of-time compilation into the binary cache in a process pool (NVRTC, no GPU needed)."""

from __future__ import annotations

from dataclasses import replace

from miofind.compile import binary_key
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.tuning.precompile import precompile, problem_kernels

P = ProblemDescription.make("F", n=2, c=8, k=16, in_size=(12, 12), filter_size=3, pads=1)


def test_precompile_fills_the_binary_cache_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path))
    s = get_solver("ConvDirectTiledFwd")
    kernels = problem_kernels(P, [s], lambda s: [None, next(iter(s.config_space(P)))])
    assert len(kernels) == 3  # the reference and two configs
    n, errors = precompile(kernels, "sm_90", jobs=2)
    assert (n, errors) == (3, {})
    assert {p.stem for p in tmp_path.glob("*.cubin")} == {binary_key(k, "sm_90") for k in kernels}
    assert all(p.stat().st_size > 1000 for p in tmp_path.glob("*.cubin"))
    assert precompile(kernels, "sm_90", jobs=2) == (0, {})


def test_a_broken_kernel_is_reported_not_raised(tmp_path, monkeypatch):
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path))
    k = get_solver("ConvDirectTiledFwd").get_solution(P).kernels[0]
    bad = replace(k, macros=k.macros + (("TILE_W", "this is not C++"),))
    n, errors = precompile([bad], "sm_90", jobs=1)
    assert n == 0 and len(errors) == 1 and "direct_tiled_fwd" in next(iter(errors))
    assert not list(tmp_path.glob("*.cubin"))


def _child_uses_pool() -> None:
    import os

    from miofind.tuning import precompile
    assert precompile._get_pool(1).submit(os.getpid).result(timeout=60) != os.getpid()


def test_spawned_process_with_a_compile_pool_exits():
    # What one-process-per-GPU tuning and `worker --devices` do: a spawned, non-daemonic child
    # runs the compile pool and returns without ending it. multiprocessing joins the child's
    # children when it exits, so the pool must end itself there or the child never exits.
    import multiprocessing as mp

    pr = mp.get_context("spawn").Process(target=_child_uses_pool)
    pr.start()
    pr.join(timeout=120)
    alive = pr.is_alive()
    if alive:
        pr.kill()
    assert not alive and pr.exitcode == 0


def test_ctrl_c_during_prefetch_exits_promptly_without_a_traceback(tmp_path):
    # Ctrl-C reaches the whole process group, compile workers included: they ignore it, the tuning
    # process shuts the pool down, and no worker's KeyboardInterrupt surfaces as a traceback.
    import os
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ, MIOFIND_KERNEL_CACHE=str(tmp_path))
    child = os.path.join(os.path.dirname(__file__), "_prefetch_child.py")
    pr = subprocess.Popen([sys.executable, child], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, start_new_session=True)
    deadline = time.time() + 120
    while not list(tmp_path.glob("*.cubin")) and time.time() < deadline and pr.poll() is None:
        time.sleep(0.2)
    assert pr.poll() is None and list(tmp_path.glob("*.cubin")), "the prefetcher compiled nothing"
    os.killpg(pr.pid, signal.SIGINT)
    t0 = time.time()
    try:
        out, err = pr.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(pr.pid, signal.SIGKILL)
        raise AssertionError("the interrupted prefetcher did not exit within 60 s")
    assert pr.returncode == 130 and "closed" in out, (pr.returncode, out, err)
    assert "Traceback" not in err, err
    assert time.time() - t0 < 30


def test_a_terminated_pool_does_not_wait_for_a_compile_under_way():
    """``shutdown_pool(terminate=True)`` (what an interrupted tune's Prefetcher.close does) ends the
    workers' work under way, so the process exits without waiting for a long compile (here a 120 s
    sleep stands for one); without ``terminate`` the exit would wait for it."""
    import subprocess
    import sys
    import time

    code = ("import time; from miofind.tuning import precompile as pc; pool = pc._get_pool(1); "
            "f = pool.submit(time.sleep, 120); time.sleep(0.5); "
            "[time.sleep(0.1) for _ in range(300) if not f.running()]; assert f.running(); "
            "pc.shutdown_pool(terminate=True); print('closed', flush=True)")
    t0 = time.time()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90)
    assert out.returncode == 0 and "closed" in out.stdout, (out.returncode, out.stdout, out.stderr)
    assert time.time() - t0 < 60


def _worker_niceness_in_child(nice: str, out) -> None:
    # A fresh process, so that the module's pool is made under this MIOFIND_COMPILE_NICE
    import os

    os.environ["MIOFIND_COMPILE_NICE"] = nice
    from miofind.tuning import precompile
    try:
        out.put((os.nice(0), precompile._get_pool(1).submit(os.nice, 0).result(timeout=60)))
    finally:
        precompile.shutdown_pool(wait=True)


def _pool_niceness(nice: str) -> tuple[int, int]:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    pr = ctx.Process(target=_worker_niceness_in_child, args=(nice, q))
    pr.start()
    got = q.get(timeout=120)
    pr.join(timeout=60)
    return got


def test_compile_workers_run_below_the_measuring_process():
    # A find's timings include its host time: NVRTC workers must yield the CPU to the process that measures
    parent, worker = _pool_niceness("10")
    assert worker == min(19, parent + 10)
    parent, worker = _pool_niceness("0")
    assert worker == parent


def test_compile_nice_rejects_what_is_not_a_niceness(monkeypatch):
    import pytest

    from miofind.env import compile_nice
    for bad in ("-1", "20", "2.5", "high"):
        monkeypatch.setenv("MIOFIND_COMPILE_NICE", bad)
        with pytest.raises(ValueError, match=f"MIOFIND_COMPILE_NICE='{bad}'"):
            compile_nice()
    monkeypatch.delenv("MIOFIND_COMPILE_NICE")
    assert compile_nice() == 10
