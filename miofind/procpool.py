"""Worker processes that never run the caller's script: miofind's compile pools.

multiprocessing's ``spawn`` (and ``forkserver``) start method runs the parent's main module again in every child, as
``__mp_main__``. A training script without an ``if __name__ == "__main__":`` guard, usual on Linux where DataLoader
workers fork, would run once more, on the GPU, in each of miofind's compile workers. ``ProcPool`` starts fresh
interpreters instead (``_worker``, on this process's import path), which import only what the calls they are sent
need, and sends them pickled calls over pipes.

The calls are sent, ``DEPTH`` ahead per worker, and their replies read in the calling thread (``map``; only
``submit`` starts a thread): Python 3.12 refuses new threads once the interpreter's exit has begun, where miofind's
background jobs may still compile (``MIOFIND_EXIT_WAIT``); new processes it still starts. A pool belongs to the
process that made it: a forked child that inherits one can neither use it nor end its workers.
"""

from __future__ import annotations

import os
import pickle
import selectors
import struct
import subprocess
import sys
import threading
from collections import deque
from concurrent.futures import CancelledError, Future

_LEN = struct.Struct("<Q")
# calls sent ahead to a worker: it starts the next as soon as it replies, without waiting for the caller's thread
# (which needs the GIL to send it, behind a training step's or a find's threads)
DEPTH = 2


class BrokenPool(RuntimeError):
    """A worker process could not start or died, or the pool is another process's (inherited through a fork)."""


def _send(fh, data: bytes) -> None:
    view = memoryview(_LEN.pack(len(data)) + data)
    while view:
        view = view[fh.write(view):]
    fh.flush()


def _read(fh, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = fh.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv(fh) -> bytes | None:
    """One message; None at the end of the input. The caller's side reads unbuffered pipes: a buffered reader could
    take the next reply into its buffer, where ``select`` never sees it."""
    head = _read(fh, _LEN.size)
    return None if head is None else _read(fh, _LEN.unpack(head)[0])


class ProcPool:
    """Up to ``max_workers`` worker processes, started as work arrives; each runs ``initializer(*initargs)`` first.
    Functions and arguments must pickle (module-level functions, by reference); a call's exception is raised to the
    caller. A subset of ``concurrent.futures.ProcessPoolExecutor``: ``map``, ``submit``, ``shutdown``, and
    ``terminate``."""

    def __init__(self, max_workers: int, initializer=None, initargs=()) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers {max_workers}: need at least 1")
        self._max = max_workers
        self._init = (initializer, tuple(initargs), {}) if initializer is not None else None
        self._cv = threading.Condition()
        self._idle: list[subprocess.Popen] = []
        self._procs: dict[int, subprocess.Popen] = {}
        self._starting = 0
        self._shutdown = False     # no new map or submit
        self._cancel = False       # the calls not yet sent are dropped
        self._broken: str | None = None
        self._pid = os.getpid()

    # -- the caller's side ------------------------------------------------------------------------

    def map(self, fn, *iterables) -> list:
        """``fn`` over the items in the workers, their results in order. The first call's error (in item order) is
        raised once the calls sent have replied, and no more are sent after it; CancelledError where
        ``shutdown(cancel_futures=True)`` or ``terminate`` dropped calls not yet sent."""
        items = list(zip(*iterables))
        self._accepting()
        results: list = [None] * len(items)
        errors: dict[int, BaseException] = {}
        sel = selectors.DefaultSelector()
        queued: dict[subprocess.Popen, deque] = {}   # the workers this map holds: the items sent, not replied
        nxt = 0
        try:
            while True:
                while nxt < len(items) and not errors and not self._cancel:
                    proc = next((p for p, q in queued.items() if len(q) < DEPTH), None)
                    if proc is None:
                        proc = self._acquire(block=not queued)
                        if proc is None:
                            break
                        queued[proc] = deque()
                        sel.register(proc.stdout, selectors.EVENT_READ, proc)
                    try:
                        data = pickle.dumps((fn, items[nxt], {}))
                    except Exception as e:   # this call's fault, not the worker's
                        errors[nxt] = e
                        break
                    try:
                        _send(proc.stdin, data)
                    except (OSError, ValueError):
                        self._died(proc)
                    queued[proc].append(nxt)
                    nxt += 1
                for proc in [p for p, q in queued.items() if not q]:
                    sel.unregister(proc.stdout)
                    del queued[proc]
                    self._release(proc)
                if not queued:
                    break
                for key, _ in sel.select():
                    proc = key.data
                    reply = _recv(proc.stdout)
                    if reply is None:
                        self._died(proc)
                    i = queued[proc].popleft()
                    try:
                        ok, value = pickle.loads(reply)
                    except Exception as e:   # a result this process cannot rebuild
                        ok, value = False, e
                    if ok:
                        results[i] = value
                    else:
                        errors[i] = value
        except BaseException:
            # the workers whose replies are unread cannot take another call: ended, their places free
            for proc in queued:
                self._end(proc, kill=True)
            raise
        finally:
            sel.close()
        if errors:
            raise errors[min(errors)]
        if nxt < len(items):
            self._usable()
            raise CancelledError()
        return results

    def submit(self, fn, *args) -> Future:
        """``fn(*args)`` in a worker, from a thread of its own (for a few calls; ``map`` for many)."""
        f: Future = Future()

        def run():
            if not f.set_running_or_notify_cancel():
                return
            try:
                f.set_result(self.map(_apply, [fn], [args])[0])
            except BaseException as e:   # noqa: BLE001 - the caller's future gets it
                f.set_exception(e)

        self._accepting()
        threading.Thread(target=run, name="miofind-procpool-submit", daemon=True).start()
        return f

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """No new work; ``cancel_futures``: the calls not yet sent are dropped (their maps raise CancelledError).
        Idle workers end now, busy ones after their call; ``wait`` waits for them. In a forked child, does nothing:
        the workers are the parent's."""
        with self._cv:
            if self._pid != os.getpid():
                return
            self._shutdown = True
            self._cancel = self._cancel or cancel_futures
            idle, self._idle = self._idle, []
            self._cv.notify_all()
        for proc in idle:
            self._end(proc)
        if wait:
            with self._cv:
                self._cv.wait_for(lambda: not self._procs and not self._starting)

    def terminate(self) -> None:
        """Shut down, dropping the calls not yet sent, and kill the workers: the calls under way raise BrokenPool."""
        if self._pid != os.getpid():
            return
        self.shutdown(wait=False, cancel_futures=True)
        with self._cv:
            procs = list(self._procs.values())
        for p in procs:
            if p.poll() is None:
                p.kill()

    def pids(self) -> list[int]:
        """The worker processes' ids."""
        with self._cv:
            return list(self._procs)

    # -- workers ----------------------------------------------------------------------------------

    def _accepting(self) -> None:
        """Raise where the pool takes no new ``map`` or ``submit``."""
        with self._cv:
            self._usable()
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")

    def _usable(self) -> None:
        """(Under the lock) raise where this process may not use the pool."""
        if self._pid != os.getpid():
            raise BrokenPool("this compile pool belongs to the process this one was forked from")
        if self._broken:
            raise BrokenPool(self._broken)

    def _acquire(self, block: bool) -> subprocess.Popen | None:
        """An idle worker, a new one where fewer than ``max_workers`` run, else (``block``) the next one freed."""
        with self._cv:
            while True:
                self._usable()
                if self._cancel:
                    return None
                if self._idle:
                    return self._idle.pop()
                if len(self._procs) + self._starting < self._max:
                    self._starting += 1
                    break
                if not block:
                    return None
                self._cv.wait()
        proc = None
        try:
            proc = self._start()
            if self._init is not None:
                try:
                    data = pickle.dumps(self._init)
                except Exception as e:
                    raise BrokenPool(f"the compile pool's initializer cannot be sent to a worker: {e}") from None
                reply = None
                try:
                    _send(proc.stdin, data)
                    reply = _recv(proc.stdout)
                except (OSError, ValueError):
                    pass
                if reply is None:
                    raise BrokenPool(f"compile worker {proc.pid} exited with code {proc.wait()} while starting")
                ok, value = pickle.loads(reply)
                if not ok:
                    raise BrokenPool(f"compile worker {proc.pid}: its initializer failed: {value!r}")
        except BaseException as e:
            with self._cv:
                self._starting -= 1
                if isinstance(e, BrokenPool):
                    self._broken = self._broken or str(e)
                self._cv.notify_all()
            if proc is not None:
                self._end(proc, kill=True)
            raise
        with self._cv:
            self._starting -= 1
            self._procs[proc.pid] = proc
        return proc

    def _release(self, proc: subprocess.Popen) -> None:
        with self._cv:
            if proc.pid not in self._procs:
                return
            if not self._shutdown:
                self._idle.append(proc)
                self._cv.notify()
                return
        self._end(proc)

    def _died(self, proc: subprocess.Popen):
        code = proc.wait()
        why = f"compile worker {proc.pid} exited with code {code}"
        with self._cv:
            if not self._shutdown:   # not ended by terminate: the pool is broken
                self._broken = self._broken or why
        self._end(proc)
        raise BrokenPool(why)

    def _end(self, proc: subprocess.Popen, kill: bool = False) -> None:
        """End a worker: told to (an empty message; not the end of its input, which a forked child of this process
        keeps open), or ``kill``ed; and forget it."""
        if kill and proc.poll() is None:
            proc.kill()
        try:
            if not kill:
                _send(proc.stdin, b"")
            proc.stdin.close()
        except (OSError, ValueError):
            pass
        proc.wait()
        proc.stdout.close()
        with self._cv:
            self._procs.pop(proc.pid, None)
            self._cv.notify_all()

    def _start(self) -> subprocess.Popen:
        if not sys.executable:
            raise BrokenPool("no Python executable to start a worker with (sys.executable is empty)")
        # isolated (-I: no current directory, script folder or PYTHON* variables on the path), then this process's
        # import path exactly, as multiprocessing gives its children: the same miofind, installed or a checkout
        path = [p or os.getcwd() for p in sys.path]
        code = f"import sys; sys.path[:] = {path!r}; from miofind.procpool import _worker; _worker()"
        try:
            return subprocess.Popen([sys.executable, "-I", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    close_fds=True, bufsize=0)
        except OSError as e:
            raise BrokenPool(f"cannot start a worker process: {e}") from None


def _apply(fn, args):
    return fn(*args)


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
        if not data:   # the end of the input, or an empty message: the pool ends this worker
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
