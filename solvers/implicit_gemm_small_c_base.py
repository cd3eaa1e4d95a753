"""Implicit GEMM for few input channels (the RGB first layer of a CNN, C <= 4): shared planning of
kernels_src/implicit_gemm_small_c_{fwd,wrw}.cu. FP16/BF16 with FP32 accumulation on mma.sync m16n8k16 tensor cores
(sm_80 and later), channels-last x and y, KYXC w, 2D, groups = 1.

The general implicit-GEMM kernels reduce over channel-major K tiles and need C % 8 == 0 (the Hopper family) or gather
2-byte elements one at a time; these reduce (forward) or produce (backward weights) filter taps of 4 channels each (C
padded to 4 with zero weights), and each block stages the input patch its tile of output pixels reads once in shared
memory, so the padded reduction is Y*X*4 wide instead of rounding C*Y*X up to channel tiles.

Tiles: TH x TW output pixels of one image (TW a multiple of 16: 16 consecutive pixels of a tile row are one m16
block of the forward GEMM, one k16 step of the backward-weights GEMM). Blocks are persistent over the tiles (grid.x =
the SMs x the blocks an SM runs, at most the tiles)."""

from __future__ import annotations

from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, Solver, ceil_div, not_applicable

from .implicit_gemm_hopper_base import SMEM_LIMIT, device_arch

MAX_C = 4
SM_SMEM = 228 * 1024        # shared memory of an SM (sm_90), 1 KiB of it reserved per block


def taps(p: ProblemDescription) -> int:
    return p.filter_size[0] * p.filter_size[1]


def patch(p: ProblemDescription, th: int, tw: int) -> tuple[int, int]:
    """(rows, columns) of the input patch a TH x TW tile of output pixels reads."""
    (fy, fx), (sy, sx), (dy, dx) = p.filter_size, p.strides, p.dilations
    return (th - 1) * sy + (fy - 1) * dy + 1, (tw - 1) * sx + (fx - 1) * dx + 1


def tiles(p: ProblemDescription, cfg) -> int:
    ho, wo = p.out_size
    return p.n * ceil_div(ho, cfg["TH"]) * ceil_div(wo, cfg["TW"])


def fits(smem: int, blocks: int) -> bool:
    """Whether ``blocks`` blocks of ``smem`` bytes of dynamic shared memory fit an SM, and one fits a block."""
    return smem <= SMEM_LIMIT and blocks * (smem + 1024) <= SM_SMEM


class ImplicitGemmSmallCBase(Solver):
    """Common applicability, configs and find configs of the small-C solvers; a subclass names its tile check
    (``tile_ok``), default tile (``default_tile``) and config space (``space``): functions of the problem (and
    config)."""

    family = "implicit_gemm_small_c"
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    dtypes = frozenset({"FP16", "BF16"})
    tunable = True
    source = ""
    kernel_name = ""
    config_keys: tuple[str, ...] = ()

    @property
    def kernel_files(self):
        return (self.source, "common.cuh")

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        arch = device_arch()
        if arch is not None and int(arch[3:].rstrip("a")) < 80:
            return not_applicable(f"device {arch}: mma.sync m16n8k16 for FP16/BF16 needs sm_80 or later")
        if p.spatial_dims != 2:
            return not_applicable(f"{p.spatial_dims}D not supported (2D only)")
        if p.layouts != ("NHWC", "NHWC", "NHWC"):
            return not_applicable(f"layouts {'/'.join(p.layouts)} not supported (NHWC x, w and y only)")
        if p.groups != 1:
            return not_applicable(f"groups={p.groups} not supported (1 only)")
        if p.c > MAX_C:
            return not_applicable(f"C={p.c}: more than {MAX_C} input channels (the general implicit GEMMs take those)")
        if max(p.in_size) >= 2**24 or max(p.out_size) >= 2**24:
            return not_applicable(f"spatial size {p.in_size} too large for 32-bit patch positions")
        extra = self.problem_check(p)
        if extra is not None:
            return not_applicable(extra)
        if not self.tile_ok(p, self.default_config(p)):
            return not_applicable(f"filter {p.filter_size} with strides {p.strides} and dilations {p.dilations}: "
                                  "the default tile's input patch does not fit shared memory")
        return APPLICABLE

    # a find measures the default at once and ``alternates`` later (in the background where it may leave work there)
    configs_now = 1
    ALTERNATES = 3

    def find_configs(self, problem: ProblemDescription, limit: int | None = None) -> list:
        """The default config (None), then up to ALTERNATES of ``alternate_configs`` that are valid and not the default:
        configs within a few percent of the fastest on the first layers measured (bench/results/session-stem/)."""
        if limit is not None and limit <= 1:
            return [None]
        p = problem.as_conv()
        if not self.applicability(p):
            return [None]
        d = self.default_config(p)
        alts = [c for c in self.alternate_configs(p) if c != d and self.is_valid_config(p, c)][:self.ALTERNATES]
        return ([None] + alts)[:limit]

    def alternate_configs(self, p: ProblemDescription) -> list[dict]:
        """The configs a find measures after the default, in order (a subclass's list)."""
        return []

    def problem_check(self, p: ProblemDescription) -> str | None:
        """A direction's own guard (the reason it rejects ``p``), or None."""
        return None

    tile_ok = default_tile = space = None       # the subclass's functions (staticmethods)

    def default_config(self, problem: ProblemDescription) -> dict:
        return self.default_tile(problem.as_conv())

    def config_space(self, problem: ProblemDescription):
        yield from self.space(problem.as_conv())

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        if not isinstance(config, dict) or set(config) != set(self.config_keys):
            return False
        if any(not isinstance(v, int) or isinstance(v, bool) for v in config.values()):
            return False
        return self.tile_ok(problem.as_conv(), config)

    def config_of(self, p: ProblemDescription, config) -> dict:
        cfg = dict(config) if config else self.default_config(p)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        return cfg
