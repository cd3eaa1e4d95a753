"""Winograd F(2x2,3x3) and F(4x4,3x3) convolution, forward and backward data (Lavin & Gray).

Per m x m output tile (alpha = m + 2): V = B^T d B on the alpha x alpha input patch, U = G g G^T
on the 3x3 filter, M[xi,nu] = U[xi,nu] V[xi,nu] summed over input channels, which is alpha^2 x G
batched GEMMs of (K/G x C/G) times (C/G x P), P = N * tiles, run by cuBLAS
(cuBLASLt strided-batched matmul planned once, FP32 compute; TF32 only for F(2x2) when problem.math == "tf32"), then
Y = A^T M A. The three transforms are kernels_src/winograd_transforms.cu; the FP32 transformed
filter, input and output tiles live in the workspace. FP16/BF16 data are converted to FP32 on
load and rounded once on the final store. Backward data is the same computation on dy with the
filter rotated 180 degrees and K/C swapped, pads 2 - p. Transforms (points 0, 1, -1, [2, -2,] inf):

  F(2,3): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
          A^T = [1 1 1 0; 0 1 -1 -1]
  F(4,3): B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1],
          G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1],
          A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]

Accuracy (relative L2 error against a float64 direct convolution, measured with tests/winograd/emulate.py,
a numpy float32 emulation of the kernels' operation order; inputs uniform(-1, 1), N=2, K=16, 30x30,
pad 1; the error grows about as sqrt(C)):

  FP32      C=16     C=64     C=256       (FP32 direct convolution, C=64: 1.6e-7)
  F(2x2)   1.7e-7   2.7e-7   5.0e-7
  F(4x4)   1.0e-6   1.8e-6   3.1e-6      (points +-1/2 instead of +-2: the same within 5%)
  TF32 GEMM (tiles rounded to 10-bit mantissas): F(2x2) 5.0e-4; F(4x4) 3.1e-3, too close to the
  5e-3 TF32 tolerance, so F(4x4) always runs strict FP32.
  FP16/BF16: the rounding of the output dominates, 2.1e-4 (FP16) and 1.7e-3 (BF16), plus the FP32
  figures above; verify.py's winograd rows (FP32 1e-4, FP16 5e-3, BF16 2e-2) hold with margin.
"""

from __future__ import annotations

import numpy as np

from miofind.launch import PTR, Launch, mark_traceable
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES, needs_int64

SOURCE = "winograd_transforms.cu"
BLOCK = 256
ALIGN = 256
INT32_MAX = 2**31 - 1

# cuBLAS enums (cublas_api.h, library_types.h)
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUDA_R_32F = 0
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 77

_F = lambda rows: np.array(rows, dtype=np.float64)  # noqa: E731
# (A^T, G, B^T) per output tile size m
TRANSFORMS = {
    2: (_F([[1, 1, 1, 0], [0, 1, -1, -1]]),
        _F([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]]),
        _F([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]])),
    4: (_F([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]),
        _F([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
            [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]]),
        _F([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
            [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]])),
}


def _align(nbytes: int) -> int:
    return ceil_div(nbytes, ALIGN) * ALIGN


class WinogradGeometry:
    """The stride-1 correlation the kernels compute, in the kernels' terms.

    Forward: in = x (C channels), out = y (K), pads p. Backward data: in = dy (K channels),
    out = dx (C), pads 2 - p, filter rotated and transposed.
    """

    def __init__(self, p: ProblemDescription, m: int):
        self.m = m
        self.alpha = m + 2
        self.bwd = p.direction == "B"
        if self.bwd:
            self.ci, self.co = p.k, p.c
            (self.hi, self.wi), (self.ho, self.wo) = p.out_size, p.in_size
            self.ph, self.pw = 2 - p.pads[0], 2 - p.pads[1]
        else:
            self.ci, self.co = p.c, p.k
            (self.hi, self.wi), (self.ho, self.wo) = p.in_size, p.out_size
            self.ph, self.pw = p.pads
        self.g = p.groups
        self.cig, self.cog = self.ci // self.g, self.co // self.g
        self.n = p.n
        self.th, self.tw = ceil_div(self.ho, m), ceil_div(self.wo, m)
        self.tiles = self.n * self.th * self.tw            # P, the GEMMs' long dimension
        a2 = self.alpha ** 2
        self.u_elems = a2 * self.co * self.cig
        self.v_elems = a2 * self.ci * self.tiles
        self.m_elems = a2 * self.co * self.tiles
        self.u_off = 0
        self.v_off = _align(4 * self.u_elems)
        self.m_off = self.v_off + _align(4 * self.v_elems)
        self.workspace = self.m_off + _align(4 * self.m_elems)

    def wide(self, p: ProblemDescription) -> bool:
        big = max(self.u_elems, self.v_elems, self.m_elems, self.tiles * max(self.ci, self.co))
        return needs_int64(p) or big >= INT32_MAX - BLOCK


class WinogradBase(Solver):
    """Shared body of the four Winograd solvers; subclasses set id, directions and ``tile``."""

    family = "winograd"
    tunable = False
    kernel_files = (SOURCE,)
    tile = 2

    def library_versions(self) -> dict[str, str | None]:
        """cuBLASLt's version joins the trust key: it runs the transformed tiles' batched GEMM."""
        from miofind import cublas

        return cublas.library_versions()

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        if p.spatial_dims != 2:
            return not_applicable(f"{p.spatial_dims}D problem not supported (2D only)")
        if p.filter_size != (3, 3):
            return not_applicable(f"filter {p.filter_size[0]}x{p.filter_size[1]} not supported (3x3 only)")
        if p.strides != (1, 1):
            return not_applicable(f"strides {p.strides} not supported (stride 1 only)")
        if p.dilations != (1, 1):
            return not_applicable(f"dilations {p.dilations} not supported (dilation 1 only)")
        if p.layouts not in (("NCHW",) * 3, ("NHWC",) * 3):
            return not_applicable(f"layouts {'/'.join(p.layouts)} not supported (all NCHW or all NHWC)")
        geo = WinogradGeometry(p, self.tile)
        if geo.tiles * max(geo.cig, geo.cog) > INT32_MAX or geo.cog * geo.cig > INT32_MAX:
            return not_applicable(f"{geo.tiles} tiles x {max(geo.cig, geo.cog)} channels per group: a transformed "
                                  f"matrix of 2^31 elements or more (cuBLAS 32-bit dimensions)")
        if ceil_div(geo.tiles * max(geo.ci, geo.co), BLOCK) > INT32_MAX:
            return not_applicable("transform grid exceeds 2^31 - 1 blocks")
        return APPLICABLE

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        return WinogradGeometry(problem.as_conv(), self.tile).workspace

    def _tf32(self, p: ProblemDescription) -> bool:
        # F(4x4) amplifies the TF32 rounding of the tiles to ~3e-3 (module docstring): strict FP32
        return p.math == "tf32" and self.tile == 2

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        if config:
            raise ValueError(f"config={dict(config)}: {self.id} is not tunable")
        geo = WinogradGeometry(p, self.tile)
        macros = {
            "DATA_T": CUDA_TYPES[p.dtype], "INDEX_T": "long long" if geo.wide(p) else "int",
            "WM": geo.m, "NHWC": int(p.layouts[0] == "NHWC"), "BWD": int(geo.bwd), "BLOCK": BLOCK,
            "N_": geo.n, "CI": geo.ci, "CO": geo.co, "G_": geo.g, "HI": geo.hi, "WI": geo.wi,
            "HO": geo.ho, "WO": geo.wo, "PH": geo.ph, "PW": geo.pw, "TH": geo.th, "TW": geo.tw,
            "P_": geo.tiles,
        }
        mac = tuple((k, str(v)) for k, v in macros.items())
        blk = (BLOCK, 1, 1)
        kf = KernelInfo(SOURCE, "winograd_filter", (ceil_div(geo.co * geo.cig, BLOCK), 1, 1), blk, macros=mac)
        ki = KernelInfo(SOURCE, "winograd_input", (ceil_div(geo.tiles * geo.ci, BLOCK), 1, 1), blk, macros=mac)
        ko = KernelInfo(SOURCE, "winograd_output", (ceil_div(geo.tiles * geo.co, BLOCK), 1, 1), blk, macros=mac)
        gemm = _gemm_args(geo, p.layouts[0] == "NHWC", self._tf32(p))
        vec_bytes = geo.m * (4 if p.dtype == "FP32" else 2)

        def factory(kernels):
            filt, inp, outp = kernels
            mm = _lt_gemm(gemm)

            lf = Launch(filt, kf.grid, blk, (PTR, PTR))
            li = Launch(inp, ki.grid, blk, (PTR, PTR))
            lo = {al: Launch(outp, ko.grid, blk, (PTR, PTR, np.int32(al))) for al in (0, 1)}

            def invoker(a, b, out, workspace, stream):
                if not workspace:
                    raise ValueError(f"workspace of {geo.workspace} bytes required, got none")
                u, v, m = workspace + geo.u_off, workspace + geo.v_off, workspace + geo.m_off
                lf(stream, b, u)
                li(stream, a, v)
                mm(stream, u, v, m)
                lo[int(out % vec_bytes == 0)](stream, m, out)
            return mark_traceable(invoker)

        return ConvSolution(self.id, [kf, ki, ko], geo.workspace, factory, None)


def _gemm_args(geo: WinogradGeometry, nhwc: bool, tf32: bool) -> dict:
    """cuBLAS (column-major) arguments for M[pt,g] = U[pt,g] V[pt,g], batched over alpha^2 x G.

    NCHW: V [ci][p], M [co][p] are column-major P x CIG and P x COG, U [co][ci] is CIG x COG:
          M = V U, gemm(N, N, m=P, n=COG, k=CIG).
    NHWC: V [p][ci], M [p][co] are column-major CIG x P and COG x P: M = U^T V, gemm(T, N, COG, P, CIG).
    """
    P, cig, cog = geo.tiles, geo.cig, geo.cog
    d = dict(batch=geo.alpha ** 2 * geo.g, su=cog * cig, sv=cig * P, sm=cog * P,
             compute=CUBLAS_COMPUTE_32F_FAST_TF32 if tf32 else CUBLAS_COMPUTE_32F)
    if nhwc:
        d.update(ta=CUBLAS_OP_T, tb=CUBLAS_OP_N, mm=cog, nn=P, kk=cig, first="u", lda=cig, ldb=cig, ldc=cog)
    else:
        d.update(ta=CUBLAS_OP_N, tb=CUBLAS_OP_N, mm=P, nn=cog, kk=cig, first="v", lda=P, ldb=cig, ldc=P)
    return d


def _lt_gemm(g: dict):
    """run(stream, u, v, m): the batched GEMM, planned once with cuBLASLt (``miofind.cublas.LtGemm``;
    host scalars, FP32 compute unless the compute type asks for TF32), on the launch stream."""
    from miofind import cublas

    first_u = g["first"] == "u"
    lt = cublas.LtGemm(g["ta"], g["tb"], g["mm"], g["nn"], g["kk"], CUDA_R_32F, g["lda"], g["su"] if first_u else g["sv"],
                       g["ldb"], g["sv"] if first_u else g["su"], CUDA_R_32F, g["ldc"], g["sm"], g["batch"],
                       g["compute"], 0, False)
    call = lt.call

    def run(stream: int, u: int, v: int, m: int) -> None:
        if first_u:
            call(stream, u, v, m)
        else:
            call(stream, v, u, m)
    return run
