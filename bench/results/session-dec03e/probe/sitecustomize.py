"""Session dec03e: a timing probe for the background drain (on PYTHONPATH as sitecustomize). Once miofind.tiered is
imported, it wraps its background steps (_compile_apart, _wait_idle, _specialise, _measure_deferred,
_switch_when_compiled, _at_exit) and miofind.invokers.build_invoker with wall timers, and at exit writes each call
(start and duration from process start, thread, kernels; for _compile_apart, how many of its kernels were
in the kernel cache as it began) to $PROBE_OUT/<pid>.json. Changes no result."""

import atexit
import functools
import importlib.abc
import json
import os
import sys
import threading
import time

T0 = time.perf_counter()
EVENTS = []
POOL = set()   # the compile pools' classes seen
HITS = []


def _cached(kernels) -> int:
    """How many of ``kernels`` have a cubin in the kernel cache now (tiered._compile_apart's own test)."""
    try:
        from miofind.compile import binary_key, cached_cubin, private_cache_dir
        from miofind.device import current_device
        arch, cache = current_device().arch, private_cache_dir()
        return sum(cached_cubin(cache / f"{binary_key(k, arch)}.cubin") is not None for k in kernels)
    except Exception:   # noqa: BLE001
        return -1
_lock = threading.Lock()


def _timed(name, fn, size=None):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            ev = (name, round(t - T0, 4), round(time.perf_counter() - t, 4), threading.current_thread().name,
                  size(a) if size else None)
            with _lock:
                EVENTS.append(ev)
    return wrapper


def _patch(mod):
    if mod.__name__ == "miofind.tiered":
        for n in ("_wait_idle", "_specialise", "_measure_deferred", "_switch_when_compiled", "_at_exit"):
            if hasattr(mod, n):
                setattr(mod, n, _timed(n, getattr(mod, n)))
        inner = mod._compile_apart

        def compile_apart(kernels):
            kernels = list(kernels)
            t, before = time.perf_counter(), _cached(kernels)
            try:
                return inner(kernels)
            finally:
                if mod._procs is not None:
                    POOL.add(type(mod._procs).__name__)
                with _lock:   # (kernels, of them cached when the call began): what the workers were left to compile
                    HITS.append((round(t - T0, 4), len(kernels), before))
        mod._compile_apart = _timed("_compile_apart", compile_apart, lambda a: len(list(a[0])) if a else 0)
    elif mod.__name__ == "miofind.invokers":
        mod.build_invoker = _timed("build_invoker", mod.build_invoker)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in ("miofind.tiered", "miofind.invokers"):
            return None
        for f in sys.meta_path:
            if f is self:
                continue
            spec = getattr(f, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None:
                exec_module = spec.loader.exec_module

                def run(module, _exec=exec_module):
                    _exec(module)
                    _patch(module)
                spec.loader.exec_module = run
                return spec
        return None


sys.meta_path.insert(0, _Finder())


def _dump():
    out = os.environ.get("PROBE_OUT")
    if not out or not EVENTS:
        return
    t = sys.modules.get("miofind.tiered")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{os.getpid()}.json"), "w") as f:
        json.dump({"argv": sys.argv, "pool": sorted(POOL), "miofind": t.__file__ if t else None, "end_s": round(time.perf_counter() - T0, 3), "events": EVENTS,
                   "cached_at_entry": HITS}, f)


atexit.register(_dump)
