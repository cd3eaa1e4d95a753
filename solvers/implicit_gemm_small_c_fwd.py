"""Implicit GEMM for few input channels, forward (kernels_src/implicit_gemm_small_c_fwd.cu; shared planning in
implicit_gemm_small_c_base.py): GEMM rows = output pixels, columns = output channels, reduction over Y*X taps of 4
channels in k16 steps, every A fragment one 32-bit load of the block's staged input patch.

Tunables: TH x TW output pixels a block tile (TW in 16, 32, 64), MW m16 blocks a warp (1 or 2; 4 or 8 warps a
block), STORE16 (1: y stored as 16-byte runs of 8 channels after a transpose within each quad of threads; 0: as the
4-byte channel pairs the accumulators hold). The block takes BN = min(64, K rounded up to 8) output channels
(K > 64: grid.y blocks of 64); grid.x = the SMs x the blocks an SM holds (``resident``), at most the tiles."""

from __future__ import annotations

from miofind.launch import A, B, OUT, PTR, Launch, with_recipe
from miofind.problem import ProblemDescription
from miofind.solver import ConvSolution, KernelInfo, ceil_div

from .implicit_gemm_hopper_base import SMEM_STATIC, problem_macros, sm_count
from .implicit_gemm_small_c_base import ImplicitGemmSmallCBase, fits, patch, taps, tiles

KEYS = ("TH", "TW", "MW", "STORE16")


def k_steps(p: ProblemDescription) -> int:
    """k16 steps of the tap-major reduction: Y*X taps of 4 channels."""
    return ceil_div(taps(p) * 4, 16)


def n_blocks(p: ProblemDescription) -> int:
    """n8 blocks a block multiplies: K rounded up to 8, at most 64 channels."""
    return min(8, ceil_div(p.k, 8))


def warps(cfg) -> int:
    return cfg["TH"] * cfg["TW"] // (16 * cfg["MW"])


def weight_pitch(p: ProblemDescription) -> int:
    """Words a weight row: 8 * KT, plus 8 where KT is even (the kernel's WP: WP % 16 == 8)."""
    kt = k_steps(p)
    return kt * 8 + (0 if kt % 2 else 8)


def smem_bytes(p: ProblemDescription, cfg) -> int:
    """BN weight rows of WP words, and the patch at 8 bytes (4 channels) a position."""
    ph, pw = patch(p, cfg["TH"], cfg["TW"])
    return n_blocks(p) * 8 * weight_pitch(p) * 4 + ph * pw * 8


def min_blocks(cfg) -> int:
    """Blocks per SM the register allocation allows (``__launch_bounds__``): 128 registers a thread."""
    return 2 if warps(cfg) == 8 else 4


def resident(p: ProblemDescription, cfg) -> int:
    """Blocks an SM holds at once: min_blocks, fewer where their shared memory does not fit (0: not one)."""
    return max((b for b in range(min_blocks(cfg), 0, -1) if fits(smem_bytes(p, cfg), b)), default=0)


def config_ok(p: ProblemDescription, cfg) -> bool:
    th, tw, mw, st = (cfg[k] for k in KEYS)
    if tw not in (16, 32, 64) or mw not in (1, 2) or th < 1 or (th * tw) % (16 * mw) or warps(cfg) not in (4, 8):
        return False
    if st not in (0, 1):
        return False
    return resident(p, cfg) > 0


def default_tile(p: ProblemDescription) -> dict:
    """4 warps of two m16 blocks over 8 x 16 pixels: within 3% of each layer's fastest tile at N = 32 on the five
    first layers of bench/results/session-stem/call1 (1.015 of the fastest in geomean; 8 x 32 had 1.18). 16-byte
    stores of y at stride 1 (VGG-16's and U-Net's 3x3, whose y is 4 to 8 times the strided layers': 0.76-0.82 of the
    4-byte stores' time, call 3), 4-byte ones otherwise (the 16-byte ones 1.03-1.38 of their time there)."""
    return {"TH": 8, "TW": 16, "MW": 2, "STORE16": int(all(v == 1 for v in p.strides))}


ALTERNATES = ({"TH": 4, "TW": 32, "MW": 2}, {"TH": 16, "TW": 16, "MW": 2}, {"TH": 8, "TW": 16, "MW": 1},
              {"TH": 2, "TW": 64, "MW": 2})


def alternates(p: ProblemDescription) -> list[dict]:
    """The ALTERNATES tiles at the default's store width, then the default tile at the other."""
    d = default_tile(p)
    return [dict(c, STORE16=d["STORE16"]) for c in ALTERNATES] + [dict(d, STORE16=1 - d["STORE16"])]


def space(p: ProblemDescription):
    """Every (TH, TW, MW) of 4 or 8 warps at both store widths, valid ones, the default first."""
    dflt = default_tile(p)
    if config_ok(p, dflt):
        yield dflt
    for st in (dflt["STORE16"], 1 - dflt["STORE16"]):
        for tw in (16, 32, 64):
            for mw in (2, 1):
                for wp in (8, 4):
                    cfg = {"TH": wp * 16 * mw // tw, "TW": tw, "MW": mw, "STORE16": st}
                    if cfg["TH"] >= 1 and cfg != dflt and config_ok(p, cfg):
                        yield cfg


class ImplicitGemmSmallCFwd(ImplicitGemmSmallCBase):
    id = "ConvImplicitGemmSmallCFwd"
    directions = frozenset("F")
    source = "implicit_gemm_small_c_fwd.cu"
    kernel_name = "igemm_small_c_fwd"
    config_keys = KEYS
    tile_ok = staticmethod(config_ok)
    default_tile = staticmethod(default_tile)
    space = staticmethod(space)

    def alternate_configs(self, p: ProblemDescription) -> list[dict]:
        return alternates(p)

    def problem_check(self, p: ProblemDescription) -> str | None:
        return f"K={p.k}: odd (y is written in channel pairs)" if p.k % 2 else None

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        nb = n_blocks(p)
        mac = {**problem_macros(p), **cfg, "NB": nb, "MIN_BLOCKS": min_blocks(cfg)}
        mac = tuple((k, str(v)) for k, v in mac.items())
        grid = (min(tiles(p, cfg), sm_count() * resident(p, cfg)), ceil_div(p.k, nb * 8), 1)
        kinfo = KernelInfo(self.source, self.kernel_name, grid, (warps(cfg) * 32, 1, 1), macros=mac)
        smem = smem_bytes(p, cfg)
        sid = self.id
        out_align = 16 if p.k % 8 == 0 else 4     # y's 8-channel runs are stored as 16 bytes where K % 8 == 0

        def factory(kernels):
            kern = kernels[0]
            if smem > SMEM_STATIC:
                kern.max_dynamic_shared_size_bytes = smem
            launch = Launch(kern, kinfo.grid, kinfo.block, (PTR, PTR, PTR), shared_mem=smem)

            def invoker(a, b, out, workspace, stream):
                if (a | b) & 1 or out % out_align:
                    raise ValueError(f"{sid}: x and w must be 2-byte aligned and y {out_align}-byte aligned "
                                     f"(got {a:#x}, {b:#x}, {out:#x})")
                launch(stream, a, b, out)
            return with_recipe(invoker, [(launch, ((A, 0), (B, 0), (OUT, 0)))], (2, 2, out_align, 1))

        return ConvSolution(self.id, [kinfo], 0, factory, cfg)
