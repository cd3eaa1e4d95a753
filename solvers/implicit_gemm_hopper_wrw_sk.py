"""Hopper implicit GEMM, backward weights, stream-K (kernels_src/implicit_gemm_hopper_wrw_sk.cu): the wgmma GEMM
of ConvImplicitGemmHopperWrw (its copy-engine, producer-warpgroup path), with the tiles' j-tile iterations
spread evenly over one block per SM instead of whole tiles (or fixed split chunks) per block: no partial wave
however few the tiles. Split tiles are summed in block order by a programmatic dependent fix-up kernel
(deterministic). FP16/BF16, NHWC, groups = 1, C % 64 == 0 (the copy engine's im2col boxes), sm_90a.

Tunables: BM (64 x WGS x 1 or 2), BN (64, 128, 256), WGS (1 or 2 consumer warpgroups), STAGES (3-6). The grid is
the device's SM count (at most the work units)."""

from __future__ import annotations

from miofind import tma
from miofind.launch import MAP, PTR, Launch, with_recipe
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, ceil_div, not_applicable

from .implicit_gemm_base import INT32_MAX
from .implicit_gemm_hopper_base import (ALIGN, ARCH, SMEM_STATIC, ImplicitGemmHopperBase, check_aligned, problem_macros,
                                        recipe_steps, sm_count, tma_fits, x_im2col)
from .implicit_gemm_hopper_wrw import BJ, RED_GROUPS, WS_ALIGN, config_ok as wrw_config_ok, j_tiles, smem_bytes, tiles, wrw_shape

KEYS = ("BM", "BN", "WGS", "STAGES")
FIX_BLOCK = 256
# tiles (BM, BN, WGS) a find measures beside the default, at 4 stages
ALTERNATE_TILES = ((64, 128, 1), (128, 256, 2), (256, 128, 2))


def full_config(cfg) -> dict:
    """``cfg`` as a ConvImplicitGemmHopperWrw config: unsplit, no cluster, the producer warpgroup's copy engine."""
    return dict(cfg, SPLITK=1, CLUSTER=1, WSPEC=1, TMA=1)


def units(p: ProblemDescription, cfg) -> int:
    """Work units: output tiles x 64-deep j tiles."""
    return tiles(p, cfg) * j_tiles(p)


def grid(p: ProblemDescription, cfg, sms: int | None = None) -> int:
    """Blocks: one per SM (the copy-engine producer path runs one block per SM), at most the units."""
    return min(sms or sm_count(), units(p, cfg))


def config_ok(p: ProblemDescription, cfg) -> bool:
    return all(isinstance(cfg.get(k), int) for k in KEYS) and wrw_config_ok(p, full_config(cfg)) and \
        (cfg["BM"] * cfg["BN"] // 2) % FIX_BLOCK == 0


def workspace(p: ProblemDescription, cfg, sms: int | None = None) -> int:
    """Two FP32 partial tiles per block (its first and its last tile)."""
    return ceil_div(2 * grid(p, cfg, sms) * cfg["BM"] * cfg["BN"] * 4, WS_ALIGN) * WS_ALIGN


def default_tile(p: ProblemDescription) -> dict:
    """128 x 128 tiles of two consumer warpgroups (64 x 128 of one for K <= 64; BN 64 for Y*X*C <= 64): with every
    SM busy whatever the tile count, the larger tile moves fewer bytes per MMA."""
    m, n, _ = wrw_shape(p)
    bn = 128 if n > 64 else 64
    return {"BM": 64, "BN": bn, "WGS": 1, "STAGES": 4} if m <= 64 else {"BM": 128, "BN": bn, "WGS": 2, "STAGES": 4}


def space(p: ProblemDescription):
    m, n, _ = wrw_shape(p)
    for bm in (64, 128, 256):
        for bn in (64, 128, 256):
            if bn > max(64, 2 * n) or bm > max(64, 2 * m):
                continue
            for wgs in (1, 2):
                for st in range(3, 7):
                    cfg = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st}
                    if config_ok(p, cfg):
                        yield cfg


class ImplicitGemmHopperWrwStreamK(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperWrwStreamK"
    version = 1
    algorithm = "miopenConvolutionBwdWeightsAlgoImplicitGEMM"
    directions = frozenset("W")
    source = "implicit_gemm_hopper_wrw_sk.cu"
    kernel_name = "igemm_hopper_wrw_sk"
    config_keys = KEYS
    tile_ok = staticmethod(config_ok)
    legacy_defaults = {}

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        m, n, j = wrw_shape(p)
        if not tma_fits(p):
            return not_applicable(f"C={p.c}: the copy engine's im2col boxes need C % 64 == 0 and im2col-sized fields")
        if m * n >= INT32_MAX:
            return not_applicable(f"filter of {m * n} elements: 2^31 or more")
        if j >= INT32_MAX:
            return not_applicable(f"reduction of {j} output pixels: 2^31 or more (32-bit box coordinates)")
        return APPLICABLE

    def default_config(self, problem: ProblemDescription) -> dict:
        return default_tile(problem.as_conv())

    def alternatives(self, p: ProblemDescription) -> list[dict]:
        """ALTERNATE_TILES at 4 stages, where valid and not the default."""
        d = self.default_config(p)
        alts = ({"BM": bm, "BN": bn, "WGS": wgs, "STAGES": 4} for bm, bn, wgs in ALTERNATE_TILES)
        return [c for c in alts if c != d and self.is_valid_config(p, c)]

    def config_space(self, problem: ProblemDescription):
        yield from space(problem.as_conv())

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        p = problem.as_conv()
        return workspace(p, self.config_of(p, config))

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        g = grid(p, cfg)
        mac = {**problem_macros(p), "BM": cfg["BM"], "BN": cfg["BN"], "WGS": cfg["WGS"], "STAGES": cfg["STAGES"],
               "WSPEC": 1, "TMA": 1, "SK_GRID": g, "FIX_BLOCK": FIX_BLOCK,
               "RED_GROUPS": RED_GROUPS}
        mac = tuple((k, str(v)) for k, v in mac.items())
        smem = smem_bytes(full_config(cfg))
        m, n, jj = wrw_shape(p)
        opts = (f"-arch={ARCH}",)
        main = KernelInfo(self.source, self.kernel_name, (g, 1, 1), ((cfg["WGS"] + 1) * 128, 1, 1), macros=mac,
                          options=opts)
        fix = KernelInfo(self.source, "igemm_hopper_wrw_sk_fix",
                         (tiles(p, cfg), cfg["BM"] * cfg["BN"] // 2 // FIX_BLOCK, 1), (FIX_BLOCK, 1, 1), macros=mac,
                         options=opts)
        ws_total = workspace(p, cfg)
        sid = self.id
        # dy as a dense J x K matrix (64 x 64 boxes), x's im2col map (64 pixels a box)
        maps = (tma.MapCache(tma.TiledSpec(p.dtype, (m, jj), (m * 2,), (64, BJ))), tma.MapCache(x_im2col(p, BJ)))

        def factory(kerns):
            kmain = kerns[0]
            if smem > SMEM_STATIC:
                kmain.max_dynamic_shared_size_bytes = smem
            raw = Launch(kmain, main.grid, main.block, (PTR, PTR, PTR, PTR, MAP, MAP), shared_mem=smem)
            lmain = raw.bind_maps(maps)
            # the fix-up waits on the device for the partial tiles (griddepcontrol.wait): a programmatic dependent
            lfix = Launch(kerns[1], fix.grid, fix.block, (PTR, PTR), pdl=True)

            def invoker(a, b, out, workspace, stream):
                if a % ALIGN or b % ALIGN or out % ALIGN:
                    check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
                if not workspace:
                    raise ValueError(f"{sid}: workspace of {ws_total} bytes required, got none")
                lmain(stream, a, b, out, workspace)
                lfix(stream, workspace, out)
            return with_recipe(invoker, recipe_steps(raw, lfix, maps), (ALIGN, ALIGN, ALIGN, 1), True)

        return ConvSolution(self.id, [main, fix], ws_total, factory, cfg)
