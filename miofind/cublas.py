"""cuBLAS and cuBLASLt through ctypes (the hot call through ``miofind._native`` where it is built): our own
handles, bound to the launching stream on every call.

CuPy's cuBLAS binding refuses to run during stream capture, and its handle is shared with the rest of
the process. Solutions that call cuBLAS (im2col + GEMM, Winograd) use this module instead.

``LtGemm`` is the hot path: one strided-batched GEMM shape planned once with cuBLASLt (descriptors
made and the heuristic's algorithm chosen at build time, per pointer alignment), so that a call only
writes the three data pointers into a prebuilt argument block (one per stream, with that stream's
workspace) and calls ``cublasLtMatmul``: about a third of the host time of
``cublasGemmStridedBatchedEx``, which re-runs the heuristic on every call. Where cuBLASLt offers no
algorithm for a shape, the classic API runs it (one handle per (device, thread), bound to the stream,
with that stream's workspace). Workspaces are made before any capture, so that a captured GEMM never
allocates. Only the calls miofind makes are bound.
"""

from __future__ import annotations

import ctypes
import logging
import threading

from . import nvlib
from .device import runtime
from . import launch
from .launch import native, native_function

log = logging.getLogger(__name__)

# whether a traced matmul records its kernel launches (``miofind.capture``) rather than the cuBLASLt call itself;
# the benchmarks turn it off to time both
capture_kernels = True

_lib = None
_lt = None
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
# how many of the heuristic's algorithms for a GEMM a solver config may pick from (``LtGemm``'s ``algo``)
LT_ALGOS = 8
_ALGO_CONFIG_SPLITK_NUM, _ALGO_CONFIG_REDUCTION_SCHEME = 2, 3     # cublasLtMatmulAlgoConfigAttributes_t
REDUCTIONS = (1, 2)     # split-K sums in place (output buffer, counters) or in the compute type (workspace)


def _load(stem: str, probe: str, protos: dict):
    """libcublas or libcublasLt (``stem``) loaded by ``nvlib.load``, with ``protos`` ({name: argtypes},
    each returning a cublasStatus_t) set on its functions."""
    lib = nvlib.load(stem, probe, "cupy_backends.cuda.libs.cublas", ("cu*", "cublas"),
                     (f"lib{stem}.so.13", f"lib{stem}.so.12", f"lib{stem}.so"),
                     "install miofind[cuda13] or the nvidia-cublas wheel")
    for name, args in protos.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, ctypes.c_int
    return lib


def library():
    """The loaded libcublas with prototypes; RuntimeError naming what was tried if none loads."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            i, vp, sz, ll = ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_longlong
            _lib = _load("cublas", "cublasGemmStridedBatchedEx", {
                "cublasCreate_v2": [ctypes.POINTER(vp)],
                "cublasSetStream_v2": [vp, vp],
                "cublasSetWorkspace_v2": [vp, vp, sz],
                "cublasSetMathMode": [vp, i],
                "cublasSetPointerMode_v2": [vp, i],
                "cublasGemmStridedBatchedEx": [vp, i, i, i, i, i, vp, vp, i, i, ll, vp, i, i, ll, vp, vp, i, i, ll,
                                               i, i, i],
            })
        return _lib


def _check(name: str, status: int) -> None:
    if status:
        raise RuntimeError(f"{name} failed with cuBLAS status {status}")


def _workspace(dev: int, stream: int) -> int:
    ws = _workspaces.get((dev, stream))
    if ws is None:
        from .launch import scratch

        with _lock:
            ws = _workspaces.get((dev, stream))
            if ws is None:
                ws = _workspaces[(dev, stream)] = scratch(WORKSPACE_BYTES, stream)     # (owner, address)
    return ws[1]


def handle(stream: int, math_mode: int) -> int:
    """This thread's handle on the current device, bound to ``stream`` with that stream's workspace,
    host pointer mode and ``math_mode``."""
    lib = library()
    dev = runtime().getDevice()
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


def gemm_strided_batched_ex(h, ta, tb, m, n, k, alpha, a, atype, lda, sa, b, btype, ldb, sb, beta, c, ctype, ldc,
                            sc, batch, compute, algo=GEMM_DEFAULT):
    _check("cublasGemmStridedBatchedEx", library().cublasGemmStridedBatchedEx(
        h, ta, tb, m, n, k, alpha, a, atype, lda, sa, b, btype, ldb, sb, beta, c, ctype, ldc, sc, batch, compute, algo))


# -- cuBLASLt ------------------------------------------------------------------------------------

# cublasLt.h enums
_DESC_TRANSA, _DESC_TRANSB = 3, 4
_LAYOUT_BATCH_COUNT, _LAYOUT_STRIDED_BATCH_OFFSET = 5, 6
_PREF_MAX_WORKSPACE_BYTES, _PREF_REDUCTION_SCHEME_MASK = 1, 3
_PREF_MIN_ALIGNMENT = (5, 6, 7, 8)               # A, B, C, D bytes
_REDUCTION_NOT_IN_OUTPUT_TYPE = 1 | 2            # in place or in the compute type, never the 16-bit output type


class _HeuristicResult(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspaceSize", ctypes.c_size_t), ("state", ctypes.c_int),
                ("wavesCount", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


def lt_library():
    """The loaded libcublasLt with prototypes; RuntimeError naming what was tried if none loads."""
    global _lt
    if _lt is not None:
        return _lt
    library()                   # libcublas maps the libcublasLt it was built with
    with _lock:
        if _lt is not None:
            return _lt
        vp, i, sz, u64, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_int64
        _lt = _load("cublasLt", "cublasLtMatmul", {
            "cublasLtCreate": [ctypes.POINTER(vp)],
            "cublasLtMatmulDescCreate": [ctypes.POINTER(vp), i, i],
            "cublasLtMatmulDescSetAttribute": [vp, i, vp, sz],
            "cublasLtMatrixLayoutCreate": [ctypes.POINTER(vp), i, u64, u64, i64],
            "cublasLtMatrixLayoutSetAttribute": [vp, i, vp, sz],
            "cublasLtMatmulPreferenceCreate": [ctypes.POINTER(vp)],
            "cublasLtMatmulPreferenceSetAttribute": [vp, i, vp, sz],
            "cublasLtMatmulPreferenceDestroy": [vp],
            "cublasLtMatmulAlgoGetHeuristic": [vp, vp, vp, vp, vp, vp, vp, i, ctypes.POINTER(_HeuristicResult),
                                               ctypes.POINTER(i)],
            "cublasLtMatmul": [vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, sz, vp],
            "cublasLtMatmulAlgoConfigSetAttribute": [vp, i, vp, sz],
            "cublasLtMatmulAlgoCheck": [vp, vp, vp, vp, vp, vp, vp, ctypes.POINTER(_HeuristicResult)],
        })
        _lt.cublasLtGetVersion.argtypes = []
        _lt.cublasLtGetVersion.restype = sz
        return _lt


_lt_version: list = []
_version_lock = threading.Lock()
_version_thread: list = []


def lt_version() -> str | None:
    """cuBLASLt's version as a string (e.g. "130100"), None where no libcublasLt loads. Needs no GPU. It joins
    the trust key of the solvers whose GEMMs cuBLASLt runs (``miofind.solvers.gemm_base``, Winograd's)."""
    if not _lt_version:
        t = _version_thread[0] if _version_thread else None
        if t is not None and t is not threading.current_thread():
            t.join()        # the load releases the GIL: a wait, not work
        with _version_lock:
            if not _lt_version:
                try:
                    v = str(int(lt_library().cublasLtGetVersion()))
                except Exception:       # noqa: BLE001  no library here: the key says "?"
                    v = None
                _lt_version.append(v)
    return _lt_version[0]


def library_versions() -> dict[str, str | None]:
    """``{"cublaslt": lt_version()}``: what joins the trust key of a solver whose GEMMs cuBLASLt runs."""
    return {"cublaslt": lt_version()}


def prefetch_version() -> None:
    """Start reading ``lt_version()`` in a background thread, once per process, so that a find's trust keys wait
    for little of libcublasLt's load (as ``fft_cufft.prefetch_version`` does for cuFFT's)."""
    if _lt_version or _version_thread:
        return
    with _version_lock:
        if _version_thread:
            return
        t = threading.Thread(target=lt_version, name="miofind-cublaslt-version", daemon=True)
        _version_thread.append(t)
        t.start()       # under the lock: a caller that finds the thread may join it


class LtAlgoMissing(RuntimeError):
    """The heuristic offers fewer algorithms for a GEMM than a config's ``algo`` asks for, or cuBLASLt refuses the
    config's split of the reduction: that config does not run (it scores as a failure, as a failed build)."""


_lt_handles: dict[int, int] = {}


def _lt_handle(dev: int) -> int:
    h = _lt_handles.get(dev)
    if h is None:
        lib = lt_library()
        with _lock:
            h = _lt_handles.get(dev)
            if h is None:
                p = ctypes.c_void_p()
                _check("cublasLtCreate", lib.cublasLtCreate(ctypes.byref(p)))
                h = _lt_handles[dev] = p.value
    return h


_setup: threading.Thread | None = None
_lt_ready = False       # a heuristic query has returned in this process (or the set-up thread ended): no bridge


def prefetch_lt(kinds=()) -> None:
    """Start cuBLASLt's set-up for this process on the current device in a background thread, once. The first
    heuristic query of a process costs about 100 ms of the library's own set-up whatever the shape (a kept
    algorithm does not avoid it: ``bench/results/session-hostaware/``); its ctypes calls release the GIL, so a
    find that will plan a cuBLASLt GEMM starts it first and lists its other candidates' configs (cuDNN's
    planning) meanwhile. A later ``LtGemm`` finds the library set up, or waits inside cuBLASLt for the rest.
    ``kinds``: the (A/B type, C type, compute type) triples of the GEMMs the caller will plan (``gemm_kinds``), each
    queried once per process in a thread after the set-up (``query_kinds``).
    Never raises: a failure here is met again, and reported, by the GEMM that needs the library."""
    if _setup is not None or _lt_ready:
        if kinds:
            query_kinds(kinds)
        return
    try:
        dev = runtime().getDevice()
    except Exception:
        return
    start_setup(dev)
    if kinds:
        query_kinds(kinds, dev)


def gemm_kinds(dtype: str, math: str) -> tuple[tuple[int, int, int], ...]:
    """The (A/B type, C type, compute type) triples of the cuBLASLt GEMMs that the GEMM and Winograd solvers plan
    for a problem of data type ``dtype`` ("FP32", "FP16", "BF16") and ``math`` ("strict", "tf32"), as
    ``solvers/gemm_base.Blas`` makes them: C in the data type, and for 16-bit data also in float."""
    io = {"FP32": R_32F, "FP16": R_16F, "BF16": R_16BF}.get(dtype)
    if io is None:
        return ()
    if io == R_32F:
        return ((R_32F, R_32F, COMPUTE_32F_FAST_TF32 if math == "tf32" else COMPUTE_32F),)
    return ((io, io, COMPUTE_32F), (io, R_32F, COMPUTE_32F))


# The first heuristic query of another type or compute type costs more again after the set-up's FP32 query: on an
# H200, FP16 94-120 ms, BF16 70-101 ms, TF32 18-83 ms, then 3-14 ms in the first call's module load
# (bench/results/session-nov28g/call5_lt_probe/probe.txt). A find of a 16-bit problem whose GEMM candidate was
# verified last still waited 104-198 ms in it (session-nov28g/call3_cold: a fresh process's find)
_kinds_queried: set[tuple[int, int, int]] = set()
_kinds_ready: set[tuple[int, int, int]] = set()     # kinds whose first query returned (or failed): no bridge for them
_kind_threads: list[threading.Thread] = []


def query_kinds(kinds, dev: int | None = None) -> None:
    """Make the first heuristic query of each GEMM kind in ``kinds`` not yet asked for in this process, in a
    background thread that first waits for the set-up thread. Never raises."""
    with _lock:
        new = tuple(k for k in dict.fromkeys(kinds) if k not in _kinds_queried)
        _kinds_queried.update(new)
    if not new:
        return
    try:
        dev = runtime().getDevice() if dev is None else dev
        t = threading.Thread(target=_query_kinds, args=(dev, new), name="miofind-cublaslt-kinds", daemon=True)
        _join_at_exit()
        with _lock:
            _kind_threads.append(t)
        t.start()
    except Exception:   # no thread (interpreter shutdown): each GEMM's own first query pays it, none on the bridge
        _kinds_ready.update(new)


def _query_kinds(dev: int, kinds) -> None:
    try:
        setup = _setup
        if setup is not None and setup is not threading.current_thread():
            setup.join()
        from .nvlib import relaxed_capture_mode

        relaxed_capture_mode()
        runtime().setDevice(dev)
        for kind in kinds:
            ab, c, compute = kind
            try:
                g = LtGemm(OP["N"], OP["N"], 64, 64, 64, ab, 64, 0, 64, 0, c, 64, 0, 1, compute, 0,
                           ab != R_32F and c != R_32F)
                g._plan((256, 256, 256))
            except Exception:   # noqa: BLE001  the GEMM that needs this kind meets it again and reports it
                pass
            finally:
                _kinds_ready.add(kind)
    except Exception:   # noqa: BLE001
        pass
    finally:
        _kinds_ready.update(kinds)      # never a GEMM left on the bridge for good


def start_setup(dev: int) -> None:
    """Start the set-up thread on device ``dev`` unless it was started or a query already returned."""
    global _setup, _lt_ready
    if _setup is not None or _lt_ready:
        return
    with _lock:
        if _setup is not None:
            return
        _setup = threading.Thread(target=_set_up_lt, args=(dev,), name="miofind-cublaslt-setup", daemon=True)
    try:
        _join_at_exit()
        _setup.start()
    except Exception:   # no thread (interpreter shutdown): calls plan cuBLASLt themselves, none waits on the bridge
        _lt_ready = True


_exit_hook: list = []


def _join_at_exit() -> None:
    """Register ``_join_setup`` to run at exit, once per process."""
    with _lock:
        if not _exit_hook:
            import atexit

            atexit.register(_join_setup)
            _exit_hook.append(True)


def all_gemm_kinds() -> tuple[tuple[int, int, int], ...]:
    """Every GEMM kind the GEMM and Winograd solvers plan: ``gemm_kinds`` of each data type and math."""
    return tuple(dict.fromkeys(k for dtype in ("FP32", "FP16", "BF16") for math in ("strict", "tf32")
                               for k in gemm_kinds(dtype, math)))


def settle(timeout: float = 60.0) -> None:
    """Set cuBLASLt up now and make its first query of every GEMM kind (``all_gemm_kinds``), in their threads, and
    wait for them: from here every matmul runs cuBLASLt itself, never the bridge GEMM (``miofind.lt_bridge``), whatever
    its data type. Benchmarks of steady-state calls start with this."""
    prefetch_lt(all_gemm_kinds())
    _join_threads(timeout)


def _join_threads(timeout: float) -> None:
    """Wait up to ``timeout`` s for each of the set-up thread and the kinds threads (``query_kinds``) still running."""
    with _lock:
        threads = [_setup, *_kind_threads]
    for t in threads:
        if t is not None and t.is_alive():
            t.join(timeout)


def _join_setup() -> None:
    """At exit: a process must not tear CUDA down while the set-up thread (or a kinds thread, ``query_kinds``) is
    inside cuBLASLt (a crash at exit)."""
    _join_threads(30)


def _set_up_lt(dev: int) -> None:
    global _lt_ready
    try:
        from .nvlib import relaxed_capture_mode

        relaxed_capture_mode()
        runtime().setDevice(dev)
        g = LtGemm(OP["N"], OP["N"], 64, 64, 64, R_32F, 64, 0, 64, 0, R_32F, 64, 0, 1, COMPUTE_32F, 0, False)
        g._plan((256, 256, 256))
    except Exception:
        pass
    finally:
        _kinds_ready.add((R_32F, R_32F, COMPUTE_32F))
        _lt_ready = True


def _set(setter, desc, attr: int, value, ctype) -> None:
    v = ctype(value)
    _check(setter.__name__, setter(desc, attr, ctypes.byref(v), ctypes.sizeof(v)))


def _align_of(p: int) -> int:
    """The alignment class of a device address: 256, 16, 8, 4 or 2 bytes."""
    for a in (256, 16, 8, 4):
        if p % a == 0:
            return a
    return 2


class LtGemm:
    """One column-major GEMM shape, D = alpha op(A) op(B) + beta C with C = D, ``batch`` times at element
    strides (sa, sb, sc), planned with cuBLASLt on the current device.

    ``ab_type``/``c_type`` are cudaDataType values, ``compute`` a cublasComputeType; alpha = 1 and beta
    is 0 or 1 (host scalars in float). ``no_reduced_precision`` excludes split-K reductions in a 16-bit
    output type. ``call(stream, a, b, c)`` runs it: the algorithm is the heuristic's first for the
    alignment of the pointers given (planned on first use of each alignment class), the workspace that
    stream's own; where cuBLASLt offers none, the classic cublasGemmStridedBatchedEx runs instead.
    ``algo`` > 0 takes the heuristic's result of that place (0-based) among its first ``LT_ALGOS`` instead
    (what a tuned GEMM config asks for); where the heuristic offers no such result the call raises
    ``LtAlgoMissing``, and never runs another algorithm in its place. ``splitk`` (with ``reduction``, one of
    ``REDUCTIONS`` where ``splitk`` > 1) sets that result's split of the reduction dimension instead of the
    heuristic's, where ``cublasLtMatmulAlgoCheck`` accepts it within the workspace (else ``LtAlgoMissing``).
    """

    def __init__(self, ta: int, tb: int, m: int, n: int, k: int, ab_type: int, lda: int, sa: int, ldb: int, sb: int,
                 c_type: int, ldc: int, sc: int, batch: int, compute: int, beta: int, no_reduced_precision: bool,
                 math_mode: int = DEFAULT_MATH, algo: int = 0, splitk: int | None = None,
                 reduction: int = 0) -> None:
        import numpy as np

        if not 0 <= algo < LT_ALGOS:
            raise ValueError(f"algo={algo}: expected 0 to {LT_ALGOS - 1}")
        if splitk is not None and not (splitk == 1 and reduction == 0 or splitk > 1 and reduction in REDUCTIONS):
            raise ValueError(f"splitk={splitk}, reduction={reduction}: expected 1 with 0, or more with one of {REDUCTIONS}")
        self.algo, self.splitk, self.reduction = algo, splitk, reduction

        self.shape = (ta, tb, m, n, k, ab_type, lda, sa, ldb, sb, c_type, ldc, sc, batch, compute)
        self.kind = (ab_type, c_type, compute)      # what cuBLASLt's first query of a type depends on (``query_kinds``)
        self.math_mode = math_mode
        self.no_reduced_precision = no_reduced_precision
        self.dev = runtime().getDevice()
        self.lib = lt_library()
        self.h = _lt_handle(self.dev)
        self.beta = beta
        self._br = None         # the bridge GEMM (``miofind.lt_bridge.Bridge``), made at the first unplanned call
        self._scalars = np.array([1.0, float(beta)], np.float32)     # alpha, beta (kept alive here)
        self._alpha = self._scalars.ctypes.data
        self._beta = self._alpha + 4
        lib, vp = self.lib, ctypes.c_void_p
        desc = vp()
        _check("cublasLtMatmulDescCreate", lib.cublasLtMatmulDescCreate(ctypes.byref(desc), compute, R_32F))
        _set(lib.cublasLtMatmulDescSetAttribute, desc, _DESC_TRANSA, ta, ctypes.c_int32)
        _set(lib.cublasLtMatmulDescSetAttribute, desc, _DESC_TRANSB, tb, ctypes.c_int32)
        self.desc = desc.value
        a_rows, a_cols = (m, k) if ta == OP["N"] else (k, m)
        b_rows, b_cols = (k, n) if tb == OP["N"] else (n, k)
        self.adesc = self._layout(ab_type, a_rows, a_cols, lda, batch, sa)
        self.bdesc = self._layout(ab_type, b_rows, b_cols, ldb, batch, sb)
        self.cdesc = self._layout(c_type, m, n, ldc, batch, sc)
        self._plans: dict[tuple[int, int, int], tuple | None] = {}
        self._args: dict[tuple, list] = {}
        self._call_lock = threading.Lock()

    def _layout(self, dtype: int, rows: int, cols: int, ld: int, batch: int, stride: int) -> int:
        lib = self.lib
        lay = ctypes.c_void_p()
        _check("cublasLtMatrixLayoutCreate", lib.cublasLtMatrixLayoutCreate(ctypes.byref(lay), dtype, rows, cols, ld))
        if batch > 1:
            _set(lib.cublasLtMatrixLayoutSetAttribute, lay, _LAYOUT_BATCH_COUNT, batch, ctypes.c_int32)
            _set(lib.cublasLtMatrixLayoutSetAttribute, lay, _LAYOUT_STRIDED_BATCH_OFFSET, stride, ctypes.c_int64)
        return lay.value

    def _plan(self, align: tuple[int, int, int]):
        """(algo buffer, workspace bytes it needs) for pointers of these alignments, or None."""
        global _lt_ready
        lib = self.lib
        pref = ctypes.c_void_p()
        _check("cublasLtMatmulPreferenceCreate", lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)))
        try:
            _set(lib.cublasLtMatmulPreferenceSetAttribute, pref, _PREF_MAX_WORKSPACE_BYTES, WORKSPACE_BYTES,
                 ctypes.c_uint64)
            if self.no_reduced_precision:
                _set(lib.cublasLtMatmulPreferenceSetAttribute, pref, _PREF_REDUCTION_SCHEME_MASK,
                     _REDUCTION_NOT_IN_OUTPUT_TYPE, ctypes.c_uint32)
            for attr, a in zip(_PREF_MIN_ALIGNMENT, (*align, align[2])):
                _set(lib.cublasLtMatmulPreferenceSetAttribute, pref, attr, a, ctypes.c_uint32)
            chosen = self.algo or self.splitk is not None     # a config's algorithm, not the heuristic's first
            asked = LT_ALGOS if chosen else 1
            results, count = (_HeuristicResult * asked)(), ctypes.c_int(0)
            st = lib.cublasLtMatmulAlgoGetHeuristic(self.h, self.desc, self.adesc, self.bdesc, self.cdesc, self.cdesc,
                                                    pref, asked, results, ctypes.byref(count))
            _lt_ready = True
            _kinds_ready.add(self.kind)
        finally:
            lib.cublasLtMatmulPreferenceDestroy(pref)
        if chosen and (st or count.value <= self.algo or results[self.algo].state):
            raise LtAlgoMissing(f"cuBLASLt's heuristic offers {count.value if not st else 0} algorithm(s) for GEMM "
                                f"{self.shape} (status {st}); config LT={self.algo} asks for its number {self.algo + 1}")
        res = results[self.algo]
        if self.splitk is not None:
            return self._split(res)
        if st or count.value < 1 or res.state:
            return None
        algo = (ctypes.c_uint64 * 8)(*res.algo)
        return algo, int(res.workspaceSize)

    def _split(self, res):
        """(algo buffer, workspace bytes) of heuristic result ``res`` with ``splitk`` and ``reduction`` set, as
        ``cublasLtMatmulAlgoCheck`` accepts it; LtAlgoMissing where it does not, or needs more workspace."""
        lib, algo = self.lib, (ctypes.c_uint64 * 8)(*res.algo)
        what = f"place {self.algo} with split-K {self.splitk} (reduction {self.reduction})"
        for attr, v in ((_ALGO_CONFIG_SPLITK_NUM, ctypes.c_int32(self.splitk)),
                        (_ALGO_CONFIG_REDUCTION_SCHEME, ctypes.c_uint32(self.reduction))):
            if lib.cublasLtMatmulAlgoConfigSetAttribute(algo, attr, ctypes.byref(v), ctypes.sizeof(v)):
                raise LtAlgoMissing(f"cuBLASLt's algorithm for GEMM {self.shape} takes no {what}")
        chk = _HeuristicResult()
        st = lib.cublasLtMatmulAlgoCheck(self.h, self.desc, self.adesc, self.bdesc, self.cdesc, self.cdesc, algo,
                                         ctypes.byref(chk))
        if st or chk.state or chk.workspaceSize > WORKSPACE_BYTES:
            raise LtAlgoMissing(f"cuBLASLt does not run GEMM {self.shape} as {what} (status {st or chk.state}, "
                                f"workspace {chk.workspaceSize} of {WORKSPACE_BYTES} bytes)")
        return algo, int(chk.workspaceSize)

    def _block(self, stream: int, align: tuple[int, int, int]):
        """The prebuilt argument list for (stream, alignment): [handle, desc, alpha, A, Adesc, B, Bdesc,
        beta, C, Cdesc, D, Ddesc, algo, workspace, workspace bytes, stream] as ctypes values, or None."""
        plan = self._plans.get(align, False)
        if plan is False:
            plan = self._plans[align] = self._plan(align)
        if plan is None:
            return None
        algo, need = plan
        ws = _workspace(self.dev, stream) if need else 0
        vp = ctypes.c_void_p
        a, b, c = vp(0), vp(0), vp(0)
        block = [vp(self.h), vp(self.desc), vp(self._alpha), a, vp(self.adesc), b, vp(self.bdesc), vp(self._beta),
                 c, vp(self.cdesc), c, vp(self.cdesc), ctypes.cast(algo, vp), vp(ws),
                 ctypes.c_size_t(need if ws else 0), vp(stream)]
        fast = None
        nat = native()
        if nat is not None:     # the same argument list, packed in C: a call writes A, B, C and D
            values = [v.value or 0 for v in block]
            fast = nat.caller(native_function(self.lib.cublasLtMatmul), values, (3, 5, 8, 10))
        return block, a, b, c, algo, fast

    def call(self, stream: int, a: int, b: int, c: int) -> None:
        # pointers from a caching allocator are 256-byte aligned: that case keys on the stream alone
        key = stream if not (a | b | c) & 255 else (stream, _align_of(a), _align_of(b), _align_of(c))
        blk = self._args.get(key)
        if blk is None:
            if (not _lt_ready or self.kind not in _kinds_ready) and self._bridging(stream):
                t = launch._tracer
                if t is not None and t.mine():
                    raise launch.NotYet("cuBLASLt sets itself up in this process (the bridge GEMM runs meanwhile)")
                return self._br(stream, a, b, c)
            with self._call_lock:
                blk = self._args[key] = self._block(stream, (256, 256, 256) if key is stream else key[1:])
        t = launch._tracer
        if t is not None and t.mine():      # a recipe's trace (``miofind.launch.trace``): the call recorded, not made
            if blk is None:
                raise launch.NotTraceable("a GEMM without a cuBLASLt plan (the classic cuBLAS call)")
            values = [v.value or 0 for v in blk[0]]
            if capture_kernels and self._trace_kernels(values, a, b, c):
                return
            launch.trace_call(native_function(self.lib.cublasLtMatmul), values, ((3, a), (5, b), (8, c), (10, c)))
            return
        if blk is None:
            return self._classic(stream, a, b, c)
        block, pa, pb, pc, _, fast = blk
        if fast is not None:
            st = fast(a, b, c, c)
        else:
            # the argument values are read when the call starts: the lock keeps another thread's pointers out
            with self._call_lock:
                pa.value, pb.value, pc.value = a, b, c
                st = self.lib.cublasLtMatmul(*block)
        if st:
            raise RuntimeError(f"cublasLtMatmul failed with cuBLAS status {st}")

    def _bridging(self, stream: int) -> bool:
        """Whether this unplanned call runs on the bridge GEMM (``miofind.lt_bridge``), starting cuBLASLt's set-up,
        and its first query of this GEMM's kind, in the background if they are not under way."""
        from . import env, lt_bridge

        if lt_bridge.measuring() or not env.lt_bridge() or lt_bridge.vetoed():
            return False
        if runtime().streamIsCapturing(stream):     # a capture keeps cuBLASLt's kernels
            return False
        br = self._br
        if br is None:
            br = self._br = lt_bridge.Bridge(self.shape, self.beta)
        if not br.ok:
            return False
        start_setup(self.dev)
        query_kinds((self.kind,), self.dev)
        return not _lt_ready or self.kind not in _kinds_ready

    def _trace_kernels(self, values: list, a: int, b: int, c: int) -> bool:
        """Record the matmul's kernel launches in the running trace (``miofind.capture``: read from a graph capture
        of this call on the traced pointers, with this call's plan and workspace), so that a replay launches them
        without cuBLASLt's host work; False (nothing recorded) where they cannot be replayed."""
        from . import capture

        lib = self.lib

        def issue(stream: int, ptrs: tuple) -> None:
            v = list(values)
            v[3], v[5], v[8], v[10], v[15] = ptrs[0], ptrs[1], ptrs[2], ptrs[2], stream
            args = [ctypes.c_void_p(x) for x in v]
            args[14] = ctypes.c_size_t(v[14])
            st = lib.cublasLtMatmul(*args)
            if st:
                raise launch.NotTraceable(f"cublasLtMatmul under capture: cuBLAS status {st}")
        try:
            steps = capture.launches(issue, (a, b, c), self.dev)
        except launch.NotTraceable as e:
            log.info("cuBLASLt matmul %s: its kernels are not replayed (%s); the call is", self.shape, e)
            return False
        for st in steps:
            launch.trace_raw(*st)
        return True

    def _classic(self, stream: int, a: int, b: int, c: int) -> None:
        ta, tb, m, n, k, ab, lda, sa, ldb, sb, ct, ldc, sc, batch, compute = self.shape
        mode = self.math_mode | (DISALLOW_REDUCED_PRECISION_REDUCTION if self.no_reduced_precision else 0)
        h = handle(stream, mode)
        gemm_strided_batched_ex(h, ta, tb, m, n, k, self._alpha, a, ab, lda, sa, b, ab, ldb, sb, self._beta,
                                c, ct, ldc, sc, batch, compute)
