"""miofind.procpool: compile worker processes that never run the caller's script (no GPU needed)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from miofind.procpool import BrokenPool, ProcPool

ROOT = Path(__file__).resolve().parents[2]


def _fails(msg):
    raise KeyError(msg)


def _set_env(name, value):
    os.environ[name] = value


def _pid(_):
    return os.getpid()


def _prints_and_returns(v):
    print("a worker's print must not reach the replies", flush=True)
    return v * 2


def test_calls_run_in_other_processes_in_order():
    pool = ProcPool(2)
    try:
        pids = set(pool.map(_pid, range(6)))
        assert os.getpid() not in pids and 1 <= len(pids) <= 2
        assert pool.map(_prints_and_returns, [1, 2, 3]) == [2, 4, 6]
        with pytest.raises(KeyError, match="boom"):
            pool.submit(_fails, "boom").result(60)
        assert pool.submit(pow, 2, 10).result(60) == 1024    # the worker lives on after an error
    finally:
        pool.shutdown(wait=True)
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(pow, 2, 3)


def test_an_unpicklable_call_fails_alone():
    pool = ProcPool(1)
    try:
        with pytest.raises(Exception):
            pool.submit(lambda: 1).result(60)
        assert pool.submit(abs, -3).result(60) == 3
    finally:
        pool.shutdown()


def test_the_initializer_runs_in_each_worker_first():
    pool = ProcPool(1, initializer=_set_env, initargs=("MIOFIND_PROCPOOL_TEST", "set"))
    try:
        assert pool.submit(os.getenv, "MIOFIND_PROCPOOL_TEST").result(60) == "set"
    finally:
        pool.shutdown()
    assert "MIOFIND_PROCPOOL_TEST" not in os.environ


def test_an_initializer_that_cannot_be_sent_breaks_the_pool():
    pool = ProcPool(1, initializer=lambda: None)
    try:
        with pytest.raises(BrokenPool, match="initializer"):
            pool.submit(abs, -1).result(60)
    finally:
        pool.shutdown()


def test_a_dead_worker_breaks_the_pool_and_its_calls_fail():
    pool = ProcPool(1)
    try:
        f = pool.submit(time.sleep, 60)
        queued = pool.submit(abs, -1)
        for _ in range(300):
            if pool.pids() and f.running():
                break
            time.sleep(0.05)
        os.kill(pool.pids()[0], 9)
        with pytest.raises(BrokenPool, match="exited with code"):
            f.result(60)
        with pytest.raises(BrokenPool):
            queued.result(60)
        with pytest.raises(BrokenPool):
            pool.submit(abs, -2)
    finally:
        pool.shutdown()


def test_terminate_ends_a_call_under_way_and_drops_the_queue():
    pool = ProcPool(1)
    f = pool.submit(time.sleep, 120)
    queued = pool.submit(abs, -1)
    for _ in range(300):
        if f.running() and pool.pids():
            break
        time.sleep(0.05)
    t0 = time.monotonic()
    pool.terminate()
    with pytest.raises(BrokenPool):
        f.result(60)
    assert queued.cancelled()
    pool.shutdown(wait=True)
    assert time.monotonic() - t0 < 30 and pool.pids() == []


def test_shutdown_can_cancel_the_queued_calls():
    pool = ProcPool(1)
    f = pool.submit(time.sleep, 1)
    queued = [pool.submit(abs, -i) for i in range(5)]
    for _ in range(300):
        if f.running():
            break
        time.sleep(0.05)
    pool.shutdown(wait=True, cancel_futures=True)
    assert f.result(0) is None
    assert all(q.cancelled() or q.done() for q in queued) and any(q.cancelled() for q in queued)


_UNGUARDED = r'''
import os, sys
print("BODY", os.getpid(), flush=True)      # a training script's top level, without a __main__ guard
from miofind.procpool import ProcPool
pool = ProcPool(2)
print("POOL", pool.map(abs, [-1, -2, -3, -4]), flush=True)
pool.shutdown()
'''


def test_workers_do_not_run_the_callers_script(tmp_path):
    """A spawned multiprocessing pool would run this unguarded script again in every worker."""
    script = tmp_path / "train.py"
    script.write_text(_UNGUARDED)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("BODY") == 1, r.stdout
    assert "POOL [1, 2, 3, 4]" in r.stdout


_TIERED_UNGUARDED = r'''
import os, sys
print("BODY", os.getpid(), flush=True)      # a training script's top level, without a __main__ guard
import miofind.device as device
device.current_device = lambda *a: type("D", (), {"arch": "sm_90", "sm_count": 132})()
from miofind import tiered
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
p = ProblemDescription.make("F", n=8, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1, layout="NHWC",
                            dtype="FP16")
tiered._compile_apart(get_solver("ConvImplicitGemmHopperFwd").get_solution(p, None).kernels)
pool = tiered._procs    # compiled there, not here: a broken pool's fallback compiles in this process
assert pool is not None and pool._broken is None and pool._threads, vars(pool)
print("COMPILED", len(list(__import__("pathlib").Path(os.environ["MIOFIND_KERNEL_CACHE"]).glob("*.cubin"))),
      flush=True)
'''


def test_a_find_s_background_compiles_do_not_run_the_callers_script(tmp_path):
    """What a miofind.torch user's unguarded training script does after a find: the specialised kernels compile in
    tiered's pool. With a spawned multiprocessing pool each worker ran the script again (on the GPU there: session
    dec03d's call 1)."""
    script = tmp_path / "train.py"
    script.write_text(_TIERED_UNGUARDED)
    r = subprocess.run([sys.executable, "-W", "ignore", str(script)], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=str(ROOT), MIOFIND_KERNEL_CACHE=str(tmp_path / "kc")))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("BODY") == 1, r.stdout
    n = int(r.stdout.split("COMPILED")[1].split()[0])
    assert n >= 1, r.stdout


_FORKED = r'''
import os, time
from miofind.procpool import BrokenPool, ProcPool
pool = ProcPool(1)
assert pool.submit(abs, -1).result(60) == 1
pid = os.fork()
if pid == 0:    # a forked child (a DataLoader worker): the pool and its workers are the parent's
    try:
        pool.submit(abs, -2)
        print("child submitted", flush=True)
    except BrokenPool:
        print("child refused", flush=True)
    t0 = time.perf_counter()
    pool.shutdown(wait=True)
    print(f"child shutdown {time.perf_counter() - t0:.2f}", flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("parent", pool.submit(abs, -3).result(60), flush=True)
pool.shutdown()
'''


def test_a_forked_child_leaves_the_parents_pool_alone(tmp_path):
    script = tmp_path / "f.py"
    script.write_text(_FORKED)
    r = subprocess.run([sys.executable, "-W", "ignore", str(script)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    assert "child refused" in r.stdout and "parent 3" in r.stdout, r.stdout
    assert float(r.stdout.split("child shutdown")[1].split()[0]) < 5
