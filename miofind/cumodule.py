"""CUDA modules loaded through the driver API as CuPy binds it (``cupy_backends``), standing where ``cupy.RawModule``
and ``cupy.RawKernel`` stand for the invoker factories and ``launch.Launch`` (``get_function``, ``.kernel.ptr``,
``max_dynamic_shared_size_bytes``, ``get_global_var``), so that a PyTorch process that has not imported CuPy loads
and runs miofind's kernels without that import (about 60 ms on the H100 host). ``miofind.compile`` and
``miofind.generic`` use them only where CuPy is not imported; a process with CuPy keeps CuPy's own.

As CuPy's, a module is loaded once per device, at its first use on that device, into the device's primary
context (made current in the calling thread first).
"""

from __future__ import annotations

import threading

from .device import driver, runtime


class DriverModule:
    """One cubin (a file's path, or its bytes), loaded per device on first use."""

    def __init__(self, path: str | None = None, data: bytes | None = None) -> None:
        if (path is None) == (data is None):
            raise ValueError("DriverModule: give a path or the cubin's bytes")
        self.path, self.data = (str(path) if path is not None else None), data
        self._handles: dict[int, int] = {}
        self._lock = threading.Lock()

    def handle(self) -> int:
        """The CUmodule on the current device."""
        rt = runtime()
        dev = rt.getDevice()
        h = self._handles.get(dev)
        if h is None:
            with self._lock:
                h = self._handles.get(dev)
                if h is None:
                    if not driver().ctxGetCurrent():
                        rt.setDevice(dev)       # the device's primary context, current in this thread
                    drv = driver()
                    h = drv.moduleLoad(self.path) if self.path is not None else drv.moduleLoadData(self.data)
                    self._handles[dev] = h
        return h

    def get_function(self, name: str) -> "DriverKernel":
        return DriverKernel(self, name)

    def get_global_var(self, name: str) -> int:
        """The device address of the module's global ``name`` on the current device."""
        return driver().moduleGetGlobal(self.handle(), name)


class _Function:
    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class DriverKernel:
    """One kernel of a DriverModule: ``.kernel.ptr`` is its CUfunction on the current device."""

    def __init__(self, module: DriverModule, name: str) -> None:
        self.module, self.name = module, name
        self._fns: dict[int, _Function] = {}

    @property
    def kernel(self) -> _Function:
        dev = runtime().getDevice()
        fn = self._fns.get(dev)
        if fn is None:
            fn = self._fns[dev] = _Function(driver().moduleGetFunction(self.module.handle(), self.name))
        return fn

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        drv = driver()
        return drv.funcGetAttribute(drv.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.kernel.ptr)

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, nbytes: int) -> None:
        drv = driver()
        drv.funcSetAttribute(self.kernel.ptr, drv.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(nbytes))
