"""Hopper implicit GEMM, forward with TF32 math and operands rounded to nearest (kernels_src/
implicit_gemm_hopper_fwd_tf32_rn.cu): FP32 data, math="tf32". The wgmma reads an FP32 operand in shared memory truncated
to TF32, where cuDNN and cuBLAS round it (the truncating build, ConvImplicitGemmHopperFwd's IS_TF32, stays behind
MIOFIND_HOPPER_TF32). Here the im2col tile of x goes through registers, rounded by cvt.rna, into the register-A wgmma,
and w is read from a copy rounded first in the workspace (igemm_tf32_round). Persistent blocks, a copy-engine producer
warpgroup, consumer warpgroups on every tile; NHWC, C % 32 == 0 (a K tile is one tap's 32 channels, one im2col box),
K % 4 == 0. Tunables: WG_M (m64 blocks of output pixels a consumer warpgroup takes: 1, 2), BN (output channels a tile:
64, 128, 256), WN (2: both consumers on the same pixels, half the channels each), CW (consumer warpgroups: 2, or 1 in
256-thread blocks, two to an SM, for layers of few tiles) and STAGES."""

from __future__ import annotations

import itertools

from miofind import tma
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, ceil_div, not_applicable

from .implicit_gemm_hopper_base import (ARCH, SMEM_LIMIT, WS_ALIGN, ImplicitGemmHopperBase, filter_first_factory,
                                        gemm_shape, problem_macros, sm_count, strict_fp32, tma_fits, x_im2col)

KEYS = ("WG_M", "BN", "WN", "CW", "STAGES")
ROUND_BLOCK = 256
SMEM_SM = 228 * 1024     # an SM's shared memory: two CW = 1 blocks (and their 1 KiB reserves) where they fit
ROUND_NAME = "igemm_tf32_round"


def smem_bytes(cfg) -> int:
    """STAGES x (pixel rows + BN filter rows) of 128 bytes, and 1 KiB to align the first tile to the swizzle's 1024-byte
    period."""
    return cfg["STAGES"] * (pixels(cfg) + cfg["BN"]) * 128 + 1024


def pixels(cfg) -> int:
    """Output pixels of a tile: 64 WG_M per consumer warpgroup (WN = 1), or 64 WG_M shared by both (WN = 2)."""
    return 64 * cfg["WG_M"] * (2 if cfg["CW"] == 2 and cfg["WN"] == 1 else 1)


def threads(cfg) -> int:
    """The consumer warpgroups and the producer's."""
    return 128 * (cfg["CW"] + 1)


def config_ok(p, cfg) -> bool:
    wm, bn, wn, cw, st = cfg["WG_M"], cfg["BN"], cfg["WN"], cfg["CW"], cfg["STAGES"]
    # 2 x STAGES mbarriers are static shared memory beside the dynamic buffers
    return wm in (1, 2) and bn in (64, 128, 256) and wn in (1, 2) and cw in (1, 2) and \
        (wn == 1 or (bn >= 128 and cw == 2)) and (cw == 2 or (wm == 1 and bn <= 128)) and \
        wm * bn // wn <= 256 and 2 <= st <= 8 and smem_bytes(cfg) + 16 * st <= SMEM_LIMIT


def tiles(p, cfg) -> int:
    """Output tiles: pixel tiles x channel tiles."""
    m, n, _ = gemm_shape(p)
    return ceil_div(m, pixels(cfg)) * ceil_div(n, cfg["BN"])


def most_stages(wm: int, bn: int, wn: int = 1, cw: int = 2) -> dict:
    """The config of a tile with the most stages that fit."""
    return max((c for c in ({"WG_M": wm, "BN": bn, "WN": wn, "CW": cw, "STAGES": st} for st in range(2, 9))
                if config_ok(None, c)), key=lambda c: c["STAGES"])


def rounded_bytes(p: ProblemDescription) -> int:
    """The rounded copy of the (forward) filter: as many FP32 elements as w, 256-byte aligned."""
    _, n, k = gemm_shape(p)
    return ceil_div(n * k * 4, WS_ALIGN) * WS_ALIGN


def round_kernel(f: ProblemDescription, main: KernelInfo) -> KernelInfo:
    """The rounding of forward problem ``f``'s filter (w, its first argument) into its second: a kernel of ``main``'s
    source with ``main``'s macros and options, so that both come from one module (one compile)."""
    _, n, k = gemm_shape(f)
    return KernelInfo(main.source, ROUND_NAME, (max(1, min(ceil_div(n * k // 4, ROUND_BLOCK), sm_count() * 8)), 1, 1),
                      (ROUND_BLOCK, 1, 1), macros=main.macros, options=main.options)


class ImplicitGemmHopperFwdTf32Rn(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperFwdTf32Rn"
    version = 1
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    dtypes = frozenset({"FP32"})
    source = "implicit_gemm_hopper_fwd_tf32_rn.cu"
    kernel_name = "igemm_hopper_fwd_tf32_rn"
    config_keys = KEYS
    tile_ok = staticmethod(config_ok)
    legacy_defaults = {}

    def applicability(self, problem):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        strict = strict_fp32(p)
        if strict is not None:
            return strict
        f = self.forward_problem(p)      # the forward the kernel runs (backward data: its view)
        if not tma_fits(f):
            return not_applicable(f"{f.c} input channels of the forward kernel: the copy engine's K tiles need a "
                                  "multiple of 32 and im2col offsets in range")
        return APPLICABLE

    def default_config(self, problem) -> dict:
        """The tile by output channels and tile counts, read off the sweeps of every config on ResNet-50's N=32
        layers, F and backward data (bench/results/session-nov28d/call5/):
        - at most 64 channels: 128 x 64 tiles of both consumers;
        - 64 x 128 tiles of one consumer (two blocks an SM) where 128 x 128 tiles would give fewer than two to an SM,
          and either the channels are at most 256 or 128 x 256 tiles would give fewer than 0.7 to an SM;
        - 128 x 256 tiles for 2048 channels or a reduction of 32 K tiles or more (1024 deep);
        - else 128 x 128.
        Each with the most stages that fit."""
        f = self.forward_problem(problem.as_conv())
        m, n, k = gemm_shape(f)
        if n <= 64:
            return most_stages(1, 64)
        sms = sm_count()
        wide = tiles(f, {"WG_M": 1, "BN": 256, "WN": 1, "CW": 2})
        if tiles(f, {"WG_M": 1, "BN": 128, "WN": 1, "CW": 2}) < 2 * sms and (n <= 256 or wide < 0.7 * sms):
            return most_stages(1, 128, cw=1)
        if wide >= 0.7 * sms and (n >= 2048 or k // 32 >= 32):
            return most_stages(1, 256)
        return most_stages(1, 128)

    def alternatives(self, p) -> list[dict]:
        """The other tiles of the default's rule (and for at most 64 channels, one consumer's 64 x 64 tiles and 256 x 64
        ones), each at its most stages."""
        d = self.default_config(p)
        if gemm_shape(self.forward_problem(p))[1] <= 64:
            alts = [most_stages(1, 64, cw=1), most_stages(2, 64)]
        else:
            alts = [most_stages(1, 128), most_stages(1, 128, cw=1), most_stages(1, 256)]
        return [c for c in alts if c != d]

    def config_space(self, problem):
        for cw, wn, wm, bn, st in itertools.product((2, 1), (1, 2), (1, 2), (64, 128, 256), range(2, 9)):
            cfg = {"WG_M": wm, "BN": bn, "WN": wn, "CW": cw, "STAGES": st}
            if config_ok(None, cfg):
                yield cfg

    def workspace_bytes(self, problem, config=None) -> int:
        return rounded_bytes(self.forward_problem(problem.as_conv()))

    def forward_kernel(self, f, cfg) -> KernelInfo:
        """The kernel of forward problem ``f`` (backward data: its forward view) at a valid ``cfg``."""
        mac = {**problem_macros(f), **{k: cfg[k] for k in KEYS}}
        per_sm = 2 if cfg["CW"] == 1 and 2 * (smem_bytes(cfg) + 16 * cfg["STAGES"] + 1024) <= SMEM_SM else 1
        return KernelInfo(self.source, self.kernel_name, (min(tiles(f, cfg), per_sm * sm_count()), 1, 1),
                          (threads(cfg), 1, 1),
                          macros=tuple((k, str(v)) for k, v in mac.items()), options=(f"-arch={ARCH}",))

    def filter_maps(self, f, cfg) -> tuple:
        """x's im2col map (a tile's pixels a box) and the rounded filter's tiled map (32 x BN boxes of its KYXC
        rows)."""
        m, n, k = gemm_shape(f)
        return (tma.MapCache(x_im2col(f, pixels(cfg))),
                tma.MapCache(tma.TiledSpec(f.dtype, (k, n), (k * 4,), (32, cfg["BN"]))))

    def prologue(self, p: ProblemDescription, main: KernelInfo) -> KernelInfo:
        """The kernel writing the rounded filter into the workspace (w first, the workspace second), before ``main``."""
        return round_kernel(p, main)

    def get_solution(self, problem, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.checked_config(p, config)
        f = self.forward_problem(p)
        main = self.forward_kernel(f, cfg)
        first = self.prologue(p, main)
        smem = smem_bytes(cfg)
        maps = self.filter_maps(f, cfg)
        ws = self.workspace_bytes(p, cfg)
        # the kernel is the programmatic dependent of the filter's rounding: its producer waits for it
        factory = filter_first_factory(self.id, first, main, maps, smem, ws, pdl=True)
        return ConvSolution(self.id, [first, main], ws, factory, cfg)
