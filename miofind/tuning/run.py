"""Running tunes: in this process, one process per local GPU, or as a fleet worker on a job queue.

``tune_local`` tunes a list of problems on one or several local GPUs (``devices``: one spawned
process per GPU, each pinned by CUDA_VISIBLE_DEVICES, taking problems from a shared queue).
``worker_loop`` is ``miofind worker``: it claims jobs from the FindDB's job table, renews the lease
from a background thread while tuning, and marks each job done or failed.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
from typing import Callable

from ..problem import ProblemDescription
from .tuner import ProblemOutcome, Tuner, TuneOptions

_log = logging.getLogger(__name__)


def _open(db_url, dev):
    from ..db.handles import open_dbs
    return open_dbs(db_url, dev)


def _outcome_dict(o: ProblemOutcome) -> dict:
    return dataclasses.asdict(o)


def tune_local(problems: list[ProblemDescription], opts: TuneOptions, db_url: str | None, *,
               devices: list[int] | None = None, report: Callable[[dict], None] = lambda o: None,
               event: Callable[[str], None] = lambda m: None) -> list[dict]:
    """Tune every problem (skipping those already done); ``report`` gets each outcome as a dict."""
    _log.info("tuning %d problem(s) on %s with %s", len(problems),
              f"GPUs {','.join(map(str, devices))}" if devices else "the current GPU", opts.as_json())
    if devices and len(devices) > 1:
        return _tune_spawned(problems, opts, db_url, devices, report)
    if devices:
        import cupy
        cupy.cuda.Device(devices[0]).use()
    from ..device import current_device
    from .precompile import Prefetcher

    dev = current_device()
    dbs = _open(db_url, dev)
    tuner = Tuner(dbs, dev, opts, on_event=event)
    pre = Prefetcher(problems, dev.arch, lambda p, s: _find_configs(dbs, dev, p, s)) if opts.precompile else None
    out = []
    try:
        for i, p in enumerate(problems):
            if pre is not None:
                pre.advance(i)
            o = _outcome_dict(tuner.tune_problem(p))
            report(o)
            out.append(o)
    finally:
        if pre is not None:
            pre.close()
    return out


def _find_configs(dbs, dev, problem, solver):
    from ..find import find_configs as fc
    try:
        return fc(dbs, dev, problem, solver)
    except Exception:
        return [None]


def _device_main(device: int, opts_json: dict, db_url, tasks, results, log_level: int | None = None) -> None:
    if log_level is not None:
        from ..log import configure
        configure(level=log_level)
    os.environ["CUDA_VISIBLE_DEVICES"] = str(device)
    try:
        from ..device import current_device
        dev = current_device()
        tuner = Tuner(_open(db_url, dev), dev, TuneOptions(**opts_json))
    except Exception as e:
        results.put({"device": device, "fatal": f"{e.__class__.__name__}: {e}"})
        return
    while True:
        key = tasks.get()
        if key is None:
            return
        o = _outcome_dict(tuner.tune_problem(ProblemDescription.from_key(key)))
        o["device"] = device
        results.put(o)


def _tune_spawned(problems, opts, db_url, devices, report) -> list[dict]:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    for p in problems:
        tasks.put(p.key())
    for _ in devices:
        tasks.put(None)
    # Not daemonic: a device process starts its own compile pool, and a daemonic process may not
    # have children. They are terminated below if this process stops early (error or Ctrl-C).
    level = logging.getLogger("miofind").level or None  # the parent's level (NOTSET: not configured)
    procs = [ctx.Process(target=_device_main, args=(d, opts.as_json(), db_url, tasks, results, level))
             for d in devices]
    for pr in procs:
        pr.start()
    out, alive = [], len(procs)
    try:
        while len(out) < len(problems) and alive:
            try:
                o = results.get(timeout=1.0)
            except Exception:
                alive = sum(pr.is_alive() for pr in procs)
                continue
            if "fatal" in o:
                raise RuntimeError(f"GPU {o['device']}: {o['fatal']}")
            report(o)
            out.append(o)
        for pr in procs:
            pr.join(timeout=60)
    finally:
        for pr in procs:
            if pr.is_alive():
                pr.terminate()
                pr.join(timeout=10)
    return out


def worker_name(device: int | None = None) -> str:
    return f"{socket.gethostname()}:{os.getpid()}" + (f":gpu{device}" if device is not None else "")


def worker_loop(db_url: str, *, name: str | None = None, lease_s: float = 600.0, idle_exit: float | None = None,
                max_jobs: int | None = None, poll_s: float = 2.0, tuner_factory=None,
                event: Callable[[str], None] = print) -> int:
    """Claim and tune jobs until ``max_jobs`` are done or no job came for ``idle_exit`` seconds
    (forever if None); returns how many jobs this worker completed while still holding them.

    The lease is renewed every ``lease_s / 3`` seconds while a job runs. A job whose lease was lost
    (this worker stalled past it and another worker claimed the job) is reported through ``event``
    and not counted, whether its tune succeeded or failed."""
    from ..db import FindDB
    from ..db.jobs import JobQueue

    user = FindDB(db_url)
    queue = JobQueue(user)
    if tuner_factory is None:
        from ..db.system import Overlay, open_system_db
        from ..device import current_device

        dev = current_device()
        dbs = Overlay(user, open_system_db(dev.arch, dev.sm_count))
        tuner_factory = lambda opts: Tuner(dbs, dev, opts)  # noqa: E731
        device_name = dev.db_name
    else:
        device_name = "test"
    name = name or worker_name()
    done, idle_since = 0, time.monotonic()
    known = {f.name for f in dataclasses.fields(TuneOptions)}
    while max_jobs is None or done < max_jobs:
        job = queue.claim(name, device_name, lease_s)
        if job is None:
            if idle_exit is not None and time.monotonic() - idle_since >= idle_exit:
                break
            time.sleep(poll_s)
            continue
        stop, lost = threading.Event(), threading.Event()

        def renew(job=job):
            while not stop.wait(lease_s / 3):
                try:
                    held = queue.renew(job, lease_s)
                except Exception as e:  # a passing DB error: try again at the next renewal
                    _log.warning("%s: renewing the lease of job %s failed: %s", name, job.id, e)
                    continue
                if not held:
                    lost.set()
                    _log.warning("%s: lost the lease of job %s while working on it", name, job.id)
                    return

        t = threading.Thread(target=renew, daemon=True)
        t.start()
        try:
            # a job queued before solvers had budgets of their own runs the budget it was queued with
            opts = TuneOptions(**{"solver_budgets": False, **{k: v for k, v in job.options.items() if k in known}})
            problem = ProblemDescription.from_key(job.problem_key)
            event(f"{name}: job {job.id} {job.problem_key}")
            _log.debug("%s: claimed job %s %s", name, job.id, job.problem_key)
            o = tuner_factory(opts).tune_problem(problem)
            if o.status == "failed":
                _log.warning("%s: job %s failed: %s", name, job.id, o.error)
                held = queue.fail(job, o.error)
            else:
                held = queue.complete(job)
        except Exception as e:
            _log.warning("%s: job %s failed: %s: %s", name, job.id, e.__class__.__name__, e)
            o = None
            held = queue.fail(job, f"{e.__class__.__name__}: {e}")
        finally:
            stop.set()
            t.join(timeout=5)
        # Only a job still held when it is finished counts: a worker stalled past its lease (SIGSTOP,
        # a long GC pause) whose job was taken over must leave it to the new holder.
        if not held:
            event(f"{name}: lost the lease of job {job.id} ({job.problem_key}): it expired while this worker "
                  f"was {'busy' if lost.is_set() else 'stalled'} and the job was taken over; not counted")
        elif o is not None and o.status != "failed":
            done += 1
        idle_since = time.monotonic()
    user.close()
    return done
