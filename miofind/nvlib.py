"""Loading an NVIDIA library (cuFFT, cuBLAS) for a ctypes binding, at absolute paths only; and the
stream-capture mode of miofind's own background threads (``relaxed_capture_mode``).

The candidates, in order: the copy the process already has mapped (after importing the CuPy module
built against it), the pip wheels' ``nvidia/*/lib`` folders on ``sys.path`` (absolute entries only:
'' stands for the current directory), the CUDA toolkit's ``lib64`` (CUDA_PATH, CUDA_HOME,
/usr/local/cuda), then the loader's search by soname.
"""

from __future__ import annotations

import ctypes
import glob
import importlib
import os
import re
import sys


def candidates(stem: str, cupy_module: str, wheel_dirs: tuple[str, ...], sonames: tuple[str, ...]):
    """Paths (or sonames) where ``lib<stem>.so`` may be, best first."""
    try:
        importlib.import_module(cupy_module)   # loads the library CuPy was built against
    except Exception:
        pass
    mapped = re.compile(rf"/lib{stem}\.so(\.\d+)*$")
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        maps = ""
    for line in maps.splitlines() if f"/lib{stem}.so" in maps else ():
        path = line.split(" ")[-1]
        if mapped.search(path):
            yield path
    for sp in sys.path:
        if not sp or not os.path.isabs(sp):
            continue
        for d in wheel_dirs:
            yield from sorted(glob.glob(os.path.join(sp, "nvidia", d, "lib", f"lib{stem}.so*")), reverse=True)
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.path.isabs(root):
            yield from sorted(glob.glob(os.path.join(root, "lib64", f"lib{stem}.so*")), reverse=True)
    yield from sonames


def load(stem: str, probe: str, cupy_module: str, wheel_dirs: tuple[str, ...], sonames: tuple[str, ...],
         hint: str) -> ctypes.CDLL:
    """The first candidate that loads and has the symbol ``probe``; RuntimeError naming ``hint`` and
    what was tried otherwise."""
    tried, seen = [], set()
    for path in candidates(stem, cupy_module, wheel_dirs, sonames):   # lazily: no folder is searched
        if path in seen:                                               # once an earlier candidate loads
            continue
        seen.add(path)
        try:
            lib = ctypes.CDLL(path)
            getattr(lib, probe)
        except (OSError, AttributeError) as e:
            tried.append(f"{path}: {e}")
            continue
        return lib
    raise RuntimeError(f"lib{stem} not found ({hint}); tried: " + "; ".join(tried[-6:]))


def relaxed_capture_mode() -> None:
    """Run in each background thread of miofind's at its start: its CUDA calls (module loads, allocations,
    library set-up) in the relaxed stream-capture mode (``cuThreadExchangeStreamCaptureMode``), so that they
    neither fail nor invalidate a CUDA-graph capture another thread (the user's) runs meanwhile in the
    default, global mode, as PyTorch's allocator does for its own calls. Where the driver has no such call,
    nothing."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        mode = ctypes.c_int(2)              # CU_STREAM_CAPTURE_MODE_RELAXED
        lib.cuThreadExchangeStreamCaptureMode(ctypes.byref(mode))
    except (OSError, AttributeError):
        pass
