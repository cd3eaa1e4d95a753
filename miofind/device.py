"""The GPU we run on: availability checks and the identity that keys FindDB records."""

from __future__ import annotations

import functools
import re
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
    def compute_capability(self) -> str:
        return self.arch.removeprefix("sm_")

    @property
    def db_name(self) -> str:
        """Device identity as stored in the FindDB: architecture, SM count and name, e.g.
        ``sm_90-132-NVIDIA_H100_80GB_HBM3``."""
        slug = re.sub(r"[^A-Za-z0-9]+", "_", self.name).strip("_")
        return f"{self.arch}-{self.sm_count}-{slug}"


def _cupy():
    try:
        import cupy  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on the install
        raise NoGPUError(f"no GPU: CuPy is not installed ({e.__class__.__name__}); "
                         "install miofind[cuda13] or miofind[cuda12]") from None
    return cupy


def _ver(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


@functools.lru_cache(maxsize=None)
def current_device(device_id: int | None = None) -> DeviceInfo:
    """Identity of the current (or given) CUDA device; raises NoGPUError without one."""
    cupy = _cupy()
    try:
        rt = cupy.cuda.runtime
        n = rt.getDeviceCount()
        if n < 1:
            raise NoGPUError("no GPU: no CUDA device is visible")
        dev = rt.getDevice() if device_id is None else device_id
        props = rt.getDeviceProperties(dev)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        return DeviceInfo(
            name=name,
            arch=f"sm_{props['major']}{props['minor']}",
            sm_count=int(props["multiProcessorCount"]),
            driver_version=_ver(rt.driverGetVersion()),
            cuda_version=_ver(rt.runtimeGetVersion()),
            cupy_version=cupy.__version__,
        )
    except NoGPUError:
        raise
    except Exception as e:
        msg = str(e).splitlines()[0] if str(e) else e.__class__.__name__
        raise NoGPUError(f"no GPU: CUDA is not usable here ({msg})") from None


def gpu_available() -> bool:
    try:
        current_device()
        return True
    except NoGPUError:
        return False
