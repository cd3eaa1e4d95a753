"""A minimal ctypes binding of cuFFT for the FFT solvers: batched in-place R2C/C2R plans whose work
area is a pointer the caller supplies (a slice of the solution's workspace), on CuPy's current stream.

CuPy's own plans allocate their work area from CuPy's memory pool and expose no way to move it, so
the plan is made here with auto-allocation off (cufftMakePlanMany64 reports the work size) and
cufftSetWorkArea points it into the workspace at run time. An execute goes through miofind's native
caller where it is built (``miofind.launch.native``), else through ctypes. The library is the libcufft CuPy loaded,
else one from the pip wheels (nvidia-cufft) or the CUDA toolkit, searched at absolute paths only
(never the current directory, which '' on sys.path stands for).
"""

from __future__ import annotations

import ctypes
import functools
import threading

from miofind import launch, nvlib
from miofind.launch import native, native_function

CUFFT_R2C = 0x2A
CUFFT_C2R = 0x2C
_RESULTS = {1: "INVALID_PLAN", 2: "ALLOC_FAILED", 3: "INVALID_TYPE", 4: "INVALID_VALUE", 5: "INTERNAL_ERROR",
            6: "EXEC_FAILED", 7: "SETUP_FAILED", 8: "INVALID_SIZE", 9: "UNALIGNED_DATA", 11: "INVALID_DEVICE",
            13: "NO_WORKSPACE", 14: "NOT_IMPLEMENTED", 16: "NOT_SUPPORTED"}

_lib = None
_lib_lock = threading.Lock()


def library():
    """The loaded libcufft with its prototypes; RuntimeError naming what was tried if none loads."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        lib = nvlib.load("cufft", "cufftMakePlanMany64", "cupy.cuda.cufft", ("cu*", "cufft"),
                         _SONAMES,
                         "install the nvidia-cufft wheel, e.g. pip install 'cuda-toolkit[cufft]'")
        _set_prototypes(lib)
        _lib = lib
        return lib


_SONAMES = ("libcufft.so.12", "libcufft.so.11", "libcufft.so")
_prefetching: list[threading.Thread] = []
_soname_version: int | None = None     # cufftGetVersion of the library opened by soname (``_prefetch``)


def prefetch_version() -> None:
    """Start reading ``version()`` in a background thread, once per process, so that a first find's
    trust key of the FFT solvers waits for little of libcufft's load (about 7 ms on an H100 host:
    bench/results/hot-path/first-find-stages/). The thread first opens the library by its soname, as
    the dynamic loader resolves CuPy's cufft module's dependency (the module has no RUNPATH), inside
    ctypes' dlopen, which releases the GIL: the caller's thread runs on meanwhile. Where no soname
    opens, nothing starts (``version()`` then searches as before, in the caller's thread)."""
    if _prefetching or _lib is not None:
        return
    t = threading.Thread(target=_prefetch, name="miofind-cufft-version", daemon=True)
    _prefetching.append(t)
    t.start()


def _prefetch() -> None:
    """Open the library by soname and read its version there: the library CuPy's cufft module maps (it resolves
    its dependency by soname) and the one ``library()`` then finds mapped first, so the same version, without
    importing that module here (Python work that would take the GIL from the find)."""
    global _soname_version
    for soname in _SONAMES:
        try:
            lib = ctypes.CDLL(soname)
        except OSError:
            continue
        try:
            v = ctypes.c_int(0)
            if lib.cufftGetVersion(ctypes.byref(v)) == 0:
                _soname_version = v.value
        except Exception:   # no version here: ``version()`` reads it through ``library()``
            pass
        return


@functools.lru_cache(maxsize=1)
def version() -> int | None:
    """cuFFT's version (e.g. 12500), or None where no libcufft loads."""
    if _lib is None and _prefetching:
        _prefetching[0].join()      # ctypes' calls release the GIL: a wait, not work
        if _soname_version is not None:
            return _soname_version
    try:
        lib = library()
    except RuntimeError:
        return None
    v = ctypes.c_int(0)
    return v.value if lib.cufftGetVersion(ctypes.byref(v)) == 0 else None


def _set_prototypes(lib):
    i, ll, vp = ctypes.c_int, ctypes.c_longlong, ctypes.c_void_p
    pll = ctypes.POINTER(ll)
    protos = {
        "cufftCreate": [ctypes.POINTER(i)],
        "cufftSetAutoAllocation": [i, i],
        "cufftMakePlanMany64": [i, i, pll, pll, ll, ll, pll, ll, ll, i, ll, ctypes.POINTER(ctypes.c_size_t)],
        "cufftSetStream": [i, vp],
        "cufftSetWorkArea": [i, vp],
        "cufftExecR2C": [i, vp, vp],
        "cufftExecC2R": [i, vp, vp],
        "cufftDestroy": [i],
        "cufftGetVersion": [ctypes.POINTER(i)],
    }
    for name, args in protos.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = i


# Plans made ahead of a find's preparation (``prefetch_plans``): (device, dims, kind, batch, plane_complex) -> the plans
# made for it and not yet handed out, each handed out once (``plan``); at most PLAN_POOL_KEYS keys, oldest dropped
PLAN_POOL_KEYS = 16
_pool: dict = {}
_pool_lock = threading.Lock()
_making: dict = {}       # key -> the thread making its plan


def _plan_key(device: int, dims, kind: int, batch: int, plane_complex: int) -> tuple:
    return (int(device), tuple(int(v) for v in dims), int(kind), int(batch), int(plane_complex))


def prefetch_plans(specs, device: int) -> threading.Thread | None:
    """Start making, in a thread, one ``InPlacePlan(dims, kind, batch, plane_complex)`` for each of ``specs`` on
    ``device``, for ``plan`` to hand out: cuFFT plans a new transform size on the host for several milliseconds
    (cufftMakePlanMany64, through ctypes: the GIL is released), which a find's other work then overlaps. Specs
    already pooled or being made are skipped; None where none is left. A failure leaves the key empty: ``plan`` then
    makes the plan itself and meets the error there."""
    keys = []
    with _pool_lock:
        for spec in specs:
            k = _plan_key(device, *spec)
            if k not in _making and not _pool.get(k) and k not in keys:
                keys.append(k)
        if not keys:
            return None

        def work():
            try:
                import cupy

                from miofind.nvlib import relaxed_capture_mode
                # cuFFT's allocations while planning neither fail nor invalidate another thread's CUDA-graph capture
                relaxed_capture_mode()
                cupy.cuda.runtime.setDevice(device)
                for k in keys:
                    try:
                        made = InPlacePlan(k[1], k[2], k[3], k[4])
                    except Exception:   # noqa: BLE001  plan() makes it again and reports the error
                        continue
                    with _pool_lock:
                        _pool.setdefault(k, []).append(made)
                        while len(_pool) > PLAN_POOL_KEYS:
                            del _pool[next(iter(_pool))]
            finally:
                with _pool_lock:
                    for k in keys:
                        if _making.get(k) is threading.current_thread():
                            del _making[k]

        t = threading.Thread(target=work, name="miofind-cufft-plans", daemon=True)
        for k in keys:
            _making[k] = t
    t.start()
    return t


def plan(dims, kind: int, batch: int, plane_complex: int) -> InPlacePlan:
    """An ``InPlacePlan`` of these arguments on the current device: one ``prefetch_plans`` made (after waiting for its
    thread where it is still making it), else a new one."""
    import cupy
    k = _plan_key(cupy.cuda.runtime.getDevice(), dims, kind, batch, plane_complex)
    with _pool_lock:
        t = _making.get(k)
    if t is not None and t is not threading.current_thread():
        t.join()        # its cuFFT calls release the GIL: a wait, not work
    with _pool_lock:
        made = _pool.get(k)
        if made:
            p = made.pop()
            if not made:
                del _pool[k]
            return p
    return InPlacePlan(dims, kind, batch, plane_complex)


def _check(name: str, result: int) -> None:
    if result != 0:
        raise RuntimeError(f"{name} failed: CUFFT_{_RESULTS.get(result, 'ERROR')} ({result})")


class InPlacePlan:
    """A batched in-place real transform over planes of ``plane_complex`` complex values.

    ``dims`` are the transform sizes (last axis real, even); a row of the real layout holds
    2*(dims[-1]//2 + 1) floats. ``kind`` is CUFFT_R2C or CUFFT_C2R.
    """

    def __init__(self, dims, kind: int, batch: int, plane_complex: int):
        self.lib = library()
        dims = [int(v) for v in dims]
        half = dims[-1] // 2 + 1
        real_embed, cplx_embed = dims[:-1] + [2 * half], dims[:-1] + [half]
        rank = len(dims)
        arr = lambda v: (ctypes.c_longlong * rank)(*v)  # noqa: E731
        if kind == CUFFT_R2C:
            inembed, idist, onembed, odist = real_embed, 2 * plane_complex, cplx_embed, plane_complex
        else:
            inembed, idist, onembed, odist = cplx_embed, plane_complex, real_embed, 2 * plane_complex
        handle = ctypes.c_int(0)
        _check("cufftCreate", self.lib.cufftCreate(ctypes.byref(handle)))
        self.handle = handle.value
        self.kind = kind
        _check("cufftSetAutoAllocation", self.lib.cufftSetAutoAllocation(self.handle, 0))
        work = ctypes.c_size_t(0)
        _check("cufftMakePlanMany64", self.lib.cufftMakePlanMany64(
            self.handle, rank, arr(dims), arr(inembed), 1, idist, arr(onembed), 1, odist, kind, int(batch),
            ctypes.byref(work)))
        self.work_bytes = int(work.value)
        self._stream = None
        self._work = None
        self._traced = False        # once traced, a replay may set stream and work area behind this object's back
        self._lock = threading.Lock()
        nat = native()
        fn = self._exec_fn = self.lib.cufftExecR2C if kind == CUFFT_R2C else self.lib.cufftExecC2R
        # in place: the input and output pointers are the one the call gives
        self._exec = nat.caller(native_function(fn), [self.handle, 0, 0], (1, 2)) if nat is not None else None

    def execute(self, data_ptr: int, work_ptr: int, stream_ptr: int) -> None:
        """Transform in place at ``data_ptr`` on ``stream_ptr``, with the work area at ``work_ptr``. Under
        ``miofind.launch.trace`` it records its three calls (stream, work area, execute) instead."""
        lib = self.lib
        if launch._tracer is not None and self._trace(data_ptr, work_ptr, stream_ptr):
            return
        with self._lock:  # stream and work area are plan state: set and launch atomically
            if self._traced:
                self._stream = self._work = None
            if stream_ptr != self._stream:
                _check("cufftSetStream", lib.cufftSetStream(self.handle, ctypes.c_void_p(stream_ptr)))
                self._stream = stream_ptr
            if self.work_bytes and work_ptr != self._work:
                _check("cufftSetWorkArea", lib.cufftSetWorkArea(self.handle, ctypes.c_void_p(work_ptr)))
                self._work = work_ptr
            if self._exec is not None:
                _check("cufftExecR2C" if self.kind == CUFFT_R2C else "cufftExecC2R", self._exec(data_ptr, data_ptr))
                return
            ptr = ctypes.c_void_p(data_ptr)
            if self.kind == CUFFT_R2C:
                _check("cufftExecR2C", lib.cufftExecR2C(self.handle, ptr, ptr))
            else:
                _check("cufftExecC2R", lib.cufftExecC2R(self.handle, ptr, ptr))

    def _trace(self, data_ptr: int, work_ptr: int, stream_ptr: int) -> bool:
        """Record this execute's calls in the trace running on this thread, if one does: the replay sets the stream
        and the work area on every run (another path's call may have moved them), then transforms."""
        lib, h = self.lib, self.handle
        if not launch.trace_call(native_function(lib.cufftSetStream), [h, stream_ptr], []):
            return False
        self._traced = True
        if self.work_bytes:
            launch.trace_call(native_function(lib.cufftSetWorkArea), [h, work_ptr], [(1, work_ptr)])
        launch.trace_call(native_function(self._exec_fn), [h, data_ptr, data_ptr], [(1, data_ptr), (2, data_ptr)])
        return True

    def __del__(self):
        h = getattr(self, "handle", None)
        if h is not None:
            try:
                self.lib.cufftDestroy(h)
            except Exception:  # interpreter shutdown
                pass
            self.handle = None
