"""Switch the launch path of the benchmarks in one process, so that each is timed in alternating rounds on one host:
``native`` (the extension ``miofind._native``, a prepared solution of several launches or library calls replayed as
one native call, cuBLASLt's matmuls as the kernels read from a graph capture of them, ``miofind.capture``),
``replay-calls`` (the same replay with each cuBLASLt matmul a call of the library), ``stepwise`` (the extension, each launch and library call its own native call from the invoker's
Python) or ``python`` (ctypes and CuPy, ``MIOFIND_NATIVE=0``)."""

from __future__ import annotations

import os
import sys

PATHS = ("native", "replay-calls", "stepwise", "python")


def set_path(path: str) -> None:
    """Launch through ``path`` from now on. Prepared solutions, invokers and miofind.torch's prepared
    problems and plans are dropped, so that the next call binds its launches on that path (kernels stay
    loaded; the FindDBs answer again)."""
    if path not in PATHS:
        raise SystemExit(f"launch path {path!r}: expected one of {', '.join(PATHS)}")
    import miofind
    from miofind import cublas, invokers, launch, tiered

    os.environ["MIOFIND_NATIVE"] = "0" if path == "python" else "1"
    invokers.replay = path in ("native", "replay-calls")
    cublas.capture_kernels = path == "native"
    launch._native = None
    miofind.clear_caches()
    # the specialised invokers that replaced generic ones during a find are kept apart from the invoker
    # cache: drop them too (call after tiered.wait), or they keep the path they were bound on
    tiered.clear()
    if "miofind.torch" in sys.modules:
        sys.modules["miofind.torch"].clear()
    if path != "python" and launch.native() is None:
        raise SystemExit(f"launch path {path}: miofind._native is not built (pip install ., or gcc as in "
                         "scripts/gpu-check)")
