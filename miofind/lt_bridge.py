"""The bridge GEMM: a cuBLASLt matmul asked for before cuBLASLt is set up in the process.

cuBLASLt's first heuristic query (or first matmul) in a process costs about 100 ms of the library's own set-up,
whatever the shape (``bench/results/first-iter-diag/``). A process whose first GEMM is the run of a solution the
FindDB answered (im2col GEMM, Winograd) would wait that long on its first call. Instead, while a background thread
sets cuBLASLt up (``cublas.start_setup``), ``cublas.LtGemm`` runs its matmuls with ``kernels_src/gemm_bridge.cu``,
a plain tiled GEMM of miofind's own (float sums), and goes to cuBLASLt from the first call after the set-up.

The bridge runs only where all of these hold: ``MIOFIND_LT_BRIDGE`` is on; no cuBLASLt query has returned in the
process yet; the calling thread is not measuring (``direct()``: a find's, the tuner's or the specialised builds'
timing and verification always run cuBLASLt itself); the stream is not capturing a graph (a capture keeps
cuBLASLt's kernels); the matmul's types and sizes are ones the kernel takes; and the kernel's binary is already in
the kernel cache (it is then loaded, not compiled; where it is missing, a background process compiles it for the
next process and this one waits for cuBLASLt).
"""

from __future__ import annotations

import contextlib
import logging
import threading

import numpy as np

from .solver import KernelInfo

log = logging.getLogger("miofind.lt_bridge")

SOURCE = "gemm_bridge.cu"
TILE, THREADS = 64, 256
MAX_GRID_YZ = 65535

# (A and B type, C type) as cudaDataType values -> kernel name
_R_32F, _R_16F, _R_16BF = 0, 2, 14
KERNELS = {(_R_32F, _R_32F): "gemm_bridge_f32_f32", (_R_16F, _R_16F): "gemm_bridge_f16_f16",
           (_R_16F, _R_32F): "gemm_bridge_f16_f32", (_R_16BF, _R_16BF): "gemm_bridge_bf16_bf16",
           (_R_16BF, _R_32F): "gemm_bridge_bf16_f32"}

_local = threading.local()
_vetoes: list = []      # callables; any true: no bridge (``veto``)
_compile_started = False
_lock = threading.Lock()
calls = 0           # matmuls the bridge ran in this process (tests and benchmarks read it)


def kernel_info(name: str = "gemm_bridge_f32_f32") -> KernelInfo:
    """One kernel of the bridge's module (all five share one cubin)."""
    return KernelInfo(SOURCE, name, (1, 1, 1), (THREADS, 1, 1))


def kernel_infos() -> list[KernelInfo]:
    return [kernel_info(n) for n in KERNELS.values()]


@contextlib.contextmanager
def direct():
    """Within: this thread's cuBLASLt matmuls run cuBLASLt itself (waiting for its set-up), never the bridge."""
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    try:
        yield
    finally:
        _local.depth = depth


def measuring() -> bool:
    return bool(getattr(_local, "depth", 0))


def veto(check) -> None:
    """Register ``check()``: while it returns true, no matmul takes the bridge (miofind.torch registers PyTorch's
    deterministic settings: which calls take the bridge depends on the set-up thread's timing, and the bridge's
    sums differ from cuBLASLt's in the last bits, so first iterations would not repeat run to run)."""
    if check not in _vetoes:
        _vetoes.append(check)


def vetoed() -> bool:
    return any(check() for check in _vetoes)


def _compile_for_next_process() -> None:
    """Compile the bridge's module into the kernel cache for the processes after this one, once per process, in a
    detached child process at the compile pool's lower priority: this process goes on without it (CuPy's NVRTC
    binding would hold its GIL), and a short-lived process's exit does not cut the compile."""
    global _compile_started
    with _lock:
        if _compile_started:
            return
        _compile_started = True
    try:
        import subprocess
        import sys

        from . import compile as C
        from .env import child_env

        arch = C._device_arch()
        proc = subprocess.Popen([sys.executable, "-c",
                                 f"from miofind.lt_bridge import _compile_here; _compile_here({arch!r})"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=child_env(), start_new_session=True)
        threading.Thread(target=proc.wait, name="miofind-bridge-compile", daemon=True).start()    # reaped
    except Exception as e:      # this process waits for cuBLASLt, as it would without the bridge
        log.info("bridge GEMM: no background compile (%s)", e)


def _compile_here(arch: str) -> None:
    """The detached child's work: the module's cubin for ``arch`` into the kernel cache (no GPU needed). One
    compile at a time per cache (a lock file): processes started together (the ranks of a job) wait for the first
    and then find the cubin cached."""
    from . import compile as C
    from .env import compile_nice
    from .fileio import exclusive

    C.lower_priority(compile_nice())
    with exclusive(C.private_cache_dir() / "gemm_bridge.lock"):
        C.cubin_for(kernel_info(), arch)


class Bridge:
    """The bridge launch of one ``LtGemm`` shape, or unusable (``ok`` False: a type pair or a size the kernel does
    not take, or its binary is not cached)."""

    def __init__(self, shape: tuple, beta: int) -> None:
        ta, tb, m, n, k, ab, lda, sa, ldb, sb, ct, ldc, sc, batch, _compute = shape
        self.ok = False
        self.launch = None
        name = KERNELS.get((ab, ct))
        gy = -(-n // TILE)
        if name is None or gy > MAX_GRID_YZ or max(m, n, k, batch) >= 2 ** 31 or min(m, n, k, batch) < 1:
            return
        from . import compile as C

        ki = kernel_info(name)
        try:
            if not C.is_compiled(ki):
                _compile_for_next_process()
                return
            fn = C.compile_kernel(ki)
        except Exception as e:
            log.info("bridge GEMM: not usable here (%s)", e)
            return
        from .launch import PTR, Launch

        i32, i64 = np.int32, np.int64
        grid = (-(-m // TILE), gy, min(batch, MAX_GRID_YZ))
        self.launch = Launch(fn, grid, (THREADS, 1, 1),
                             (PTR, PTR, PTR, i32(ta), i32(tb), i32(m), i32(n), i32(k), i64(lda), i64(sa), i64(ldb),
                              i64(sb), i64(ldc), i64(sc), i32(batch), i32(1 if beta else 0)))
        self.ok = True

    def __call__(self, stream: int, a: int, b: int, c: int) -> None:
        global calls
        self.launch(stream, a, b, c)
        calls += 1

