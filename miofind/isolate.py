"""Verifying risky find candidates in a child process, so that one candidate's sticky CUDA error
(an illegal address, a launch failure) cannot poison the finding process's CUDA context.

A problem is **risky** when one of its input/output tensors holds at least ``RISKY_ELEMENTS``
(2^30) elements: from there on a kernel's 32-bit index arithmetic is one factor of two (a byte
offset, the sum of two offsets, a grid-stride step) from overflowing 2^31. ``MIOFIND_ISOLATE=1``
makes every problem risky and ``MIOFIND_ISOLATE=0`` none. Ordinary problems cost nothing.

For a risky problem, the find (``miofind.find.benchmark``) first hands every candidate that has no
trusted, verified record for the problem on this device to ``check_in_child``: one child process
(``python -m miofind.isolate``, spawned fresh, on the same GPU) makes its own random inputs and the
float64 reference once, then runs and verifies the candidates one at a time, reporting each as one
JSON line on its standard output before and after it runs. A candidate whose run the child does not
survive, or which reports a sticky CUDA error, is excluded with a Failure of stage ``isolate`` whose
reason names the error; a new child checks the candidates after it. A candidate that fails in an
ordinary way (a wrong result, a compile error) is excluded with the child's stage and reason. Only
the candidates that passed run in the finding process.
"""

from __future__ import annotations

import json
import math
import os
import sys

from .results import Failure

__all__ = ["RISKY_ELEMENTS", "CHILD_TIMEOUT_S", "STICKY_ERRORS", "is_risky", "check_in_child", "IsolationResult",
           "names_sticky_error", "context_broken", "solver_ref"]

RISKY_ELEMENTS = 1 << 30
# the longest one child may run (its reference and all its candidates) before it is killed
CHILD_TIMEOUT_S = 1800.0
# CUDA errors that leave the context unusable: every later call fails the same way
STICKY_ERRORS = ("ILLEGAL_ADDRESS", "illegal memory access", "LAUNCH_FAILED", "unspecified launch failure",
                 "ILLEGAL_INSTRUCTION", "MISALIGNED_ADDRESS", "HARDWARE_STACK_ERROR", "INVALID_PC")


def names_sticky_error(reason: str) -> bool:
    """Whether a failure reason names a sticky CUDA error."""
    return any(s in reason for s in STICKY_ERRORS)


def context_broken(reason: str) -> bool:
    """Whether a failure reason names a sticky CUDA error and this process's CUDA context is indeed
    unusable (a synchronize fails)."""
    if not names_sticky_error(reason):
        return False
    import cupy
    try:
        cupy.cuda.runtime.deviceSynchronize()
        cupy.cuda.runtime.getLastError()
    except Exception:
        return True
    return False


def is_risky(problem) -> bool:
    """Whether a find verifies the problem's untrusted candidates in a child process first: one of its
    tensors (``problem.io_shapes()``) holds at least RISKY_ELEMENTS elements, unless MIOFIND_ISOLATE
    says otherwise (1: always, 0: never; ValueError naming any other value)."""
    from .env import isolate

    forced = isolate()
    if forced is not None:
        return forced
    return max(math.prod(s) for s in problem.io_shapes()) >= RISKY_ELEMENTS


class IsolationResult:
    """What the children said: ``failures[i]`` is the Failure of candidate ``i`` (None: it passed);
    ``reference`` is why the float64 reference itself failed in a child, or None."""

    def __init__(self, n: int) -> None:
        self.failures: list[Failure | None] = [None] * n
        self.reference: str | None = None


def current_device_id() -> int:
    """The current CUDA device's ordinal (0 where it cannot be read), for the child to use the same GPU."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDevice())
    except Exception:
        return 0


def _child_env() -> dict[str, str]:
    """The parent's environment, with this miofind's directory first on the child's path."""
    from .env import child_env

    env = child_env()
    env["MIOFIND_ISOLATE"] = "0"    # a child never isolates again
    return env


def _last_lines(text: str, n: int = 3) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-n:])[:1000]


def _how_it_ended(rc: int) -> str:
    if rc < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"


def run_child(request: dict, timeout: float) -> tuple[list[dict], str, int | None]:
    """Run one child on ``request``; (its JSON lines, its standard error, its exit code or None when
    it timed out and was killed). Tests replace this."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "miofind.isolate"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_child_env())
    try:
        out, err = proc.communicate(json.dumps(request), timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = None
    events = []
    for ln in out.splitlines():
        try:
            ev = json.loads(ln)
        except json.JSONDecodeError:
            continue   # something else the child printed
        if isinstance(ev, dict) and "event" in ev:
            events.append(ev)
    return events, err, rc


def solver_ref(solver) -> str | None:
    """How a child finds ``solver``: None for a registered solver (by its id), else its class as
    ``module:qualname`` (a solver added at run time, e.g. by a test, whose class a child can import)."""
    from .registry import get_solver

    try:
        if get_solver(solver.id) is solver:
            return None
    except ValueError:
        pass
    cls = type(solver)
    return None if "<locals>" in cls.__qualname__ else f"{cls.__module__}:{cls.__qualname__}"


def _load_solver(sid: str, ref: str | None):
    from .registry import get_solver

    if not ref:
        return get_solver(sid)
    import importlib

    mod, _, name = ref.partition(":")
    obj = importlib.import_module(mod)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj()


def check_in_child(problem, candidates, *, device: int = 0, seed=None,
                   timeout: float = CHILD_TIMEOUT_S) -> IsolationResult:
    """Run and verify ``candidates`` ([(solver id, config, ``solver_ref``)]) in child processes (see
    the module doc); a new child takes over after one dies or reports a sticky error. Never raises
    for a candidate."""
    res = IsolationResult(len(candidates))
    todo = list(range(len(candidates)))
    while todo and res.reference is None:
        req = {"problem": problem.key(), "device": device, "seed": seed,
               "candidates": [list(candidates[i]) for i in todo]}
        events, err, rc = run_child(req, timeout)
        done: set[int] = set()
        started = None
        ref_ok = False
        for ev in events:
            kind = ev.get("event")
            if kind == "reference":
                ref_ok = bool(ev.get("ok"))
                if not ref_ok:
                    res.reference = str(ev.get("reason", "unknown error"))
            elif kind == "start":
                started = todo[ev["index"]]
            elif kind == "done":
                i = todo[ev["index"]]
                done.add(i)
                started = None
                if not ev.get("ok"):
                    reason = str(ev.get("reason", ""))
                    sticky = bool(ev.get("sticky")) or names_sticky_error(reason)
                    cfg = candidates[i][1]
                    if sticky:
                        res.failures[i] = Failure(candidates[i][0], "isolate", f"broke the CUDA context of a child "
                                                  f"process: {reason.splitlines()[0] if reason else '?'}", config=cfg)
                    else:
                        res.failures[i] = Failure(candidates[i][0], str(ev.get("stage", "launch")), reason, config=cfg)
        if res.reference is not None:
            break
        if not ref_ok:   # the child died before its reference was ready
            how = "timed out" if rc is None else _how_it_ended(rc)
            res.reference = f"the child process ended ({how}) before its reference was computed: {_last_lines(err)}"
            break
        if started is not None:
            how = f"timed out after {timeout:g} s" if rc is None else f"died ({_how_it_ended(rc)})"
            res.failures[started] = Failure(candidates[started][0], "isolate",
                                            f"the child process {how} while running it: {_last_lines(err)}",
                                            config=candidates[started][1])
            done.add(started)
        elif rc is None:
            for i in todo:
                if i not in done:
                    res.failures[i] = Failure(candidates[i][0], "isolate", "not checked: the child process timed "
                                              f"out after {timeout:g} s", config=candidates[i][1])
            break
        rest = [i for i in todo if i not in done]
        if len(rest) == len(todo):   # no progress (a child that says nothing): give up on them
            for i in rest:
                res.failures[i] = Failure(candidates[i][0], "isolate", f"the child process ended "
                                          f"({_how_it_ended(rc)}) without checking it: {_last_lines(err)}",
                                          config=candidates[i][1])
            break
        todo = rest
    return res


# -- the child -----------------------------------------------------------------------------------

def _child() -> int:
    """The child's side: read the request from standard input, report on standard output."""
    import cupy

    from .harness import Harness, describe, failure_stage
    from .invokers import build_invoker
    from .problem import ProblemDescription

    req = json.loads(sys.stdin.read())

    def say(**kw) -> None:
        sys.stdout.write(json.dumps(kw) + "\n")
        sys.stdout.flush()

    try:
        cupy.cuda.Device(int(req["device"])).use()
        problem = ProblemDescription.from_key(req["problem"])
        h = Harness(problem, verify=True, seed=req.get("seed"))
        cupy.cuda.runtime.deviceSynchronize()
    except Exception as e:
        say(event="reference", ok=False, reason=describe(e))
        return 2
    say(event="reference", ok=True)
    for i, (sid, cfg, ref) in enumerate(req["candidates"]):
        say(event="start", index=i)
        stage = "solution"
        try:
            solver = _load_solver(sid, ref)
            sol = solver.get_solution(problem, cfg)
            stage = "compile"
            inv = build_invoker(problem, sol)
            stage = "launch"
            h.check(inv, h.workspace(sol.workspace_bytes), solver.family)
            cupy.cuda.runtime.deviceSynchronize()
        except Exception as e:
            st, reason = failure_stage(e) if stage == "launch" else (stage, describe(e))
            sticky = context_broken(reason)
            say(event="done", index=i, ok=False, stage=st, reason=reason, sticky=sticky)
            if sticky:
                return 3   # this context is unusable: the parent starts a new child for the rest
            h.release()
            continue
        h.release()
        say(event="done", index=i, ok=True)
    return 0


if __name__ == "__main__":
    code = _child()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)   # no exit-time clean-up: after a sticky error CuPy's unloads would only print tracebacks
