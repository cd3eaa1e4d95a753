"""miofind.procpool: compile worker processes that never run the caller's script (no GPU needed)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from concurrent.futures import CancelledError

import pytest

from miofind.procpool import BrokenPool, ProcPool

ROOT = Path(__file__).resolve().parents[2]


def _run_script(tmp_path, text, exe=None, timeout=120, cwd=None, **env):
    """``text`` as a script in ``tmp_path``, run by ``exe`` (this interpreter) with this checkout's miofind."""
    script = tmp_path / "script.py"
    script.write_text(text)
    return subprocess.run([exe or sys.executable, "-W", "ignore", str(script)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT), **env))


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


def test_quick_calls_sent_ahead_all_come_back():
    """Calls are sent ahead (DEPTH per worker), so replies arrive back to back: each must be seen, none left in a
    reader's buffer where select would not see it (the map hung so)."""
    import threading

    pool = ProcPool(1)
    got, stop = {}, threading.Event()

    def spin():     # holds the GIL often, so that the worker's replies pile up before the map reads them
        while not stop.is_set():
            sum(range(1000))

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    # short maps: a map's last two replies arrive together, and nothing comes after them
    t = threading.Thread(target=lambda: got.setdefault("r", [pool.map(abs, [-i, -1]) for i in range(100)]),
                         daemon=True)
    t.start()
    t.join(60)
    stop.set()
    try:
        assert got.get("r") == [[i, 1] for i in range(100)]
    finally:
        pool.terminate()


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


def _under_way(pool):
    """Once the pool's worker has started, and a moment for the first call to reach it."""
    for _ in range(300):
        if pool.pids():
            break
        time.sleep(0.05)
    time.sleep(0.5)


def test_a_dead_worker_breaks_the_pool_and_its_calls_fail():
    pool = ProcPool(1)
    try:
        f = pool.submit(time.sleep, 60)
        _under_way(pool)
        queued = pool.submit(abs, -1)      # behind the call under way: the only worker is busy
        time.sleep(0.2)
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
    _under_way(pool)
    queued = pool.submit(abs, -1)      # behind the call under way: the only worker is busy
    time.sleep(0.2)
    t0 = time.monotonic()
    pool.terminate()
    with pytest.raises(BrokenPool):
        f.result(60)
    with pytest.raises(CancelledError):
        queued.result(60)
    pool.shutdown(wait=True)
    assert time.monotonic() - t0 < 30 and pool.pids() == []


def test_shutdown_can_drop_the_calls_not_yet_sent():
    pool = ProcPool(1)
    got = {}

    def run():
        try:
            got["r"] = pool.map(time.sleep, [1, 0, 0, 0])
        except CancelledError:
            got["r"] = "cancelled"

    import threading

    t = threading.Thread(target=run)
    t.start()
    _under_way(pool)
    pool.shutdown(wait=True, cancel_futures=True)
    t.join(60)
    assert got["r"] == "cancelled" and pool.pids() == []


def test_calls_run_on_every_worker_at_once():
    pool = ProcPool(2)
    try:
        pool.map(abs, [-1, -2])                              # both started
        t0 = time.monotonic()
        pool.map(time.sleep, [0.5] * 4)
        assert time.monotonic() - t0 < 1.8
    finally:
        pool.shutdown()


_AT_EXIT = r'''
import os, threading, time
from concurrent.futures import ThreadPoolExecutor
from miofind.procpool import ProcPool
res = {}

def job():      # a background job that runs on into the interpreter's exit, as miofind's may (MIOFIND_EXIT_WAIT)
    time.sleep(0.5)
    try:
        pool = ProcPool(2)
        res["out"] = pool.map(abs, [-1, -2, -3, -4])
        res["workers"] = len(pool.pids())
        pool.shutdown()
    except BaseException as e:
        res["out"] = repr(e)

ThreadPoolExecutor(1).submit(job)

def hook():
    t0 = time.time()
    while "out" not in res and time.time() - t0 < 60:
        time.sleep(0.05)
    print(res, flush=True)

threading._register_atexit(hook)
'''


def _interpreters():
    import shutil

    found = {sys.executable}
    # Python 3.12 starts no thread once the exit has begun: the interpreters of these versions found here too
    names = [shutil.which(n) for n in ("python3.12", "python3.13")]
    names += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.1[23]*/bin/python3"))
    for exe in names:
        if exe and subprocess.run([exe, "-c", "import miofind.procpool"], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                                  capture_output=True).returncode == 0:
            found.add(exe)
    return sorted(found)


@pytest.mark.parametrize("exe", _interpreters())
def test_a_pool_works_in_the_interpreters_exit(tmp_path, exe):
    """Made and used by a background job while the interpreter exits: the calls go out from that job's thread, since
    Python 3.12 refuses new threads then (a pool of dispatch threads compiled in the job, one kernel at a time)."""
    r = _run_script(tmp_path, _AT_EXIT, exe)
    assert r.returncode == 0, r.stderr
    assert "'out': [1, 2, 3, 4], 'workers': 2" in r.stdout, (exe, r.stdout)


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
    r = _run_script(tmp_path, _UNGUARDED)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("BODY") == 1, r.stdout
    assert "POOL [1, 2, 3, 4]" in r.stdout


def test_workers_import_the_callers_miofind_not_one_in_the_current_folder(tmp_path):
    """Workers get this process's import path, not the current folder first (``python -m`` would put it there)."""
    fake = tmp_path / "cwd" / "miofind"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('the wrong miofind')\n")
    r = _run_script(tmp_path, "from miofind.procpool import ProcPool\np = ProcPool(1)\nprint(p.map(abs, [-5]))\n"
                    "p.shutdown()\n", cwd=fake.parent)
    assert r.returncode == 0 and "[5]" in r.stdout, r.stderr


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
assert pool is not None and pool._broken is None and pool.pids(), vars(pool)
print("COMPILED", len(list(__import__("pathlib").Path(os.environ["MIOFIND_KERNEL_CACHE"]).glob("*.cubin"))),
      flush=True)
'''


def test_a_find_s_background_compiles_do_not_run_the_callers_script(tmp_path):
    """What a miofind.torch user's unguarded training script does after a find: the specialised kernels compile in
    tiered's pool. With a spawned multiprocessing pool each worker ran the script again (on the GPU there: session
    dec03d's call 1)."""
    r = _run_script(tmp_path, _TIERED_UNGUARDED, timeout=600, MIOFIND_KERNEL_CACHE=str(tmp_path / "kc"))
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
    r = _run_script(tmp_path, _FORKED)
    assert r.returncode == 0, r.stderr
    assert "child refused" in r.stdout and "parent 3" in r.stdout, r.stdout
    assert float(r.stdout.split("child shutdown")[1].split()[0]) < 5
