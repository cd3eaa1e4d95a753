"""Hopper implicit GEMM (issue 19): wgmma.mma_async tensor-core kernels built for sm_90a.

Shared planning for kernels_src/implicit_gemm_hopper_*.cu: FP16/BF16 (FP32 accumulation),
channels-last 2D tensors, groups = 1, channel counts multiples of 8 (16-byte gathers of one tap's
channels). Both GEMM operands are staged K-major in 128-byte-swizzled shared memory by cp.async and
multiplied by WGS warpgroups issuing m64nBNk16 wgmma; sizes and strides are compile-time macros (one
build per problem, as the Ampere family, solvers/implicit_gemm_base.py). The kernels are built for
``sm_90a`` (wgmma exists on no other target) and apply only on a compute-capability 9.0 GPU; without
a visible GPU (CPU tools, CI's NVRTC compile) the device check is left to the run.

Tunables: BM (block rows, 64 x WGS x 1 or 2), BN (64, 128, 256: the wgmma N), WGS (1 or 2 consumer
warpgroups, every thread also loads), STAGES (shared-memory buffers, prefetch distance STAGES - 2),
PERSIST (1: N <= BN, persistent blocks with all of B resident in shared memory, streaming A).
"""

from __future__ import annotations

import functools
import math

from miofind.launch import PTR, Launch
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES, needs_int64

from .implicit_gemm_base import INT32_MAX, SM_COUNT, dims3, strides5

HEADER = "implicit_gemm_hopper.cuh"
ARCH = "sm_90a"
SMEM_LIMIT = 227 * 1024
SMEM_STATIC = 48 * 1024
BK = 64
KEYS = ("BM", "BN", "WGS", "STAGES", "PERSIST")
ALIGN = 16           # x and w are read, y written, in 16-byte chunks


@functools.lru_cache(maxsize=1)
def device_arch() -> str | None:
    """The current GPU's architecture (``sm_90``), or None where no GPU is visible."""
    from miofind.device import NoGPUError, current_device
    try:
        return current_device().arch
    except NoGPUError:
        return None


def gemm_shape(p: ProblemDescription) -> tuple[int, int, int]:
    """Forward (M, N, K) = (N*Ho*Wo, K, Y*X*C)."""
    return p.n * math.prod(p.out_size), p.k, p.c * math.prod(p.filter_size)


def ktiles(p: ProblemDescription) -> int:
    return ceil_div(gemm_shape(p)[2], BK)


def smem_bytes(p: ProblemDescription, cfg) -> int:
    """The kernel's dynamic shared memory, plus 1 KiB to align the first tile to the swizzle's
    1024-byte period: STAGES x (BM + BN) rows of 128 bytes; PERSIST: all K tiles of B, STAGES
    A buffers and the output tile (BM x (BN + 8) elements)."""
    bm, bn, st = cfg["BM"], cfg["BN"], cfg["STAGES"]
    if cfg["PERSIST"]:
        return (ktiles(p) * bn + st * bm) * 128 + bm * (bn + 8) * 2 + 1024
    return st * (bm + bn) * 128 + 1024


def blocks_per_sm(p: ProblemDescription, cfg) -> int:
    """Blocks per SM the kernel's register allocation must allow (``__launch_bounds__``): 2 when two
    blocks' shared memory fits an SM (228 KiB, 1 KiB reserved per block) and the accumulators
    leave room under the 128-register cap that two 256-thread blocks impose."""
    acc = cfg["BM"] // (64 * cfg["WGS"]) * cfg["BN"] // 2
    fits = 2 * (smem_bytes(p, cfg) + 1024) <= 228 * 1024
    return 2 if fits and (cfg["WGS"] == 1 or acc <= 64) else 1


def config_ok(p: ProblemDescription, cfg) -> bool:
    bm, bn, wgs, st, per = (cfg[k] for k in KEYS)
    if wgs not in (1, 2) or bn not in (64, 128, 256) or per not in (0, 1) or st not in range(3, 9 if per else 7):
        return False
    if bm % (64 * wgs) or bm // (64 * wgs) not in (1, 2) or (bm // (64 * wgs)) * bn > 256:
        return False
    if per and gemm_shape(p)[1] > bn:
        return False
    return smem_bytes(p, cfg) <= SMEM_LIMIT


@functools.lru_cache(maxsize=1)
def sm_count() -> int:
    """The current GPU's multiprocessor count (the H100 SXM's 132 where no GPU is visible)."""
    from miofind.device import NoGPUError, current_device
    try:
        return current_device().sm_count
    except NoGPUError:
        return SM_COUNT


def default_tile(p: ProblemDescription) -> dict:
    """Measured on the H100 (bench/results/hopper-igemm/): 128-row tiles of two warpgroups; BN = 64
    for N <= 64, or when 128 x 128 tiles would leave over half the SMs idle; else BN = 128, with 4
    stages when the grid is at most one wave (one block per SM) and 3 (two blocks per SM) beyond.
    PERSIST is left to tuning: it won by at most 6% where it applies, and lost on the large layer."""
    m, n, _ = gemm_shape(p)
    if m <= 64:
        return {"BM": 64, "BN": 64 if n <= 64 else 128, "WGS": 1, "STAGES": 4, "PERSIST": 0}
    blocks = ceil_div(m, 128) * ceil_div(n, 128)
    if n <= 64 or blocks < SM_COUNT // 2:
        return {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 4, "PERSIST": 0}
    return {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4 if blocks <= SM_COUNT else 3, "PERSIST": 0}


def space(p: ProblemDescription):
    m, n, _ = gemm_shape(p)
    for bm in (64, 128, 256):
        for bn in (64, 128, 256):
            if bn > max(64, 2 * n) or bm > max(64, 2 * m):
                continue
            for wgs in (1, 2):
                for per in (0, 1):
                    for st in range(3, 9 if per else 7):
                        cfg = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": per}
                        if config_ok(p, cfg):
                            yield cfg


def grid_of(p: ProblemDescription, cfg) -> int:
    """Blocks: every (M, N) tile, or for PERSIST at most as many as run at once."""
    m, n, _ = gemm_shape(p)
    tiles = ceil_div(m, cfg["BM"]) * ceil_div(n, cfg["BN"])
    return min(tiles, sm_count() * blocks_per_sm(p, cfg)) if cfg["PERSIST"] else tiles


def problem_macros(p: ProblemDescription) -> dict:
    """The macros every Hopper kernel takes from problem ``p``: data and index types, sizes, pads,
    strides, dilations, and the x/w/y element strides of its layouts."""
    isz, osz, fsz, pads, strides, dils = dims3(p)
    xs, ws, ys = (strides5(sh, lay) for sh, lay in zip((p.x_shape, p.w_shape, p.y_shape), p.layouts))
    return {
        "DATA_T": CUDA_TYPES[p.dtype], "INDEX_T": "long long" if needs_int64(p) else "int",
        "IS_BF16": int(p.dtype == "BF16"),
        "P_N": p.n, "P_C": p.c, "P_K": p.k,
        "P_HI": isz[1], "P_WI": isz[2], "P_HO": osz[1], "P_WO": osz[2], "P_Y": fsz[1], "P_X": fsz[2],
        "P_PH": pads[1], "P_PW": pads[2], "P_SH": strides[1], "P_SW": strides[2], "P_DH": dils[1], "P_DW": dils[2],
        "XS_N": xs[0], "XS_C": xs[1], "XS_H": xs[3], "XS_W": xs[4],
        "WS_K": ws[0], "WS_C": ws[1], "WS_Y": ws[3], "WS_X": ws[4],
        "YS_N": ys[0], "YS_C": ys[1], "YS_H": ys[3], "YS_W": ys[4],
    }


def macros(p: ProblemDescription, cfg) -> dict:
    return {**problem_macros(p), **{k: cfg[k] for k in KEYS}, "MIN_BLOCKS": blocks_per_sm(p, cfg)}


def forward_kernel(p: ProblemDescription, cfg, source: str, name: str) -> tuple[KernelInfo, int]:
    """The wgmma kernel of forward problem ``p`` with a valid ``cfg``, and its dynamic shared memory."""
    mac = tuple((k, str(v)) for k, v in macros(p, cfg).items())
    grid, block = (grid_of(p, cfg), 1, 1), (cfg["WGS"] * 128, 1, 1)
    return KernelInfo(source, name, grid, block, macros=mac, options=(f"-arch={ARCH}",)), smem_bytes(p, cfg)


class ImplicitGemmHopperBase(Solver):
    """Common applicability, configs and launch of the Hopper implicit-GEMM solvers."""

    family = "implicit_gemm_hopper"
    dtypes = frozenset({"FP16", "BF16"})
    tunable = True
    source = ""
    kernel_name = ""
    config_keys = KEYS                      # a subclass with its own tunables names them and their check
    tile_ok = staticmethod(config_ok)

    @property
    def kernel_files(self):
        return (self.source, HEADER)

    def forward_problem(self, p: ProblemDescription) -> ProblemDescription:
        """The forward problem the wgmma kernel is built for (``p`` itself for the forward solver)."""
        return p

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        arch = device_arch()
        if arch is not None and arch != "sm_90":
            return not_applicable(f"device {arch}: wgmma kernels are built for sm_90a (Hopper) only")
        if p.spatial_dims != 2:
            return not_applicable(f"{p.spatial_dims}D not supported (2D only)")
        if p.layouts != ("NHWC", "NHWC", "NHWC"):
            return not_applicable(f"layouts {'/'.join(p.layouts)} not supported (NHWC x, w and y only)")
        if p.groups != 1:
            return not_applicable(f"groups={p.groups} not supported (1 only)")
        if p.c % 8 or p.k % 8:
            return not_applicable(f"C={p.c}, K={p.k}: both must be multiples of 8 (16-byte channel chunks)")
        pf = self.forward_problem(p)
        isz, osz, fsz, pads, strides, dils = dims3(pf)
        if max(isz) * max(strides) + max(pads) + max(d * f for d, f in zip(dils, fsz)) >= 2**28:
            return not_applicable(f"spatial size {p.in_size} with strides/dilations too large for 32-bit positions")
        m, n, k = gemm_shape(pf)
        if k >= INT32_MAX:
            return not_applicable(f"GEMM K = C x taps = {k} exceeds 2^31")
        if ceil_div(m, 64) * ceil_div(n, 64) > INT32_MAX:
            return not_applicable(f"GEMM M={m} x N={n} needs more than 2^31 blocks of 64 x 64")
        return APPLICABLE

    def default_config(self, problem: ProblemDescription) -> dict:
        return default_tile(problem.as_conv())

    def config_space(self, problem: ProblemDescription):
        yield from space(problem.as_conv())

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        if not isinstance(config, dict) or set(config) != set(self.config_keys):
            return False
        if any(not isinstance(v, int) or isinstance(v, bool) for v in config.values()):
            return False
        return self.tile_ok(problem.as_conv(), config)

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = dict(config) if config else self.default_config(p)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        kinfo, smem = forward_kernel(p, cfg, self.source, self.kernel_name)
        kernels = [kinfo]
        sid = self.id

        def factory(kerns):
            kern = kerns[0]
            if smem > SMEM_STATIC:
                kern.max_dynamic_shared_size_bytes = smem
            launch = Launch(kern, kinfo.grid, kinfo.block, (PTR, PTR, PTR), shared_mem=smem)

            def invoker(a, b, out, workspace, stream):
                if a % ALIGN or b % ALIGN or out % ALIGN:
                    for name, ptr, al in (("first input", a, ALIGN), ("second input", b, ALIGN), ("output", out, ALIGN)):
                        if ptr % al:
                            raise ValueError(f"{sid}: {name} at address {ptr:#x} is not {al}-byte aligned, "
                                             "as this solution's vector accesses need")
                launch(stream, a, b, out)
            return invoker

        return ConvSolution(self.id, kernels, 0, factory, cfg)
