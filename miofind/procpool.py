"""Worker processes that never run the caller's script: miofind's compile pools.

multiprocessing's ``spawn`` (and ``forkserver``) start method runs the parent's main module again in every child, as
``__mp_main__``. A training script without an ``if __name__ == "__main__":`` guard, usual on Linux where DataLoader
workers fork, would run once more, on the GPU, in each of miofind's compile workers. ``ProcPool`` starts
``python -m miofind.procpool`` children instead, which import only what the calls they are sent need, and feeds them
pickled calls over pipes. It offers the part of ``concurrent.futures.ProcessPoolExecutor`` miofind uses (``submit``,
``map``, ``shutdown``) and ``terminate``. A pool belongs to the process that made it: a forked child that inherits
one can neither use it nor shut its workers down.
"""

from __future__ import annotations

import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from concurrent.futures import Future

_LEN = struct.Struct("<Q")
_STOP = object()


class BrokenPool(RuntimeError):
    """A worker process could not start or died, or the pool is another process's (inherited through a fork)."""


def _send(fh, data: bytes) -> None:
    fh.write(_LEN.pack(len(data)) + data)
    fh.flush()


def _recv(fh) -> bytes | None:
    head = fh.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    n = _LEN.unpack(head)[0]
    data = fh.read(n)
    return data if len(data) == n else None


class ProcPool:
    """Up to ``max_workers`` worker processes, started as work arrives; each runs ``initializer(*initargs)`` first.
    Functions and arguments must pickle (module-level functions, by reference)."""

    def __init__(self, max_workers: int, initializer=None, initargs=()) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers {max_workers}: need at least 1")
        self._max = max_workers
        self._init = (initializer, tuple(initargs), {}) if initializer is not None else None
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = threading.Semaphore(0)
        self._threads: list[threading.Thread] = []
        self._procs: dict[int, subprocess.Popen] = {}
        self._shutdown = False
        self._broken: str | None = None
        self._pid = os.getpid()

    # -- the caller's side ------------------------------------------------------------------------

    def submit(self, fn, *args, **kwargs) -> Future:
        with self._lock:
            if self._pid != os.getpid():
                raise BrokenPool("this compile pool belongs to the process this one was forked from")
            if self._broken:
                raise BrokenPool(self._broken)
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            f: Future = Future()
            self._jobs.put((f, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max:
                t = threading.Thread(target=self._serve, name="miofind-procpool", daemon=True)
                self._threads.append(t)
                t.start()
            return f

    def map(self, fn, *iterables) -> list:
        """``fn`` over the items, in the workers; their results in order (the first error raised)."""
        futures = [self.submit(fn, *a) for a in zip(*iterables)]
        return [f.result() for f in futures]

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """No new work; ``cancel_futures`` drops the queued calls; the workers end after the calls under way
        (``wait``: returns once they have). In a forked child, does nothing: the workers are the parent's."""
        with self._lock:
            if self._pid != os.getpid():
                return
            self._shutdown = True
            if cancel_futures:
                self._drop_queued()
            for _ in self._threads:
                self._jobs.put(_STOP)
            threads = list(self._threads)
        if wait:
            for t in threads:
                if t is not threading.current_thread():
                    t.join()

    def terminate(self) -> None:
        """Shut down, dropping the queued calls, and kill the workers: the calls under way fail with BrokenPool."""
        if self._pid != os.getpid():
            return
        self.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            procs = list(self._procs.values())
        for p in procs:
            if p.poll() is None:
                p.kill()

    def pids(self) -> list[int]:
        """The worker processes' ids."""
        with self._lock:
            return list(self._procs)

    # -- a worker thread: one process ---------------------------------------------------------------

    def _drop_queued(self) -> list:
        kept = []
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                kept.append(item)
            else:
                item[0].cancel()
        for item in kept:
            self._jobs.put(item)

    def _break(self, why: str) -> None:
        with self._lock:
            if self._broken is None:
                self._broken = why
            while True:
                try:
                    item = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP and item[0].set_running_or_notify_cancel():
                    item[0].set_exception(BrokenPool(why))
            for _ in self._threads:
                self._jobs.put(_STOP)

    def _start(self) -> subprocess.Popen:
        if not sys.executable:
            raise BrokenPool("no Python executable to start a worker with (sys.executable is empty)")
        env = dict(os.environ)
        # the parent's import path, as multiprocessing gives its children (a checkout on sys.path, not installed)
        path = [p for p in sys.path if p]
        env["PYTHONPATH"] = os.pathsep.join(path + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        try:
            return subprocess.Popen([sys.executable, "-m", "miofind.procpool"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, env=env, close_fds=True)
        except OSError as e:
            raise BrokenPool(f"cannot start a worker process: {e}") from None

    def _call(self, proc: subprocess.Popen, data: bytes):
        try:
            _send(proc.stdin, data)
            reply = _recv(proc.stdout)
        except (OSError, ValueError):
            reply = None
        if reply is None:
            code = proc.wait()
            raise BrokenPool(f"compile worker {proc.pid} exited with code {code}")
        return pickle.loads(reply)

    def _serve(self) -> None:
        try:
            proc = self._start()
        except BrokenPool as e:
            self._break(str(e))
            return
        with self._lock:
            self._procs[proc.pid] = proc
        try:
            if self._init is not None:
                try:
                    data = pickle.dumps(self._init)
                except Exception as e:
                    raise BrokenPool(f"the compile pool's initializer cannot be sent to a worker: {e}") from None
                ok, value = self._call(proc, data)
                if not ok:
                    raise BrokenPool(f"compile worker {proc.pid}: its initializer failed: {value!r}")
            while True:
                item = self._jobs.get()
                if item is _STOP:
                    break
                f, fn, args, kwargs = item
                if not f.set_running_or_notify_cancel():
                    continue
                try:
                    data = pickle.dumps((fn, args, kwargs))
                except Exception as e:   # this call's fault, not the worker's
                    f.set_exception(e)
                else:
                    try:
                        ok, value = self._call(proc, data)
                    except BrokenPool as e:
                        f.set_exception(e)
                        raise
                    if ok:
                        f.set_result(value)
                    else:
                        f.set_exception(value)
                self._idle.release()
        except BrokenPool as e:
            self._break(str(e))
        finally:
            try:
                proc.stdin.close()   # the worker ends at the end of its input
            except OSError:
                pass
            proc.wait()
            proc.stdout.close()
            with self._lock:
                self._procs.pop(proc.pid, None)


def _worker() -> None:
    """A worker process: calls read from stdin, their (ok, result or exception) written to the replies' pipe."""
    import signal

    # Ctrl-C reaches the whole process group: the parent handles it and ends its pool
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)   # what a call prints goes to stderr, never into the replies
    calls = sys.stdin.buffer
    while True:
        data = _recv(calls)
        if data is None:
            return
        try:
            fn, args, kwargs = pickle.loads(data)
            reply = (True, fn(*args, **kwargs))
        except BaseException as e:   # noqa: BLE001 - every failure goes back to the caller
            reply = (False, e)
        try:
            out = pickle.dumps(reply)
        except Exception:
            out = pickle.dumps((False, RuntimeError(f"{type(reply[1]).__name__}: {reply[1]}")))
        _send(replies, out)


if __name__ == "__main__":
    _worker()
