"""Implicit GEMM for few input channels, backward weights (kernels_src/implicit_gemm_small_c_wrw.cu; shared planning
in implicit_gemm_small_c_base.py): GEMM rows = a slice of BK = MB*16 output channels, columns = Y*X taps of 4 channels,
reduction over the output pixels in k16 steps of 16 pixels of a tile row. Each persistent block accumulates its tiles
in registers and writes an FP32 partial plane to the workspace; a second kernel sums the planes in block order
(deterministic) into dw.

Tunables: TH x TW output pixels a block tile (TW in 16, 32, 64), OCC blocks an SM (1 or 2: the partial planes are
the SMs x OCC)."""

from __future__ import annotations

from miofind.launch import B, OUT, PTR, WS, Launch, with_recipe
from miofind.launch import A as A_ROLE
from miofind.problem import ProblemDescription
from miofind.solver import ConvSolution, KernelInfo, ceil_div

from .implicit_gemm_hopper_base import SMEM_STATIC, problem_macros, sm_count
from .implicit_gemm_small_c_base import ImplicitGemmSmallCBase, fits, patch, taps, tiles

KEYS = ("TH", "TW", "OCC")
THREADS = 256
RED_WARPS = 8
WS_ALIGN = 256


def m_blocks(p: ProblemDescription) -> int:
    """m16 blocks of output channels a block takes: BK = 16 * MB <= 64 (1, 2 or 4)."""
    return {1: 1, 2: 2}.get(ceil_div(p.k, 16), 4)


def ncol(p: ProblemDescription) -> int:
    """Columns of the GEMM: Y*X taps of 4 channels, rounded up to n8 blocks."""
    return ceil_div(taps(p) * 4, 8) * 8


def slices(p: ProblemDescription) -> int:
    return ceil_div(p.k, 16 * m_blocks(p))


def smem_bytes(p: ProblemDescription, cfg) -> int:
    """dy's TH*TW x (BK + 8) halves and the input patch's PH x 4 x (PW + 1) pair words."""
    ph, pw = patch(p, cfg["TH"], cfg["TW"])
    return cfg["TH"] * cfg["TW"] * (16 * m_blocks(p) + 8) * 2 + ph * 4 * (pw + 1) * 4


def planes(p: ProblemDescription, cfg) -> int:
    return min(tiles(p, cfg), sm_count() * cfg["OCC"])


def config_ok(p: ProblemDescription, cfg) -> bool:
    th, tw, occ = (cfg[k] for k in KEYS)
    if tw not in (16, 32, 64) or th not in (1, 2, 4, 8, 16) or occ not in (1, 2) or not 64 <= th * tw <= 512:
        return False
    return fits(smem_bytes(p, cfg), occ)


def default_tile(p: ProblemDescription) -> dict:
    """16 x 16 pixels a tile, two blocks an SM (1.05 of each first layer's fastest config at N = 32 in geomean,
    bench/results/session-stem/call1); one block where two do not fit, then 8 x 16 pixels."""
    tries = ({"TH": 16, "TW": 16, "OCC": 2}, {"TH": 16, "TW": 16, "OCC": 1}, {"TH": 8, "TW": 16, "OCC": 1})
    return next((c for c in tries if config_ok(p, c)), tries[0])


ALTERNATES = ({"TH": 8, "TW": 32, "OCC": 2}, {"TH": 4, "TW": 64, "OCC": 2}, {"TH": 4, "TW": 32, "OCC": 2},
              {"TH": 16, "TW": 32, "OCC": 2})


def space(p: ProblemDescription):
    dflt = default_tile(p)
    if config_ok(p, dflt):
        yield dflt
    for tw in (16, 32, 64):
        for th in (16, 8, 4, 2, 1):
            for occ in (2, 1):
                cfg = {"TH": th, "TW": tw, "OCC": occ}
                if cfg != dflt and config_ok(p, cfg):
                    yield cfg


class ImplicitGemmSmallCWrw(ImplicitGemmSmallCBase):
    id = "ConvImplicitGemmSmallCWrw"
    algorithm = "miopenConvolutionBwdWeightsAlgoImplicitGEMM"
    directions = frozenset("W")
    source = "implicit_gemm_small_c_wrw.cu"
    kernel_name = "igemm_small_c_wrw"
    config_keys = KEYS
    tile_ok = staticmethod(config_ok)
    default_tile = staticmethod(default_tile)
    space = staticmethod(space)

    def alternate_configs(self, p: ProblemDescription) -> list[dict]:
        return list(ALTERNATES)

    def problem_check(self, p: ProblemDescription) -> str | None:
        return f"K={p.k}: not a multiple of 8 (dy is read in 16-byte runs of channels)" if p.k % 8 else None

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        size = planes(p, cfg) * slices(p) * 16 * m_blocks(p) * ncol(p) * 4
        return ceil_div(size, WS_ALIGN) * WS_ALIGN

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        mb, npl, ns = m_blocks(p), planes(p, cfg), slices(p)
        mac = {**problem_macros(p), "TH": cfg["TH"], "TW": cfg["TW"], "MB": mb, "MIN_BLOCKS": cfg["OCC"],
               "PLANES": npl, "RED_WARPS": RED_WARPS}
        mac = tuple((k, str(v)) for k, v in mac.items())
        main = KernelInfo(self.source, self.kernel_name, (npl, ns, 1), (THREADS, 1, 1), macros=mac)
        red = KernelInfo(self.source, "igemm_small_c_wrw_reduce", (ceil_div(16 * mb * ncol(p), 32), ns, 1),
                         (RED_WARPS * 32, 1, 1), macros=mac)
        smem = smem_bytes(p, cfg)
        ws = self.workspace_bytes(p, cfg)
        sid = self.id

        def factory(kernels):
            kmain = kernels[0]
            if smem > SMEM_STATIC:
                kmain.max_dynamic_shared_size_bytes = smem
            lmain = Launch(kmain, main.grid, main.block, (PTR, PTR, PTR), shared_mem=smem)
            lred = Launch(kernels[1], red.grid, red.block, (PTR, PTR))

            def invoker(a, b, out, workspace, stream):
                if (a | workspace) & 15 or b & 1 or out & 1 or not workspace:
                    raise ValueError(f"{sid}: dy and the workspace ({ws} bytes) must be 16-byte aligned, x and dw "
                                     f"2-byte aligned (got {a:#x}, {b:#x}, {out:#x}, workspace {workspace:#x})")
                lmain(stream, a, b, workspace)
                lred(stream, workspace, out)
            return with_recipe(invoker, [(lmain, ((A_ROLE, 0), (B, 0), (WS, 0))), (lred, ((WS, 0), (OUT, 0)))],
                               (16, 2, 2, 16), True)

        return ConvSolution(self.id, [main, red], ws, factory, cfg)
