"""Shared body of the im2col + GEMM solvers (Caffe2's design; kernels_src/gemm_im2col.cu).

Our im2col kernel lays the input out as a column matrix, cuBLAS multiplies it with the weights
(cuBLASLt strided-batched matmuls planned once per shape, ``miofind.cublas.LtGemm``, on device
pointers, FP32 accumulation for every type, TF32 tensor cores only for ``math == "tf32"``), and backward data
gathers the column gradients back with a col2im that sums, in a fixed order, every column entry
of each dx element (no atomics). Groups are strided batches. 1x1 stride-1 pad-0 problems skip
im2col: the input already is the column matrix.

Tunable: config ``{"LT": i}`` runs each GEMM with the i-th algorithm (0-based) of the cuBLASLt heuristic's
first ``miofind.cublas.LT_ALGOS`` for it (as PyTorch's TunableOp times the algorithms rocBLAS and hipBLASLt
list); the default (None or ``{"LT": 0}``), which a find measures unless the PerfDB holds a tuned config, takes its
first. Backward weights' configs may also set the split of the reduction (``{"LT": i, "SK": k, "RED": r}``). The
heuristic's list, as the algorithm it puts first, is the same only for the same library on the same device, so
cuBLASLt's version joins the trust key (``library_versions``): records of another version are measured again, as
cuDNN's and cuFFT's are.

The column buffers are the workspace. The batch is processed in chunks of ``nb`` images so that
the workspace stays within ``WORKSPACE_CAP`` bytes; ``workspace_bytes`` reports the chunked size
(at least one image's buffers, which is the one case that may exceed the cap).
All arithmetic is deterministic: cuBLAS GEMMs are run-to-run reproducible on one GPU and the
batch reductions of backward weights run in a fixed order.
"""

from __future__ import annotations

import math
import threading


from miofind.launch import Launcher, mark_traceable
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES

SOURCE = "gemm_im2col.cu"
LAYOUTS = ("NCHW", "NHWC", "NCDHW", "NDHWC")
WORKSPACE_CAP = 1 << 30          # bytes of column buffers per chunk (a soft cap: one image may exceed it)
MAX_IMAGE_WORKSPACE = 8 << 30    # one image's buffers beyond this are rejected (no spatial chunking)
ALIGN = 256                      # workspace sub-buffers start on 256-byte boundaries
BLOCK = 256
MAX_BLOCKS = 132 * 16            # grid-stride kernels: 16 blocks of 256 threads per H100 SM
INT32_SAFE = 2**31 - 2**22       # 32-bit indices below this (grid-stride increments cannot overflow)
MAX_BATCH = 65535                # cuBLAS batchCount per call
# miofind.cublas's LT_ALGOS and REDUCTIONS (not imported with the solvers: a solver listing need not import cublas)
LT_ALGOS = 8
REDUCTIONS = (1, 2)
# backward weights' tuning space also sets the split of the reduction (the pixels) on the heuristic's first
# SPLIT_PLACES algorithms: SK ways, summed in place (RED 1) or in float in the workspace (RED 2), as cuBLASLt's
# algorithm configuration allows
SPLIT_PLACES = 3
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
WRW_MODES = ("batched", "concat")

# cuBLAS / CUDA enumerations (used when CuPy's module does not export one)


def is_1x1_s1(p: ProblemDescription) -> bool:
    """A 1x1 filter with pad 0 and stride 1 (dilation is then irrelevant): no im2col needed."""
    return all(f == 1 for f in p.filter_size) and not any(p.pads) and all(s == 1 for s in p.strides)


class Geom:
    """Sizes of a forward-view problem, flattened: P output pixels, Q input pixels, T filter taps."""

    def __init__(self, p: ProblemDescription):
        self.p = p
        self.n, self.c, self.k, self.g = p.n, p.c, p.k, p.groups
        self.cg, self.kg = p.c // p.groups, p.k // p.groups
        self.cl = p.layouts[0] in ("NHWC", "NDHWC")
        self.T = math.prod(p.filter_size)
        self.P = math.prod(p.out_size)
        self.Q = math.prod(p.in_size)
        self.E = 4 if p.dtype == "FP32" else 2
        self.ct, self.cgt = self.c * self.T, self.cg * self.T
        self.one = is_1x1_s1(p)

    def vec(self) -> int:
        """Elements per 16-byte (or narrower) move: along channels (NHWC) or pixels (NCHW)."""
        extent = self.cg if self.cl else self.P
        v = 16 // self.E
        while v > 1 and extent % v:
            v //= 2
        return v

    def macros(self, wide: bool, concat: bool = False) -> dict:
        p = self.p
        pad3 = lambda t, fill: ((fill,) * (3 - len(t))) + tuple(t)  # noqa: E731  (D first)
        di, hi, wi = pad3(p.in_size, 1)
        do, ho, wo = pad3(p.out_size, 1)
        z, y, x = pad3(p.filter_size, 1)
        pd, ph, pw = pad3(p.pads, 0)
        sd, sh, sw = pad3(p.strides, 1)
        dd, dh, dw = pad3(p.dilations, 1)
        return {
            "DATA_T": CUDA_TYPES[p.dtype], "INDEX_T": "long long" if wide else "int", "ELEM_BYTES": self.E,
            "VEC": self.vec(), "CHANNELS_LAST": int(self.cl), "COL_CONCAT": int(concat),
            "C_": self.c, "K_": self.k, "G_": self.g, "DI": di, "HI": hi, "WI": wi, "DO": do, "HO": ho, "WO": wo,
            "Z_": z, "Y_": y, "X_": x, "PD": pd, "PH": ph, "PW": pw, "SD": sd, "SH": sh, "SW": sw,
            "DD": dd, "DH": dh, "DW": dw,
        }


def _grid(total: int) -> tuple[int, int, int]:
    return (max(1, min(ceil_div(total, BLOCK), MAX_BLOCKS)), 1, 1)


def _align(nbytes: int) -> int:
    return ceil_div(nbytes, ALIGN) * ALIGN


class GemmPlan:
    """How a problem is cut into batch chunks and what the workspace holds.

    ``per_image`` maps buffer name -> bytes per image of a chunk; ``fixed_if_chunked`` maps
    name -> bytes needed only when there is more than one chunk (the float accumulator of chunked
    16-bit backward weights). Chunks hold ``nb`` images, the fewest that keep the chunk count
    ``cap`` allows; every sub-buffer starts 256-byte aligned, and ``bytes`` carries 256 bytes of
    slack so that a caller's unaligned workspace view can be realigned.
    """

    def __init__(self, n: int, per_image: dict, cap: int, fixed_if_chunked: dict | None = None):
        per = sum(per_image.values())
        nb = n if per == 0 else max(1, min(n, cap // per))
        chunks = ceil_div(n, nb)
        self.nb = ceil_div(n, chunks)
        self.chunks = ceil_div(n, self.nb)
        sizes = {name: b * self.nb for name, b in per_image.items() if b}
        if self.chunks > 1 and fixed_if_chunked:
            sizes.update({k: v for k, v in fixed_if_chunked.items() if v})
        self.offsets, off = {}, 0
        for name, b in sizes.items():
            self.offsets[name] = off
            off += _align(b)
        self.bytes = off + ALIGN if off else 0
        self.per_image_bytes = per

    def ranges(self, n: int):
        for n0 in range(0, n, self.nb):
            yield n0, min(self.nb, n - n0)

    def base(self, workspace: int) -> int:
        """The aligned start of the workspace at device address ``workspace`` (its ``bytes`` are
        the caller's to provide)."""
        if not self.bytes:
            return 0
        if not workspace:
            raise ValueError(f"workspace of {self.bytes} bytes required, got none")
        return _align(workspace)

    def ptr(self, base: int, name: str) -> int:
        return base + self.offsets[name]


# -- cuBLAS ------------------------------------------------------------------------------------

class Blas:
    """cuBLAS GEMMs on raw device pointers for one problem's data type and math mode.

    A and B are always in the data type; C is the data type or float (``c_f32``). Compute type is
    CUBLAS_COMPUTE_32F (strict FP32, FP32 accumulation for FP16/BF16) or
    CUBLAS_COMPUTE_32F_FAST_TF32 when the problem's math is "tf32"; 16-bit outputs never take a
    split-K reduction in the 16-bit type. Each GEMM shape is planned once with cuBLASLt
    (``miofind.cublas.LtGemm``) and then runs on the stream of ``session(stream)``, with that
    stream's workspace, so that the GEMMs run on the launch stream and can be graph-captured.
    """

    def __init__(self, dtype: str, math_mode: str, algo: int = 0, split: tuple[int, int] | None = None):
        from miofind import cublas

        self.lib = cublas
        self.algo, self.split = algo, split
        self.io_type = {"FP32": cublas.R_32F, "FP16": cublas.R_16F, "BF16": cublas.R_16BF}[dtype]
        self.f32_type = cublas.R_32F
        self.esize = 4 if dtype == "FP32" else 2
        tf32 = dtype == "FP32" and math_mode == "tf32"
        self.compute = cublas.COMPUTE_32F_FAST_TF32 if tf32 else cublas.COMPUTE_32F
        self.math_mode = cublas.TF32_TENSOR_OP_MATH if tf32 else cublas.DEFAULT_MATH
        self.no_reduced_precision = dtype != "FP32"
        self.op = cublas.OP
        self._gemms: dict[tuple, object] = {}
        self._tls = threading.local()

    def session(self, stream: int) -> "Blas":
        """Bind this thread's GEMMs to ``stream`` (use as ``with blas.session(stream):``)."""
        self._tls.stream = stream
        return self

    def __enter__(self) -> "Blas":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def _lt(self, key):
        g = self._gemms.get(key)
        if g is None:
            ta, tb, m, n, k, lda, sA, ldb, sB, ldc, sC, nbat, beta, c_f32 = key
            g = self._gemms[key] = self.lib.LtGemm(
                self.op[ta], self.op[tb], m, n, k, self.io_type, lda, sA, ldb, sB,
                self.f32_type if c_f32 else self.io_type, ldc, sC, nbat, self.compute, beta,
                self.no_reduced_precision and not c_f32, self.math_mode, algo=self.algo,
                **({} if self.split is None else {"splitk": self.split[0], "reduction": self.split[1]}))
        return g

    def gemm(self, ta, tb, m, n, k, A, lda, sA, B, ldb, sB, C, ldc, sC, batch=1, beta=0, c_f32=False):
        """Column-major C = op(A) op(B) (+ C if beta), ``batch`` times with element strides sA, sB, sC."""
        stream = self._tls.stream
        beta = 1 if beta else 0
        if batch <= MAX_BATCH:
            self._lt((ta, tb, m, n, k, lda, sA, ldb, sB, ldc, sC, batch, beta, c_f32)).call(stream, A, B, C)
            return
        e, csize = self.esize, 4 if c_f32 else self.esize
        for b0 in range(0, batch, MAX_BATCH):
            nbat = min(MAX_BATCH, batch - b0)
            self._lt((ta, tb, m, n, k, lda, sA, ldb, sB, ldc, sC, nbat, beta, c_f32)).call(
                stream, A + b0 * sA * e, B + b0 * sB * e, C + b0 * sC * csize)

    def gemm_ng(self, ta, tb, m, n, k, nb, G, A, lda, sAn, sAg, B, ldb, sBn, sBg, C, ldc, sCn, sCg,
                beta=0, c_f32=False):
        """nb x G GEMMs (images x groups), each operand at ptr + n*s?n + g*s?g, in as few calls as the
        strides allow: one batch when (n, g) flattens to one stride, else a loop over the shorter axis."""
        csize = 4 if c_f32 else self.esize
        e = self.esize
        if G == 1:
            self.gemm(ta, tb, m, n, k, A, lda, sAn, B, ldb, sBn, C, ldc, sCn, nb, beta, c_f32)
        elif (sAn, sBn, sCn) == (G * sAg, G * sBg, G * sCg):
            self.gemm(ta, tb, m, n, k, A, lda, sAg, B, ldb, sBg, C, ldc, sCg, nb * G, beta, c_f32)
        elif nb <= G:
            for i in range(nb):
                self.gemm(ta, tb, m, n, k, A + i * sAn * e, lda, sAg, B + i * sBn * e, ldb, sBg,
                          C + i * sCn * csize, ldc, sCg, G, beta, c_f32)
        else:
            for g in range(G):
                self.gemm(ta, tb, m, n, k, A + g * sAg * e, lda, sAn, B + g * sBg * e, ldb, sBn,
                          C + g * sCg * csize, ldc, sCn, nb, beta, c_f32)


def make_blas(dtype: str, math_mode: str, algo: int = 0, split: tuple[int, int] | None = None) -> Blas:
    return Blas(dtype, math_mode, algo, split)


# -- the solvers -------------------------------------------------------------------------------

class GemmBase(Solver):
    """im2col + GEMM, one direction; ``one_by_one`` solvers take exactly the 1x1 stride-1 pad-0
    problems (no im2col) and the others take every problem but those."""

    family = "gemm"
    kernel_files = (SOURCE,)
    one_by_one = False
    other_id = ""          # the sibling solver that takes the problems this one refuses
    workspace_cap = WORKSPACE_CAP
    tunable = True
    config_device_bound = True     # {"LT": i} is the i-th of cuBLASLt's heuristic results on the GPU it was tuned on
    first_run_loads = True         # cuBLASLt loads a kernel's module at its first launch in a process

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        if len(set(p.layouts)) != 1 or p.layouts[0] not in LAYOUTS:
            return not_applicable(f"layouts {'-'.join(p.layouts)} not supported (x, w and y must share one of "
                                  f"{', '.join(LAYOUTS)})")
        one = is_1x1_s1(p)
        if self.one_by_one and not one:
            return not_applicable(f"filter {'x'.join(map(str, p.filter_size))} pads {p.pads} strides {p.strides}: "
                                  f"needs a 1x1 filter with pad 0 and stride 1 (use {self.other_id})")
        if not self.one_by_one and one:
            return not_applicable(f"1x1 filter with pad 0 and stride 1: handled by {self.other_id}")
        g = Geom(p)
        if g.n * max(g.P, g.Q) >= 2**31 or g.ct >= 2**31 or g.k * g.cgt >= 2**31:
            return not_applicable(f"GEMM dimension exceeds cuBLAS's 32-bit sizes (N*pixels={g.n * max(g.P, g.Q)}, "
                                  f"C*taps={g.ct}, K*C/G*taps={g.k * g.cgt})")
        plan = self._plan(p, self.workspace_cap)
        if plan.per_image_bytes > MAX_IMAGE_WORKSPACE:
            return not_applicable(f"one image's column buffers need {plan.per_image_bytes} bytes, more than "
                                  f"{MAX_IMAGE_WORKSPACE} (no spatial chunking)")
        return APPLICABLE

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        """Column buffers for one batch chunk (chunked to stay within ``workspace_cap``)."""
        return self._plan(problem.as_conv(), self.workspace_cap).bytes

    def get_solution(self, problem: ProblemDescription, config=None, *, workspace_cap: int | None = None,
                     wrw_mode: str | None = None) -> ConvSolution:
        """``workspace_cap`` (bytes) overrides the chunking cap and ``wrw_mode`` the backward-weights
        NCHW strategy ("batched" or "concat"); both exist for tests."""
        p = problem.as_conv()
        cap = self.workspace_cap if workspace_cap is None else workspace_cap
        if wrw_mode is not None and wrw_mode not in WRW_MODES:
            raise ValueError(f"wrw_mode={wrw_mode!r}: expected one of {WRW_MODES}")
        if not self.is_valid_config(p, config):
            raise ValueError(f"{self.id}: config {config!r} is not valid: expected None or {{'LT': i}} with i "
                             f"from 0 to {LT_ALGOS - 1}" + (f", or {{'LT': i, 'SK': k, 'RED': r}} with i below "
                             f"{SPLIT_PLACES}, k in {SPLITS}, r 0 for k = 1, else one of {REDUCTIONS}" if "W" in self.directions else ""))
        plan = self._plan(p, cap, wrw_mode)
        split = (config["SK"], config["RED"]) if config and "SK" in config else None
        kernels, factory = self._build(p, plan, config["LT"] if config else 0, split)
        return ConvSolution(self.id, kernels, plan.bytes, factory, dict(config) if config else None,
                            prebuilt=not kernels)

    # subclasses: _plan(p, cap, wrw_mode=None) -> GemmPlan and _build(p, plan, algo, split) -> (kernels, factory)

    def library_versions(self) -> dict[str, str | None]:
        """cuBLASLt's version joins the trust key: it runs the GEMMs, and its heuristic picks their algorithms."""
        from miofind import cublas

        return cublas.library_versions()

    # -- configs: which of the cuBLASLt heuristic's algorithms the GEMMs run ----------------------
    def default_config(self, problem: ProblemDescription) -> dict:
        return {"LT": 0}

    def config_space(self, problem: ProblemDescription) -> list[dict]:
        """The heuristic's other algorithms (a place beyond the list it offers for a GEMM fails to run); for
        backward weights also its first ``SPLIT_PLACES`` with each split of ``SPLITS``."""
        out = [{"LT": i} for i in range(1, LT_ALGOS)]
        if "W" in self.directions:
            out += [{"LT": i, "SK": k, "RED": r} for i in range(SPLIT_PLACES) for k in SPLITS for r in _reductions(k)]
        return out

    # find_configs: the base's [None], the heuristic's first (or the PerfDB's tuned config): the other places and
    # the splits are ``miofind tune``'s, as MIOpen's find runs a tunable solver's default config or its PerfDB
    # entry (with every find listing them for its background, as cuDNN's later plans, bench_cold's finds of unseen
    # shapes ran slower in one run: bench/results/session-nov27j/call6/)

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        if not config:
            return True
        if not isinstance(config, dict) or not all(type(v) is int for v in config.values()):
            return False
        if set(config) == {"LT"}:
            return 0 <= config["LT"] < LT_ALGOS
        return ("W" in self.directions and set(config) == {"LT", "SK", "RED"} and 0 <= config["LT"] < SPLIT_PLACES
                and config["SK"] in SPLITS and config["RED"] in _reductions(config["SK"]))

    def _kernel(self, geo: Geom, plan: GemmPlan, name: str, total: int, concat: bool = False) -> KernelInfo:
        wide = _needs_wide(geo, plan)
        macros = geo.macros(wide, concat)
        return KernelInfo(SOURCE, name, _grid(total), (BLOCK, 1, 1),
                          macros=tuple((k, str(v)) for k, v in macros.items()))


def _reductions(splitk: int) -> tuple[int, ...]:
    """The reduction schemes a split of ``splitk`` ways may take: none unsplit, else REDUCTIONS."""
    return (0,) if splitk == 1 else REDUCTIONS


def _needs_wide(geo: Geom, plan: GemmPlan) -> bool:
    """64-bit kernel indices when a tensor, or one chunk's buffer, nears 2^31 elements."""
    nb = plan.nb
    counts = (geo.n * geo.c * geo.Q, geo.n * geo.k * geo.P, geo.k * geo.cgt,
              nb * geo.ct * geo.P, nb * geo.k * geo.P, nb * geo.k * geo.cgt)
    return max(counts) >= INT32_SAFE


def launch(kern: Launcher, total: int, ptrs: tuple, scalars: tuple, stream: int) -> None:
    """One launch of a gemm_im2col.cu kernel over ``total`` work items: its device pointers, then its
    int scalars."""
    kern(stream, total, ptrs, scalars)


def _aligned(ptr: int, nbytes: int) -> int:
    return int(ptr % nbytes == 0)


class GemmFwdBase(GemmBase):
    """Forward: y = W x col per image and group (NCHW) or one GEMM over the chunk's pixels (NHWC).

    NCHW, per image n and group g (row-major): Y[n,g] (K/G x P) = W[g] (K/G x C/G*T) . col[n,g]
    (C/G*T x P), i.e. column-major Y^T = col^T W^T: gemm(N, N, m=P, n=K/G, k=C/G*T).
    NHWC (row-major over the nb*P pixels): Y[:, g] (M x K/G, ld K) = col[:, g] (M x C/G*T, ld C*T)
    . W[g]^T, i.e. column-major Y^T = W col^T: gemm(T, N, m=K/G, n=M, k=C/G*T), groups batched.
    """

    algorithm = "miopenConvolutionFwdAlgoGEMM"
    directions = frozenset("F")

    def _plan(self, p, cap, wrw_mode=None):
        geo = Geom(p)
        return GemmPlan(geo.n, {} if geo.one else {"col": geo.ct * geo.P * geo.E}, cap)

    def _build(self, p, plan, algo=0, split=None):
        geo = Geom(p)
        G, E, vec = geo.g, geo.E, geo.vec()
        kernels = []
        if not geo.one:
            kernels.append(self._kernel(geo, plan, "im2col_nhwc" if geo.cl else "im2col_nchw",
                                        plan.nb * geo.ct * geo.P // vec))
        dtype, math_mode = p.dtype, p.math

        def factory(kerns):
            im2col = Launcher(kerns[0], _grid) if kerns else None
            blas = make_blas(dtype, math_mode, algo, split)

            def invoker(a, b, out, workspace, stream):
                base = plan.base(workspace)
                x, w, y = a, b, out
                with blas.session(stream):
                    for n0, nb in plan.ranges(geo.n):
                        xp = x + n0 * geo.c * geo.Q * E
                        col = xp
                        if im2col is not None:
                            col = plan.ptr(base, "col")
                            scalars = (nb, _aligned(xp, vec * E)) if geo.cl else (nb,)
                            launch(im2col, nb * geo.ct * geo.P // vec, (xp, col), scalars, stream)
                        if geo.cl:
                            blas.gemm("T", "N", geo.kg, nb * geo.P, geo.cgt,
                                      w, geo.cgt, geo.kg * geo.cgt,
                                      col, geo.ct, geo.cgt,
                                      y + n0 * geo.P * geo.k * E, geo.k, geo.kg, batch=G)
                        else:
                            blas.gemm_ng("N", "N", geo.P, geo.kg, geo.cgt, nb, G,
                                         col, geo.P, geo.ct * geo.P, geo.cgt * geo.P,
                                         w, geo.cgt, 0, geo.kg * geo.cgt,
                                         y + n0 * geo.k * geo.P * E, geo.P, geo.k * geo.P, geo.kg * geo.P)
            return mark_traceable(invoker)

        return kernels, factory


class GemmBwdBase(GemmBase):
    """Backward data: column gradients dcol = W^T dy (data type, FP32 accumulation), then col2im
    gathers them into dx, summing in float.

    NCHW: dcol[n,g] (C/G*T x P) = W[g]^T . dY[n,g], column-major dcol^T = dY^T W:
    gemm(N, T, m=P, n=C/G*T, k=K/G). NHWC: dcol[:, g] (M x C/G*T, ld C*T) = dY[:, g] (M x K/G, ld K)
    . W[g], column-major dcol^T = W^T dY^T: gemm(N, N, m=C/G*T, n=M, k=K/G). For 1x1 stride-1
    pad-0 problems dcol is dx itself and the GEMM writes it directly in the data type.
    """

    algorithm = "miopenConvolutionBwdDataAlgoGEMM"
    directions = frozenset("B")

    def _plan(self, p, cap, wrw_mode=None):
        geo = Geom(p)
        return GemmPlan(geo.n, {} if geo.one else {"dcol": geo.ct * geo.P * geo.E}, cap)

    def _build(self, p, plan, algo=0, split=None):
        geo = Geom(p)
        G, E = geo.g, geo.E
        kernels = []
        if not geo.one:
            kernels.append(self._kernel(geo, plan, "col2im_nhwc" if geo.cl else "col2im_nchw",
                                        plan.nb * geo.c * geo.Q))
        dtype, math_mode = p.dtype, p.math

        def factory(kerns):
            col2im = Launcher(kerns[0], _grid) if kerns else None
            blas = make_blas(dtype, math_mode, algo, split)

            def invoker(a, b, out, workspace, stream):
                base = plan.base(workspace)
                dy, w, dx = a, b, out
                with blas.session(stream):
                    for n0, nb in plan.ranges(geo.n):
                        dyp = dy + n0 * geo.k * geo.P * E
                        dxp = dx + n0 * geo.c * geo.Q * E
                        dst = dxp if col2im is None else plan.ptr(base, "dcol")
                        if geo.cl:
                            blas.gemm("N", "N", geo.cgt, nb * geo.P, geo.kg,
                                      w, geo.cgt, geo.kg * geo.cgt,
                                      dyp, geo.k, geo.kg,
                                      dst, geo.ct, geo.cgt, batch=G)
                        else:
                            blas.gemm_ng("N", "T", geo.P, geo.cgt, geo.kg, nb, G,
                                         dyp, geo.P, geo.k * geo.P, geo.kg * geo.P,
                                         w, geo.cgt, 0, geo.kg * geo.cgt,
                                         dst, geo.P, geo.ct * geo.P, geo.cgt * geo.P)
                        if col2im is not None:
                            launch(col2im, nb * geo.c * geo.Q, (dst, dxp), (nb,), stream)
            return mark_traceable(invoker)

        return kernels, factory


class GemmWrwBase(GemmBase):
    """Backward weights: dW[g] = sum over images and pixels of dY[g] col[g]^T, deterministic.

    NHWC: the chunk's pixels are the GEMM's reduction dimension directly: column-major
    dW^T (C/G*T x K/G) = col^T dY: gemm(N, T, m=C/G*T, n=K/G, k=nb*P), chunks accumulated by beta=1.
    NCHW "batched": one strided-batched GEMM over (image, group) writes float partials
    part[n] = col[n] dY[n]^T (gemm(T, N, m=C/G*T, n=K/G, k=P)), which wrw_reduce sums in image order.
    NCHW "concat": im2col lays the chunk's images side by side (C*T x nb*P) and dy is transposed to
    K x nb*P, so one GEMM per group reduces over k=nb*P; chunks accumulate by beta=1.
    "batched" is chosen when P >= 4*K/G and K/G >= 8 (partials small, per-image GEMMs long), else
    "concat". A chunked 16-bit pass accumulates in a float workspace buffer, rounded once at the end.
    """

    algorithm = "miopenConvolutionBwdWeightsAlgoGEMM"
    directions = frozenset("W")

    @staticmethod
    def _mode(geo: Geom, wrw_mode=None) -> str:
        if geo.cl:
            return "nhwc"
        if wrw_mode is not None:
            return wrw_mode
        return "batched" if (geo.P >= 4 * geo.kg and geo.kg >= 8) else "concat"

    def _plan(self, p, cap, wrw_mode=None):
        geo = Geom(p)
        mode = self._mode(geo, wrw_mode)
        col = 0 if geo.one else geo.ct * geo.P * geo.E
        if mode == "nhwc":
            per = {"col": col}
        elif mode == "batched":
            per = {"col": col, "part": geo.k * geo.cgt * 4}
        else:
            per = {"col": geo.ct * geo.P * geo.E, "dyt": geo.k * geo.P * geo.E}
        plan = GemmPlan(geo.n, per, cap, {"acc": geo.k * geo.cgt * 4} if geo.E == 2 else None)
        plan.mode = mode
        return plan

    def _build(self, p, plan, algo=0, split=None):
        geo = Geom(p)
        G, E, vec, mode = geo.g, geo.E, geo.vec(), plan.mode
        wsz = geo.k * geo.cgt
        names = []
        if mode == "nhwc":
            if not geo.one:
                names.append(("im2col_nhwc", plan.nb * geo.ct * geo.P // vec))
        elif mode == "batched":
            if not geo.one:
                names.append(("im2col_nchw", plan.nb * geo.ct * geo.P // vec))
            names.append(("wrw_reduce", wsz))
        else:
            names.append(("im2col_nchw", plan.nb * geo.ct * geo.P // vec))
            names.append(("nkp_to_knp", plan.nb * geo.k * geo.P // vec))
        use_acc = "acc" in plan.offsets
        if use_acc and mode != "batched":
            names.append(("f32_to_data", wsz))
        # one macro set for all of a solution's kernels: one NVRTC build serves them all
        kernels = [self._kernel(geo, plan, nm, total, mode == "concat") for nm, total in names]
        index = {nm: i for i, (nm, _) in enumerate(names)}
        dtype, math_mode = p.dtype, p.math

        def factory(kerns):
            k_ = {nm: Launcher(kerns[i], _grid) for nm, i in index.items()}
            blas = make_blas(dtype, math_mode, algo, split)

            def invoker(a, b, out, workspace, stream):
                base = plan.base(workspace)
                dy, x, dw = a, b, out
                acc = plan.ptr(base, "acc") if use_acc else dw   # FP32 accumulates in dw itself
                with blas.session(stream):
                    for idx, (n0, nb) in enumerate(plan.ranges(geo.n)):
                        first, last = idx == 0, n0 + nb == geo.n
                        xp = x + n0 * geo.c * geo.Q * E
                        dyp = dy + n0 * geo.k * geo.P * E
                        if mode == "nhwc":
                            col = xp
                            if not geo.one:
                                col = plan.ptr(base, "col")
                                launch(k_["im2col_nhwc"], nb * geo.ct * geo.P // vec,
                                       (xp, col), (nb, _aligned(xp, vec * E)), stream)
                            blas.gemm("N", "T", geo.cgt, geo.kg, nb * geo.P,
                                      col, geo.ct, geo.cgt,
                                      dyp, geo.k, geo.kg,
                                      acc, geo.cgt, geo.kg * geo.cgt, batch=G, beta=not first, c_f32=use_acc)
                        elif mode == "batched":
                            col = xp
                            if not geo.one:
                                col = plan.ptr(base, "col")
                                launch(k_["im2col_nchw"], nb * geo.ct * geo.P // vec, (xp, col), (nb,), stream)
                            part = plan.ptr(base, "part")
                            blas.gemm("T", "N", geo.cgt, geo.kg, geo.P,
                                      col, geo.P, geo.cgt * geo.P,
                                      dyp, geo.P, geo.kg * geo.P,
                                      part, geo.cgt, geo.kg * geo.cgt, batch=nb * G, c_f32=True)
                            launch(k_["wrw_reduce"], wsz, (part, acc, dw), (nb, first, last), stream)
                        else:
                            col, dyt = plan.ptr(base, "col"), plan.ptr(base, "dyt")
                            launch(k_["im2col_nchw"], nb * geo.ct * geo.P // vec, (xp, col), (nb,), stream)
                            launch(k_["nkp_to_knp"], nb * geo.k * geo.P // vec,
                                   (dyp, dyt), (nb, _aligned(dyp, vec * E)), stream)
                            ld = nb * geo.P
                            blas.gemm("T", "N", geo.cgt, geo.kg, ld,
                                      col, ld, geo.cgt * ld,
                                      dyt, ld, geo.kg * ld,
                                      acc, geo.cgt, geo.kg * geo.cgt, batch=G, beta=not first, c_f32=use_acc)
                    if use_acc and mode != "batched":
                        launch(k_["f32_to_data"], wsz, (acc, dw), (), stream)
            return mark_traceable(invoker)

        return kernels, factory
