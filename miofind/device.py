"""The GPU we run on: availability checks and the identity that keys FindDB records.

``current_device()`` asks CUDA; ``device_from_string("sm_90-132")`` names a device without one, for
GPU-less queries of the shipped FindDB (``miofind db ... --device``, ``get_solutions(device=...)``).
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from dataclasses import dataclass


class NoGPUError(RuntimeError):
    """Raised by anything that needs a CUDA GPU when there is none (one-line message)."""


@dataclass(frozen=True)
class DeviceInfo:
    name: str              # e.g. "NVIDIA H100 80GB HBM3"
    arch: str              # e.g. "sm_90"
    sm_count: int          # multiprocessor count
    driver_version: str = ""
    cuda_version: str = ""   # CUDA runtime CuPy was built for, e.g. "13.0"
    cupy_version: str = ""

    @property
    def db_name(self) -> str:
        """Device identity as stored in the FindDB: architecture, SM count and name, e.g.
        ``sm_90-132-NVIDIA_H100_80GB_HBM3``."""
        slug = re.sub(r"[^A-Za-z0-9]+", "_", self.name).strip("_")
        return f"{self.arch}-{self.sm_count}" + (f"-{slug}" if slug else "")


# what works without a GPU, appended to every NoGPUError message
WITHOUT_GPU = ("without a GPU, `miofind solvers`, `miofind find --immediate --device sm_90-132 ...` "
               "and `miofind db ...` still work")


def _no_gpu(reason: str) -> NoGPUError:
    return NoGPUError(f"no usable GPU ({reason}); {WITHOUT_GPU}")


_DEVICE_RE = re.compile(r"(sm_\d{2,3})-(\d+)(?:-(.+))?")


def device_from_string(spec: str, *, option: str = "--device") -> DeviceInfo:
    """A DeviceInfo from a device string, without a GPU: ``sm_<cc>-<SM count>[-<name>]``, as
    ``DeviceInfo.db_name`` writes it (``sm_90-132``, ``sm_90-132-NVIDIA_H100_80GB_HBM3``); underscores in
    the name stand for spaces, so ``db_name`` gives such a string back. ``cuda_version`` and
    ``cupy_version`` are those of the installed CuPy when it imports (no GPU needed), else empty: they
    decide, with the kernel sources, which stored records are trusted. Raises a one-line ValueError
    naming ``option`` and the value for anything else."""
    m = _DEVICE_RE.fullmatch(spec.strip()) if isinstance(spec, str) else None
    if m is None or int(m.group(2)) < 1:
        raise ValueError(f"{option}={spec!r}: expected sm_<compute capability>-<SM count>[-<name>], e.g. "
                         "sm_90-132 or sm_90-132-NVIDIA_H100_80GB_HBM3")
    name = (m.group(3) or "").replace("_", " ").strip()
    return DeviceInfo(name=name, arch=m.group(1), sm_count=int(m.group(2)), **_cupy_versions())


@functools.lru_cache(maxsize=None)
def _cupy_versions() -> dict[str, str]:
    """The CUDA runtime version CuPy was built for and CuPy's version, read without touching a GPU."""
    try:
        return {"cuda_version": version_string(_runtime().runtimeGetVersion()), "cupy_version": _cupy_version()}
    except Exception:
        return {"cuda_version": "", "cupy_version": ""}


def _cupy():
    try:
        import cupy  # noqa: F401
    except Exception as e:
        if isinstance(e, ImportError) and e.name == "cupy":
            raise _no_gpu("CuPy is not installed; install miofind[cuda13] or miofind[cuda12]") from None
        first = (str(e).splitlines() or [e.__class__.__name__])[0]
        raise _no_gpu(f"CuPy does not import: {first}") from None
    return cupy


def _runtime():
    """CUDA's runtime API as CuPy binds it, without importing CuPy's package where it is not imported yet:
    ``cupy.cuda.runtime`` re-exports ``cupy_backends.cuda.api.runtime``, so the calls and their answers are
    the same, and a find answered from a FindDB, or a run in a PyTorch process, does not pay CuPy's import
    (about 60 ms on the H100 host, 0.3-0.6 s on a 2-core CPU) for them. Where that module does not import,
    CuPy's own import gives the error (``_cupy``)."""
    if "cupy" not in sys.modules and importlib.util.find_spec("cupy") is not None:
        try:
            from cupy_backends.cuda.api import runtime

            return runtime
        except Exception:
            pass
    return _cupy().cuda.runtime


def runtime():
    """CUDA's runtime API (``cupy.cuda.runtime``'s functions: ``getDevice``, ``setDevice``,
    ``streamIsCapturing``, ...) without importing CuPy; NoGPUError where CuPy is not installed. Cheap enough
    for a per-call path once loaded."""
    rt = sys.modules.get("cupy_backends.cuda.api.runtime")
    return rt if rt is not None else _runtime()


def _cupy_version() -> str:
    """``cupy.__version__`` (which CuPy takes from ``cupy/_version.py``), read from that file where CuPy is not
    imported yet."""
    mod = sys.modules.get("cupy")
    if mod is not None:
        return mod.__version__
    spec = importlib.util.find_spec("cupy")
    for d in (spec.submodule_search_locations or []) if spec is not None else []:
        try:
            with open(f"{d}/_version.py", encoding="utf-8") as fh:
                m = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", fh.read(), re.M)
        except OSError:
            continue
        if m:
            return m.group(1)
    return _cupy().__version__


def version_string(v: int) -> str:
    """A CUDA version integer (13020) as "13.2"."""
    return f"{v // 1000}.{(v % 1000) // 10}"


@functools.lru_cache(maxsize=None)
def current_device(device_id: int | None = None) -> DeviceInfo:
    """Identity of the current (or given) CUDA device; raises NoGPUError without one."""
    rt = _runtime()
    try:
        n = rt.getDeviceCount()
        if n < 1:
            raise _no_gpu("no CUDA device is visible")
        dev = rt.getDevice() if device_id is None else device_id
        props = rt.getDeviceProperties(dev)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        return DeviceInfo(
            name=name,
            arch=f"sm_{props['major']}{props['minor']}",
            sm_count=int(props["multiProcessorCount"]),
            driver_version=version_string(rt.driverGetVersion()),
            cuda_version=version_string(rt.runtimeGetVersion()),
            cupy_version=_cupy_version(),
        )
    except NoGPUError:
        raise
    except Exception as e:
        msg = str(e).splitlines()[0] if str(e) else e.__class__.__name__
        raise _no_gpu(f"CUDA is not usable here: {msg}") from None

