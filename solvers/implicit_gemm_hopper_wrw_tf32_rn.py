"""Hopper implicit GEMM, backward weights with TF32 math and operands rounded to nearest
(kernels_src/implicit_gemm_hopper_wrw_tf32_rn.cu): FP32 data, math="tf32", NHWC, groups = 1. M = K, N = Y*X*C, the
reduction over the N*Ho*Wo output pixels. TF32 wgmma reads no transposed operand, so the copy engine lands dy and x
MN-major and the consumer warpgroups move them into the wgmma's forms themselves, rounding each element by cvt.rna on
the way: A (dy) as register fragments, B (x's im2col) transposed into a K-major shared tile. C % 32 == 0 (an im2col box
is one tap's 32 channels), K % 4 == 0, fewer than 2^31 output pixels (32-bit box coordinates).

Tunables: WG_M (m64 blocks of output channels a tile: 1, 2), BN (columns of dw a tile, half to each consumer: 128,
256), STAGES (copy-engine buffers), SPLITK (requested chunks of the reduction, grid.y; the kernel runs the effective
count, each chunk an even number of 32-pixel K tiles, its FP32 partial tile summed in order by a second kernel)."""

from __future__ import annotations

import math

from miofind import tma
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, ceil_div, not_applicable

from .implicit_gemm_base import INT32_MAX, SM_COUNT
from .implicit_gemm_hopper_base import (ARCH, SMEM_LIMIT, WS_ALIGN, ImplicitGemmHopperBase, problem_macros, split_factory,
                                        split_tries, strict_fp32, tma_fits, x_im2col)
from .implicit_gemm_hopper_wrw import wrw_shape

KEYS = ("WG_M", "BN", "STAGES", "SPLITK")
BJ = 32                 # reduction (output pixel) rows of a K tile: one 128-byte K-major row of FP32
MAX_SPLITK = 256
MIN_JT_PER_SPLIT = 4    # a chunk spans at least 4 K tiles
RED_BLOCK = 256
THREADS = 384           # two consumer warpgroups and the producer's
TF32_US_PER_MFLOP = 1 / 1.6     # a block's TF32 wgmma rate, about 1.6 TFLOP/s an SM with the transposes (estimate)


def j_tiles(p: ProblemDescription) -> int:
    return ceil_div(wrw_shape(p)[2], BJ)


def split_geometry(p: ProblemDescription, splitk: int) -> tuple[int, int]:
    """(effective chunks, K tiles per chunk) for a requested SPLITK: chunks of an even count of K tiles (the kernel
    takes them in pairs), none empty."""
    jt = j_tiles(p)
    per = ceil_div(jt, max(1, min(splitk, jt)))
    per += per & 1
    return ceil_div(jt, per), per


def smem_bytes(cfg) -> int:
    """STAGES x (BM + BN) MN-major rows of 32 j (128 bytes), each consumer's two K-major B tiles (BN / 2 rows of 128
    bytes), and 1 KiB to align to the swizzle's period."""
    bm = 64 * cfg["WG_M"]
    return cfg["STAGES"] * (bm + cfg["BN"]) * 128 + 2 * cfg["BN"] * 128 + 1024


def tiles(p: ProblemDescription, cfg) -> int:
    m, n, _ = wrw_shape(p)
    return ceil_div(m, 64 * cfg["WG_M"]) * ceil_div(n, cfg["BN"])


def config_ok(p: ProblemDescription, cfg) -> bool:
    wm, bn, st, sk = (cfg[k] for k in KEYS)
    if wm not in (1, 2) or bn not in (128, 256) or not 2 <= st <= 8 or not 1 <= sk <= MAX_SPLITK:
        return False
    # 2 x STAGES mbarriers are static shared memory beside the dynamic buffers
    if smem_bytes(cfg) + 16 * st > SMEM_LIMIT:
        return False
    if p is None:
        return True
    eff, _ = split_geometry(p, sk)
    m, n, _ = wrw_shape(p)
    return eff <= 65535 and (eff == 1 or eff * m * n < 2**40)


def most_stages(wm: int, bn: int, cap: int = 4) -> dict:
    """The tile (unsplit) with the most stages that fit, at most ``cap``."""
    return max((c for c in ({"WG_M": wm, "BN": bn, "STAGES": st, "SPLITK": 1} for st in range(2, cap + 1))
                if config_ok(None, c)), key=lambda c: c["STAGES"])


def default_split(p: ProblemDescription, cfg) -> int:
    """The split of least estimated time: waves of blocks (one an SM) times each block's K tiles plus 2 of pipeline
    fill, at TF32_US_PER_MFLOP, plus the partial tiles' round trip (written and read back, 3 TB/s) and the reduce
    launch."""
    m, n, _ = wrw_shape(p)
    jt, nt = j_tiles(p), tiles(p, cfg)
    tile_us = 64 * cfg["WG_M"] * cfg["BN"] * BJ * 2 / 1e6 * TF32_US_PER_MFLOP
    best = (math.inf, 1)
    for s in range(1, max(1, min(jt // MIN_JT_PER_SPLIT, MAX_SPLITK)) + 1):
        eff, per = split_geometry(p, s)
        if eff != s:
            continue
        est = ceil_div(nt * eff, SM_COUNT) * (per + 2) * tile_us + (eff * m * n * 8 / 3e6 + 3 if eff > 1 else 0)
        best = min(best, (est, s))
    return best[1]


def default_tile(p: ProblemDescription) -> dict:
    """Two m64 blocks of output channels where there are more than 64, 256 columns a tile (128 a consumer) where there
    are more than 128, the most stages that fit up to 4 (3 for 128 x 256), at the estimated split. From the sweep of
    every 3-, 4- and 6-stage config on ResNet-50's 22 W layers and 15 non-ResNet ones at N = 32, H200: 128 x 256 at 3
    stages was the fastest tile on 21 of the 37, 128 x 128 at 4 on 8; 4 stages beat 6 (bench/results/session-nov29a/
    call2/)."""
    m, n, _ = wrw_shape(p)
    cfg = most_stages(2 if m > 64 else 1, 256 if n > 128 else 128)
    return dict(cfg, SPLITK=default_split(p, cfg))


def space(p: ProblemDescription):
    """Every tile and stage count, each at the splits a tuning tries (split_tries around default_split)."""
    for wm in (1, 2):
        for bn in (128, 256):
            for st in range(2, 9):
                cfg = {"WG_M": wm, "BN": bn, "STAGES": st, "SPLITK": 1}
                if not config_ok(p, cfg):
                    continue
                yield from split_tries(cfg, default_split(p, cfg), lambda s: split_geometry(p, s)[0],
                                       lambda c: config_ok(p, c))


class ImplicitGemmHopperWrwTf32Rn(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperWrwTf32Rn"
    version = 1
    algorithm = "miopenConvolutionBwdWeightsAlgoImplicitGEMM"
    directions = frozenset("W")
    dtypes = frozenset({"FP32"})
    source = "implicit_gemm_hopper_wrw_tf32_rn.cu"
    kernel_name = "igemm_hopper_wrw_tf32_rn"
    config_keys = KEYS
    tile_ok = staticmethod(config_ok)
    legacy_defaults = {}

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        strict = strict_fp32(p)
        if strict is not None:
            return strict
        if not tma_fits(p):
            return not_applicable(f"{p.c} input channels: the copy engine's im2col boxes need a multiple of 32 and "
                                  "im2col offsets in range")
        m, n, j = wrw_shape(p)
        if m * n >= INT32_MAX:
            return not_applicable(f"filter of {m * n} elements: 2^31 or more")
        if j + BJ >= INT32_MAX:
            return not_applicable(f"reduction of {j} output pixels: 2^31 or more (32-bit box coordinates)")
        return APPLICABLE

    def default_config(self, problem: ProblemDescription) -> dict:
        return default_tile(problem.as_conv())

    def alternatives(self, p: ProblemDescription) -> list[dict]:
        """The other three tiles, each at its most stages (up to 4) and its estimated split."""
        d = self.default_config(p)
        out = []
        for wm, bn in ((1, 128), (2, 128), (1, 256), (2, 256)):
            cfg = most_stages(wm, bn)
            cfg = dict(cfg, SPLITK=default_split(p, cfg))
            if (wm, bn) != (d["WG_M"], d["BN"]) and self.is_valid_config(p, cfg):
                out.append(cfg)
        return out

    def config_space(self, problem: ProblemDescription):
        yield from space(problem.as_conv())

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        eff, _ = split_geometry(p, cfg["SPLITK"])
        m, n, _ = wrw_shape(p)
        return 0 if eff == 1 else ceil_div(eff * m * n * 4, WS_ALIGN) * WS_ALIGN

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.checked_config(p, config)
        eff, per = split_geometry(p, cfg["SPLITK"])
        m, n, j = wrw_shape(p)
        mac = {**problem_macros(p), "WG_M": cfg["WG_M"], "BN": cfg["BN"], "STAGES": cfg["STAGES"], "SPLITK": eff,
               "JT_PER": per, "RED_BLOCK": RED_BLOCK}
        mac = tuple((k, str(v)) for k, v in mac.items())
        smem = smem_bytes(cfg)
        main = KernelInfo(self.source, self.kernel_name, (tiles(p, cfg), eff, 1), (THREADS, 1, 1), macros=mac,
                          options=(f"-arch={ARCH}",))
        kernels = [main]
        if eff > 1:
            kernels.append(KernelInfo(self.source, "igemm_hopper_wrw_tf32_reduce", (ceil_div(m * n // 4, RED_BLOCK), 1, 1),
                                      (RED_BLOCK, 1, 1), macros=mac, options=(f"-arch={ARCH}",)))
        ws_total = self.workspace_bytes(p, cfg)
        # dy as a dense J x K matrix (32 x 32 boxes), x's im2col map (32 pixels x 32 channels a box)
        maps = (tma.MapCache(tma.TiledSpec(p.dtype, (m, j), (m * 4,), (32, BJ))), tma.MapCache(x_im2col(p, BJ)))

        factory = split_factory(self.id, main, kernels[1] if eff > 1 else None, maps, smem, ws_total)
        return ConvSolution(self.id, kernels, ws_total, factory, cfg)
