"""CUDA modules loaded through the driver API (libcuda through ctypes), standing where ``cupy.RawModule`` and
``cupy.RawKernel`` stand for the invoker factories and ``launch.Launch`` (``get_function``, ``.kernel.ptr``,
``max_dynamic_shared_size_bytes``, ``get_global_var``), so that a PyTorch process that has not imported CuPy loads
and runs miofind's kernels without that import (about 60 ms on the H100 host; CuPy's own driver binding imports
CuPy at its first call). ``miofind.compile`` and ``miofind.generic`` use them only where CuPy is not imported; a
process with CuPy keeps CuPy's own.

As CuPy's, a module is loaded once per device, at its first use on that device, into the device's primary
context (made current in the calling thread first).
"""

from __future__ import annotations

import ctypes
import threading

from .device import runtime

MAX_DYNAMIC_SHARED_SIZE_BYTES = 8       # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

_cu = None
_cu_lock = threading.Lock()


class CUDADriverError(RuntimeError):
    """A driver call that failed: its name and CUresult."""


def libcuda():
    """libcuda with the prototypes of the calls used here and by ``launch``'s Python path (loaded once)."""
    global _cu
    with _cu_lock:
        if _cu is None:
            lib = ctypes.CDLL("libcuda.so.1")
            vp, pvp = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
            for name, args in (("cuCtxGetCurrent", [pvp]),
                               ("cuModuleLoad", [pvp, ctypes.c_char_p]),
                               ("cuModuleLoadData", [pvp, ctypes.c_char_p]),
                               ("cuModuleGetFunction", [pvp, vp, ctypes.c_char_p]),
                               ("cuModuleGetGlobal_v2", [ctypes.POINTER(ctypes.c_uint64),
                                                         ctypes.POINTER(ctypes.c_size_t), vp, ctypes.c_char_p]),
                               ("cuFuncGetAttribute", [ctypes.POINTER(ctypes.c_int), ctypes.c_int, vp]),
                               ("cuFuncSetAttribute", [vp, ctypes.c_int, ctypes.c_int]),
                               ("cuLaunchKernel", [vp, *[ctypes.c_uint] * 7, vp, vp, vp]),
                               ("cuGetErrorName", [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)])):
                fn = getattr(lib, name)
                fn.argtypes, fn.restype = args, ctypes.c_int
            _cu = lib
    return _cu


def check(name: str, result: int) -> None:
    """CUDADriverError naming the call and its CUresult unless ``result`` is CUDA_SUCCESS."""
    if result:
        s = ctypes.c_char_p()
        libcuda().cuGetErrorName(result, ctypes.byref(s))
        raise CUDADriverError(f"{name} failed: {(s.value or b'CUresult %d' % result).decode()}")


def context_current() -> bool:
    h = ctypes.c_void_p()
    check("cuCtxGetCurrent", libcuda().cuCtxGetCurrent(ctypes.byref(h)))
    return bool(h.value)


def get_attribute(fn: int, attr: int) -> int:
    v = ctypes.c_int()
    check("cuFuncGetAttribute", libcuda().cuFuncGetAttribute(ctypes.byref(v), attr, fn))
    return v.value


def set_attribute(fn: int, attr: int, value: int) -> None:
    check("cuFuncSetAttribute", libcuda().cuFuncSetAttribute(fn, attr, int(value)))


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
                    if not context_current():
                        rt.setDevice(dev)       # the device's primary context, current in this thread
                    mod = ctypes.c_void_p()
                    if self.path is not None:
                        check("cuModuleLoad", libcuda().cuModuleLoad(ctypes.byref(mod), self.path.encode()))
                    else:
                        check("cuModuleLoadData", libcuda().cuModuleLoadData(ctypes.byref(mod), self.data))
                    h = self._handles[dev] = mod.value
        return h

    def get_function(self, name: str) -> "DriverKernel":
        return DriverKernel(self, name)

    def get_global_var(self, name: str) -> int:
        """The device address of the module's global ``name`` on the current device."""
        ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
        check("cuModuleGetGlobal", libcuda().cuModuleGetGlobal_v2(ctypes.byref(ptr), ctypes.byref(size),
                                                                   self.handle(), name.encode()))
        return ptr.value


class _Function:
    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class DriverKernel:
    """One kernel of a DriverModule: ``.kernel.ptr`` (and ``.ptr``) is its CUfunction on the current device."""

    def __init__(self, module: DriverModule, name: str) -> None:
        self.module, self.name = module, name
        self._fns: dict[int, _Function] = {}

    @property
    def kernel(self) -> _Function:
        dev = runtime().getDevice()
        fn = self._fns.get(dev)
        if fn is None:
            h = ctypes.c_void_p()
            check("cuModuleGetFunction", libcuda().cuModuleGetFunction(ctypes.byref(h), self.module.handle(),
                                                                         self.name.encode()))
            fn = self._fns[dev] = _Function(h.value)
        return fn

    @property
    def ptr(self) -> int:
        return self.kernel.ptr

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        return get_attribute(self.kernel.ptr, MAX_DYNAMIC_SHARED_SIZE_BYTES)

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, nbytes: int) -> None:
        set_attribute(self.kernel.ptr, MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
