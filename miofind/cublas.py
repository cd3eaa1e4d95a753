"""cuBLAS through ctypes: our own handles, bound to the launching stream on every call.

CuPy's cuBLAS binding refuses to run during stream capture, and its handle is shared with the rest of
the process. Solutions that call cuBLAS (im2col + GEMM, Winograd) use this module instead: one handle
per (device, thread), and per call the caller's stream, a workspace of that stream's own (made before
any capture, so that a captured GEMM never allocates), and the math and pointer modes the solution
asks for. Only the calls miofind makes are bound.
"""

from __future__ import annotations

import ctypes
import threading

from . import nvlib

_lib = None
_lock = threading.Lock()
_tls = threading.local()
WORKSPACE_BYTES = 32 << 20          # per (device, stream), as PyTorch's default on Hopper (:4096:8)
_workspaces: dict[tuple[int, int], object] = {}

# enums (cublas_api.h, library_types.h)
OP = {"N": 0, "T": 1}
POINTER_MODE_HOST = 0
DEFAULT_MATH = 0
TF32_TENSOR_OP_MATH = 3
DISALLOW_REDUCED_PRECISION_REDUCTION = 16
COMPUTE_32F = 68
COMPUTE_32F_FAST_TF32 = 77
GEMM_DEFAULT = -1
R_32F, R_16F, R_16BF = 0, 2, 14


def library():
    """The loaded libcublas with prototypes; RuntimeError naming what was tried if none loads."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        lib = nvlib.load("cublas", "cublasGemmStridedBatchedEx", "cupy_backends.cuda.libs.cublas", ("cu*", "cublas"),
                         ("libcublas.so.13", "libcublas.so.12", "libcublas.so"),
                         "install miofind[cuda13] or the nvidia-cublas wheel")
        _prototypes(lib)
        _lib = lib
        return lib


def _prototypes(lib) -> None:
    i, vp, sz, ll = ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_longlong
    protos = {
        "cublasCreate_v2": [ctypes.POINTER(vp)],
        "cublasSetStream_v2": [vp, vp],
        "cublasSetWorkspace_v2": [vp, vp, sz],
        "cublasSetMathMode": [vp, i],
        "cublasSetPointerMode_v2": [vp, i],
        "cublasGemmEx": [vp, i, i, i, i, i, vp, vp, i, i, vp, i, i, vp, vp, i, i, i, i],
        "cublasGemmStridedBatchedEx": [vp, i, i, i, i, i, vp, vp, i, i, ll, vp, i, i, ll, vp, vp, i, i, ll, i, i, i],
    }
    for name, args in protos.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, ctypes.c_int


def _check(name: str, status: int) -> None:
    if status:
        raise RuntimeError(f"{name} failed with cuBLAS status {status}")


def _workspace(dev: int, stream: int) -> int:
    ws = _workspaces.get((dev, stream))
    if ws is None:
        import cupy

        from .launch import cupy_stream

        with _lock:
            ws = _workspaces.get((dev, stream))
            if ws is None:
                with cupy_stream(stream):
                    ws = _workspaces[(dev, stream)] = cupy.empty(WORKSPACE_BYTES, dtype=cupy.uint8)
    return ws.data.ptr


def handle(stream: int, math_mode: int) -> int:
    """This thread's handle on the current device, bound to ``stream`` with that stream's workspace,
    host pointer mode and ``math_mode``."""
    import cupy

    lib = library()
    dev = cupy.cuda.runtime.getDevice()
    handles = getattr(_tls, "handles", None)
    if handles is None:
        handles = _tls.handles = {}
    st = handles.get(dev)
    if st is None:
        h = ctypes.c_void_p()
        _check("cublasCreate_v2", lib.cublasCreate_v2(ctypes.byref(h)))
        _check("cublasSetPointerMode_v2", lib.cublasSetPointerMode_v2(h, POINTER_MODE_HOST))
        st = handles[dev] = [h.value, None, None]
    h = st[0]
    if st[1] != stream:
        _check("cublasSetStream_v2", lib.cublasSetStream_v2(h, stream))
        # setting the stream resets the workspace to cuBLAS's default pool: give it the stream's own
        _check("cublasSetWorkspace_v2", lib.cublasSetWorkspace_v2(h, _workspace(dev, stream), WORKSPACE_BYTES))
        st[1] = stream
    if st[2] != math_mode:
        _check("cublasSetMathMode", lib.cublasSetMathMode(h, math_mode))
        st[2] = math_mode
    return h


def prepare_stream(stream: int) -> None:
    """Make ``stream``'s cuBLAS workspace now (before a graph capture on it)."""
    import cupy
    _workspace(cupy.cuda.runtime.getDevice(), stream)


def gemm_ex(h, ta, tb, m, n, k, alpha, a, atype, lda, b, btype, ldb, beta, c, ctype, ldc, compute, algo=GEMM_DEFAULT):
    _check("cublasGemmEx", library().cublasGemmEx(h, ta, tb, m, n, k, alpha, a, atype, lda, b, btype, ldb, beta,
                                                  c, ctype, ldc, compute, algo))


def gemm_strided_batched_ex(h, ta, tb, m, n, k, alpha, a, atype, lda, sa, b, btype, ldb, sb, beta, c, ctype, ldc,
                            sc, batch, compute, algo=GEMM_DEFAULT):
    _check("cublasGemmStridedBatchedEx", library().cublasGemmStridedBatchedEx(
        h, ta, tb, m, n, k, alpha, a, atype, lda, sa, b, btype, ldb, sb, beta, c, ctype, ldc, sc, batch, compute, algo))
