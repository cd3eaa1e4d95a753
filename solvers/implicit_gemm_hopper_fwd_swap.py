"""Hopper implicit GEMM, forward with the operands swapped (kernels_src/implicit_gemm_hopper_fwd_swap.cu): the filter
is wgmma's A operand (64 output channels a tile, the m64 rows) and BM output pixels its N side, for narrow layers
(K <= 128 output channels) whose GEMM N is too small for the forward kernel's tiles to multiply much per byte they read.
Persistent blocks, a copy-engine producer warpgroup, two consumer warpgroups: ping-pong over 64-channel tiles, or
(COOP) both on each 128-channel tile, 64 channels each, sharing its im2col box; FP16/BF16, NHWC, C % 64 == 0 (a K tile
is one tap's 64 channels, one im2col box). Tunables: BM (128, 256: the wgmma N), STAGES and COOP."""

from __future__ import annotations

from miofind import tma
from miofind.launch import A, B, MAP, OUT, PTR, Launch, with_recipe
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, ceil_div, not_applicable

from .implicit_gemm_hopper_base import (ALIGN, ARCH, SMEM_LIMIT, SMEM_STATIC, ImplicitGemmHopperBase, check_aligned,
                                        gemm_shape, problem_macros, sm_count, tma_fits, x_im2col)
from .implicit_gemm_base import strides5

KEYS = ("BM", "STAGES", "COOP")
MAX_K = 128             # output channels: beyond two 64-channel tiles the forward kernel's wide tiles read x once
THREADS = 384           # two consumer warpgroups and the producer


def channels(cfg) -> int:
    """Output channels of a tile: 64, or 128 with COOP."""
    return 64 * (1 + cfg.get("COOP", 0))


def smem_bytes(cfg) -> int:
    """STAGES x (BM pixel rows + 64 or 128 filter rows) of 128 bytes, two output tiles of BM x 64 elements, and 1 KiB to
    align the first tile to the swizzle's 1024-byte period."""
    return cfg["STAGES"] * (cfg["BM"] + channels(cfg)) * 128 + 2 * cfg["BM"] * 128 + 1024


def config_ok(p, cfg) -> bool:
    bm, st, coop = cfg["BM"], cfg["STAGES"], cfg["COOP"]
    # 2 x STAGES mbarriers are static shared memory beside the dynamic buffers
    return bm in (128, 256) and coop in (0, 1) and 2 <= st <= 8 and smem_bytes(cfg) + 16 * st <= SMEM_LIMIT


def tiles(p, cfg) -> int:
    """Output tiles: pixel tiles x channel tiles."""
    m, n, _ = gemm_shape(p)
    return ceil_div(m, cfg["BM"]) * ceil_div(n, channels(cfg))


def most_stages(bm: int, coop: int) -> dict:
    """The config of a tile with the most stages that fit."""
    return max((c for c in ({"BM": bm, "STAGES": st, "COOP": coop} for st in range(2, 9)) if config_ok(None, c)),
               key=lambda c: c["STAGES"])


class ImplicitGemmHopperFwdSwap(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperFwdSwap"
    version = 1
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    source = "implicit_gemm_hopper_fwd_swap.cu"
    kernel_name = "igemm_hopper_fwd_swap"
    config_keys = KEYS
    tile_ok = staticmethod(config_ok)
    legacy_defaults = {}

    def applicability(self, problem):
        base = super().applicability(problem)
        if not base:
            return base
        f = self.forward_problem(problem.as_conv())      # the forward the kernel runs (backward data: its view)
        if f.k > MAX_K:
            return not_applicable(f"{f.k} output channels of the forward kernel: more than {MAX_K} (this kernel is for "
                                  "narrow layers)")
        if not tma_fits(f):
            return not_applicable(f"{f.c} input channels of the forward kernel: the copy engine's K tiles need a "
                                  "multiple of 64 and im2col offsets in range")
        return APPLICABLE

    def default_config(self, problem) -> dict:
        """Ping-pong tiles: 256 pixels (the widest wgmma, the fewest operand bytes a multiply-add) with the most stages
        that fit, or 128 pixels where 256-pixel tiles would not give every SM one. Measured on an H200 on U-Net's,
        VGG-16's and ResNet-50's narrow layers at N=32 (bench/results/session-nov28c/call3/): the cooperative tiles
        (fewer stages fit) won on 3 of their 15 layers of more than 64 channels, by 1.5-12%, tied on 2 and lost by up to
        10% on the others, so they are an alternate."""
        p = problem.as_conv()
        return most_stages(256 if tiles(p, {"BM": 256, "COOP": 0}) >= sm_count() else 128, 0)

    def alternatives(self, p) -> list[dict]:
        """The other tile width, and for more than 64 output channels the cooperative tiles of the default's width,
        each at its most stages."""
        d = self.default_config(p)
        alts = [most_stages(384 - d["BM"], 0)]
        if gemm_shape(self.forward_problem(p))[1] > 64:
            alts.append(most_stages(d["BM"], 1))
        return alts

    def config_space(self, problem):
        narrow = gemm_shape(self.forward_problem(problem.as_conv()))[1] <= 64    # one 64-channel tile: no COOP
        for coop in ((0,) if narrow else (0, 1)):
            for bm in (128, 256):
                for st in range(2, 9):
                    cfg = {"BM": bm, "STAGES": st, "COOP": coop}
                    if config_ok(None, cfg):
                        yield cfg

    def workspace_bytes(self, problem, config=None) -> int:
        return 0

    def forward_kernel(self, f, cfg) -> KernelInfo:
        """The swapped-operand kernel of forward problem ``f`` (backward data: its forward view) at a valid ``cfg``."""
        mac = {**problem_macros(f), "BM": cfg["BM"], "STAGES": cfg["STAGES"]}
        if cfg["COOP"]:
            mac["COOP"] = 1
        return KernelInfo(self.source, self.kernel_name, (min(tiles(f, cfg), sm_count()), 1, 1), (THREADS, 1, 1),
                          macros=tuple((k, str(v)) for k, v in mac.items()), options=(f"-arch={ARCH}",))

    def get_solution(self, problem, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.checked_config(p, config)
        smem = smem_bytes(cfg)
        kernel = self.forward_kernel(p, cfg)
        grid = kernel.grid
        m, n, k = gemm_shape(p)
        # x's im2col map (BM pixels a box) and w's tiled map (64 x 64 or 64 x 128 boxes of its KYXC rows)
        maps = (tma.MapCache(x_im2col(p, cfg["BM"])),
                tma.MapCache(tma.TiledSpec(p.dtype, (k, n), (strides5(p.w_shape, p.layouts[1])[0] * 2,),
                                           (64, channels(cfg)))))
        sid = self.id

        def factory(kerns):
            kern = kerns[0]
            if smem > SMEM_STATIC:
                kern.max_dynamic_shared_size_bytes = smem
            launch = Launch(kern, grid, (THREADS, 1, 1), (PTR,) * 3 + (MAP,) * 2, shared_mem=smem)
            main = launch.bind_maps(maps)

            def invoker(a, b, out, workspace, stream):
                if a % ALIGN or b % ALIGN or out % ALIGN:
                    check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
                main(stream, a, b, out)
            steps = [(launch, ((A, 0), (B, 0), (OUT, 0)), ((A, 0, maps[0].spec), (B, 0, maps[1].spec)))]
            return with_recipe(invoker, steps, (ALIGN, ALIGN, ALIGN, 1), False)

        return ConvSolution(self.id, [kernel], 0, factory, cfg)

