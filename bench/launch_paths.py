"""Switch the launch path of the benchmarks in one process: the native extension (``miofind._native``) or
ctypes and CuPy (``MIOFIND_NATIVE=0``), so that both are timed in alternating rounds on one host."""

from __future__ import annotations

import os
import sys

PATHS = ("native", "python")


def set_path(path: str) -> None:
    """Launch through ``path`` from now on. Prepared solutions, invokers and miofind.torch's prepared
    problems and plans are dropped, so that the next call binds its launches on that path (kernels stay
    loaded; the FindDBs answer again)."""
    if path not in PATHS:
        raise SystemExit(f"launch path {path!r}: expected one of {', '.join(PATHS)}")
    import miofind
    from miofind import launch, tiered

    os.environ["MIOFIND_NATIVE"] = "1" if path == "native" else "0"
    launch._native = None
    miofind.clear_caches()
    # the specialised invokers that replaced generic ones during a find are kept apart from the invoker
    # cache: drop them too (call after tiered.wait), or they keep the path they were bound on
    tiered.clear()
    if "miofind.torch" in sys.modules:
        sys.modules["miofind.torch"].clear()
    if path == "native" and launch.native() is None:
        raise SystemExit("launch path native: miofind._native is not built (pip install ., or gcc as in "
                         "scripts/gpu-check)")
