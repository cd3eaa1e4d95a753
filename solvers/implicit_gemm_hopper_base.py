"""Hopper implicit GEMM (issue 19): wgmma.mma_async tensor-core kernels built for sm_90a.

Shared planning for kernels_src/implicit_gemm_hopper_*.cu: FP16/BF16 (FP32 accumulation), channels-last 2D tensors,
groups = 1, channel counts multiples of 8 (16-byte gathers of one tap's channels). Both GEMM operands are staged
K-major in 128-byte-swizzled shared memory by cp.async and multiplied by WGS warpgroups issuing m64nBNk16 wgmma;
sizes and strides are compile-time macros (one build per problem, as the Ampere family,
solvers/implicit_gemm_base.py). The kernels are built for ``sm_90a`` (wgmma exists on no other target) and apply
only on a compute-capability 9.0 GPU; without a visible GPU (CPU tools, CI's NVRTC compile) the device check is left
to the run.

Tunables: BM (block rows, 64 x WGS x 1 or 2), BN (64, 128, 256: the wgmma N; 32 for a 16-bit forward of at most 32
output channels; 192 for 16-bit data on the copy engine whose GEMM N is a multiple of 192 (backward data: dx's
channels), one m64 block a warpgroup), WGS (1 or 2 consumer warpgroups, each also loading unless WSPEC; or 3 with
WSPEC, BM = 192 and BN <= 128), STAGES (shared-memory buffers, prefetch
distance STAGES - 2), PERSIST (1: persistent blocks; without TMA N <= BN, all of B resident in shared memory,
streaming A), SPLITK (requested chunks of the K = C*Y*X reduction, grid.y; the kernel runs ceil(tiles / ceil(tiles /
SPLITK)) of them, each writing FP32 partial tiles to the workspace, summed and cast by a second kernel; PERSIST = 0
only), WSPEC (1: one more warpgroup, the producer, issues every load; the WGS warpgroups only multiply, stages
handed over by mbarriers), TMA (1, with WSPEC and C % 64 == 0, or 16-bit, unsplit, with each tap's K tiles padded
past C: ``tma_padded``: the producer's one thread copies each stage's tiles with the copy engine, tensor maps of x
(im2col) and w (tiled) passed by value, ``miofind.tma``). TMA with PERSIST (any N): persistent blocks over every
output tile, the producer streaming each tile's A and B boxes through the stages without draining between tiles, and
the consumers' epilogue through its own output tile, overlapped with the next tile's copies. PERSIST = 2 (TMA, all of N
in one tile, unsplit): the same, with every K tile of B resident in shared memory, loaded once with the
block's first A box; the stages carry A boxes only (``resident_b``). PINGPONG (1, with TMA,
PERSIST and WGS = 2): each consumer warpgroup multiplies whole BM x BN tiles (BM = 64 or 128), the two taking
alternate tiles of their block in turn, so one's epilogue overlaps the other's K loop. TMA = 2 (16-bit forward or
backward data, WSPEC, unsplit): the copy engine with 32-deep K tiles, 64-byte rows under the 64-byte swizzle
(``row64``; the kernel's ROW64): a tap of 32 channels is one tile instead of half a padded one, a stage half the bytes,
up to 12 stages.
"""

from __future__ import annotations

import functools
import math

from miofind import tma
from miofind.env import hopper_tf32
from miofind.launch import A, B, BIAS, MAP, OUT, PTR, WS, Launch, with_recipe
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES, needs_int64

from .implicit_gemm_base import INT32_MAX, SM_COUNT, dims3, strides5

HEADER = "implicit_gemm_hopper.cuh"
ARCH = "sm_90a"
SMEM_LIMIT = 227 * 1024
SMEM_STATIC = 48 * 1024
BK = 64              # K tile depth of 16-bit data (one 128-byte row); FP32 (TF32) tiles are 32 deep: kdepth
KEYS = ("BM", "BN", "WGS", "STAGES", "PERSIST", "SPLITK", "WSPEC", "TMA", "PINGPONG")
ALIGN = 16           # x and w are read, y written, in 16-byte chunks
MAX_SPLITK = 128
MIN_KT_PER_SPLIT = 4     # a chunk of the reduction spans at least 4 K tiles (256 deep)
RED_BLOCK = 256
WS_ALIGN = 256


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


def strict_fp32(p: ProblemDescription):
    """Not-applicable of an FP32 problem with strict math (wgmma has no FP32 form, only TF32: math=tf32); None
    otherwise."""
    if p.dtype == "FP32" and p.math != "tf32":
        return not_applicable("data type FP32 with strict math not supported (wgmma multiplies FP32 data as TF32 "
                              "only: math=tf32)")
    return None


def tf32_off(p: ProblemDescription):
    """Not-applicable of an FP32 problem: strict math (``strict_fp32``), or TF32 math while MIOFIND_HOPPER_TF32 is off
    (the wgmma reads FP32 operands truncated to TF32, where cuDNN rounds them: ResNet-50's inference in channels_last
    drifted past 1e-2 of cuDNN's, bench/results/session-nov28b/); None otherwise."""
    if p.dtype != "FP32":
        return None
    strict = strict_fp32(p)
    if strict is not None:
        return strict
    if not hopper_tf32():
        return not_applicable("TF32 off: its wgmma truncates FP32 operands where cuDNN rounds them "
                              "(MIOFIND_HOPPER_TF32=1 offers it)")
    return None


def esize(p: ProblemDescription) -> int:
    """Bytes of one element of x, w and y: 2 (FP16, BF16) or 4 (FP32 multiplied as TF32)."""
    return 4 if p.dtype == "FP32" else 2


def kdepth(p: ProblemDescription) -> int:
    """The depth of a K tile, one 128-byte row of elements: 64 (16-bit) or 32 (FP32)."""
    return 128 // esize(p)


def ktiles(p: ProblemDescription) -> int:
    return ceil_div(gemm_shape(p)[2], kdepth(p))


def smem_bytes(p: ProblemDescription, cfg) -> int:
    """The kernel's dynamic shared memory, plus 1 KiB to align the first tile to the swizzle's
    1024-byte period: STAGES x (BM + BN) rows of 128 bytes; PERSIST: all K tiles of B, STAGES
    A buffers and the output tile (BM x (BN + 8) elements); PERSIST with TMA: STAGES x (BM + BN) rows
    and the output tile (PINGPONG: one per consumer warpgroup); PERSIST = 2 (``resident_b``): all K tiles of B,
    STAGES A buffers and the output tile. With 32-deep K tiles (``row64``: copy engine, unsplit) the rows are 64
    bytes."""
    bm, bn, st, es = cfg["BM"], cfg["BN"], cfg["STAGES"], esize(p)
    rowb = row_bytes(cfg)
    if resident_b(cfg):
        return (config_ktiles(p, cfg) * bn + st * bm) * rowb + bm * (bn + 8) * es + 1024
    if cfg["PERSIST"] and cfg.get("TMA", 0):
        return st * (bm + bn) * rowb + (1 + cfg.get("PINGPONG", 0)) * bm * (bn + 8) * es + 1024
    if cfg["PERSIST"]:
        return (ktiles(p) * bn + st * bm) * 128 + bm * (bn + 8) * es + 1024
    if split_geometry(p, cfg["SPLITK"])[0] > 1:     # the FP32 partial tile (BM x (BN + 8)) reuses the buffers
        return max(st * (bm + bn) * 128, bm * (bn + 8) * 4) + 1024
    return st * (bm + bn) * rowb + 1024


def row64(cfg) -> bool:
    """Whether a config's K tiles are 32 deep with 64-byte rows (TMA = 2; the kernel's ROW64)."""
    return cfg.get("TMA", 0) == 2


def tile_depth(p: ProblemDescription, cfg) -> int:
    """A config's K tile depth in channels: ``kdepth``, or 32 with 32-deep K tiles (``row64``)."""
    return 32 if row64(cfg) else kdepth(p)


def resident_b(cfg) -> bool:
    """Whether a config keeps all of B resident in shared memory on the copy engine (PERSIST = 2: the kernel's
    B_RES)."""
    return cfg["PERSIST"] == 2


def config_ktiles(p: ProblemDescription, cfg) -> int:
    """K tiles of a config's reduction: each tap's C in whole tiles of ``tile_depth`` (padded where C is not a multiple
    of it; the same count as C * taps / depth where it is)."""
    return math.prod(p.filter_size) * ceil_div(p.c, tile_depth(p, cfg))


def row_bytes(cfg) -> int:
    """Bytes of a K tile's row in the stages: 128, or 64 with 32-deep K tiles (``row64``)."""
    return 64 if row64(cfg) else 128


def row64_fits(p: ProblemDescription) -> bool:
    """Whether 32-deep K tiles (``row64``) can serve forward problem ``p`` (or a backward-data phase's forward view,
    dy's channels its C; ``phase_tma_fits`` checks dy's real size): 16-bit data, C a multiple of 8, within the
    im2col fields as ``tma_fits``. C % 32 == 0: each tile one tap's 32 channels; else each tap's tiles padded to whole
    tiles (TAP_K, the padded maps as ``tma_padded``'s)."""
    isz, osz, fsz, pads, strides, dils = dims3(p)
    return (esize(p) == 2 and p.direction == "F" and p.c % 8 == 0
            and tma.im2col_fits(isz[1:], osz[1:], pads[1:], strides[1:], fsz[1:], dils[1:]))


def wg_split(cfg) -> int:
    """BM over this is a consumer warpgroup's m64 blocks (the kernel's WG_M): 64 x WGS, the warpgroups sharing each
    tile's rows, or 64 with PINGPONG, each warpgroup multiplying whole tiles."""
    return 64 * (1 if cfg.get("PINGPONG", 0) else cfg["WGS"])


def threads(cfg) -> int:
    """Block threads: the WGS consumer warpgroups, and the producer warpgroup with WSPEC."""
    return (cfg["WGS"] + cfg.get("WSPEC", 0)) * 128


def blocks_per_sm(p: ProblemDescription, cfg, smem: int | None = None) -> int:
    """Blocks per SM the kernel's register allocation must allow (``__launch_bounds__``): 2 when two
    blocks' shared memory fits an SM (228 KiB, 1 KiB reserved per block) and the accumulators
    leave room under the 128-register cap that two 256-thread blocks impose. With WSPEC (a third
    warpgroup; two 384-thread blocks cap a thread at 80 registers) only for 32 accumulators a thread.
    With PINGPONG a warpgroup holds a whole BM x BN tile. ``smem``: a kernel's own dynamic shared memory
    (default: ``smem_bytes``)."""
    acc = cfg["BM"] // wg_split(cfg) * cfg["BN"] // 2
    fits = 2 * ((smem_bytes(p, cfg) if smem is None else smem) + 1024) <= 228 * 1024
    if cfg.get("WSPEC", 0):
        return 2 if fits and acc <= 32 else 1
    return 2 if fits and (cfg["WGS"] == 1 or acc <= 64) else 1


def split_chunks(tiles_total: int, splitk: int) -> tuple[int, int]:
    """(effective chunks, tiles per chunk) of a reduction of ``tiles_total`` tiles for a requested
    SPLITK: equal chunks of consecutive tiles, the last possibly shorter, none empty."""
    per = ceil_div(tiles_total, max(1, min(splitk, tiles_total)))
    return ceil_div(tiles_total, per), per


def split_geometry(p: ProblemDescription, splitk: int) -> tuple[int, int]:
    """(effective chunks, K tiles per chunk) for a requested SPLITK: no chunk is empty."""
    return split_chunks(ktiles(p), splitk)


def split_tries(cfg, default: int, effective, ok):
    """``cfg`` at the splits a tuning tries, unsplit and the default split, half and twice it: one
    config per effective split (``effective(s)``), valid ones (``ok(config)``) only."""
    seen = set()
    for s in sorted({1, max(1, default // 2), default, 2 * default}):
        c = dict(cfg, SPLITK=s)
        eff = effective(s)
        if eff not in seen and ok(c):
            seen.add(eff)
            yield c


def tma_fits(p: ProblemDescription) -> bool:
    """Whether copy-engine loads (TMA) can serve problem ``p``'s x: K tiles of one tap (C % 64 == 0: a tile
    is one tap's 64 channels, one im2col box), and corners and filter offsets within the 4-D im2col fields."""
    isz, osz, fsz, pads, strides, dils = dims3(p)
    return p.c % kdepth(p) == 0 and tma.im2col_fits(isz[1:], osz[1:], pads[1:], strides[1:], fsz[1:], dils[1:])


def padded_channels(p: ProblemDescription, channels: int) -> bool:
    """Whether a reduction over ``channels`` channels a tap (the forward's C, backward data's K) takes padded K tiles
    (``implicit_gemm_hopper_fwd.cu``'s TAP_K): 16-bit data, channels not a multiple of 64 but of 8."""
    return esize(p) == 2 and channels % kdepth(p) != 0 and channels % 8 == 0


def tap_channels(p: ProblemDescription) -> int:
    """C rounded up to whole K tiles: a tap's K extent when its tiles are padded (TAP_K)."""
    return ceil_div(p.c, kdepth(p)) * kdepth(p)


def tma_padded(p: ProblemDescription) -> bool:
    """Whether copy-engine loads can serve the forward's x with each tap's K tiles padded
    (``implicit_gemm_hopper_fwd.cu``'s TAP_K): 16-bit data whose C is not a multiple of 64 (8 or more, a multiple of
    8: ``padded_channels``), a tile one tap's 64 channels of which those past C read as zeros from both maps (w then a
    3-D map, ``w_taps``), within the im2col fields as ``tma_fits``; unsplit configs only (``config_ok``)."""
    isz, osz, fsz, pads, strides, dils = dims3(p)
    return padded_channels(p, p.c) and tma.im2col_fits(isz[1:], osz[1:], pads[1:], strides[1:], fsz[1:], dils[1:])


def padded_default(p: ProblemDescription) -> bool:
    """Whether the forward's default loads padded K tiles by the copy engine (``tma_padded``): C of 96 or more padded
    by at most a third. Measured on an H200 (bench/results/session-nov29h/call1/: 30 real layers with C % 64 != 0,
    N = 32 FP16 NHWC, kernel time): the padded copy-engine configs beat the cp.async default on 20 of the 22 layers
    with C = 96 .. 992 (the other two by 2% and 4%), and lost on the 3x3 and 5x5 layers of 32, 48 and 80 channels
    (1.18-1.62x the default's time), whose padding adds 33-100% to the MMA work."""
    return tma_padded(p) and p.c >= 96 and 3 * tap_channels(p) <= 4 * p.c


def w_taps(p: ProblemDescription, bn: int, bk: int | None = None) -> tma.TiledSpec:
    """w (K x Y x X x C, KYXC) as a 3-D map (C, Y*X, K) of boxes of one tap's 64 (``bk``) channels x ``bn`` rows: a
    padded K tile (``tma_padded``) reads zeros past C, where the 2-D map would read the next tap's first channels."""
    es, taps, bk = esize(p), math.prod(p.filter_size), bk or kdepth(p)
    return tma.TiledSpec(p.dtype, (p.c, taps, p.k), (p.c * es, taps * p.c * es), (bk, 1, bn), swizzle_of(bk * es))


def swizzle_of(row_bytes: int) -> int:
    """The copy engine's swizzle for K tile rows of ``row_bytes`` (128 or 64)."""
    return tma.SWIZZLE_64B if row_bytes == 64 else tma.SWIZZLE_128B


def dense_pixels(p: ProblemDescription) -> bool:
    """Whether x's pixels are a dense N*H*W x C matrix whose rows are the GEMM's (the forward's output pixels, the
    backward weights' reduction): a 1x1 filter, stride 1, no padding, as many output pixels as input ones (not so
    for a backward-data phase whose stated output size passes dy's: 1x2 taps at stride 2 over an odd width), fewer
    than 2^31 pixels (32-bit box coordinates). The copy engine then reads x through a tiled map (``x_dense``)
    instead of the im2col one."""
    return (math.prod(p.filter_size) == 1 and all(s == 1 for s in p.strides) and not any(p.pads)
            and tuple(p.out_size) == tuple(p.in_size) and p.n * math.prod(p.in_size) < INT32_MAX)


def x_dense(p: ProblemDescription, rows: int, bk: int | None = None) -> tma.TiledSpec:
    """x as a dense (C, N*H*W) matrix in boxes of a K tile's channels (``bk``) x ``rows`` pixels (``dense_pixels``
    problems)."""
    bk = bk or kdepth(p)
    return tma.TiledSpec(p.dtype, (p.c, p.n * math.prod(p.in_size)), (p.c * esize(p),), (bk, rows),
                         swizzle_of(bk * esize(p)))


def x_im2col(p: ProblemDescription, pixels: int, bk: int | None = None) -> tma.Im2colSpec:
    """The im2col map of x (C, W, H, N) for boxes of ``pixels`` output pixels x a K tile's channels (``bk``)."""
    isz, osz, fsz, pads, strides, dils = dims3(p)
    xs, es, bk = strides5(p.x_shape, p.layouts[0]), esize(p), bk or kdepth(p)
    lower, upper = tma.im2col_corners(isz[1:], osz[1:], pads[1:], strides[1:])
    return tma.Im2colSpec(p.dtype, (p.c, isz[2], isz[1], p.n), (xs[4] * es, xs[3] * es, xs[0] * es), lower, upper,
                          bk, pixels, (strides[2], strides[1]), swizzle_of(bk * es))


def forward_maps(p: ProblemDescription, cfg) -> tuple[tma.MapCache, tma.MapCache]:
    """The copy engine's maps of a forward config: x's im2col map (BM pixels a box; dense x: a tiled map) and w's
    tiled map (boxes of a K tile x BN of its rows); K tiles 32 deep with ``row64``."""
    _, n, k = gemm_shape(p)
    bk = tile_depth(p, cfg)
    w = (w_taps(p, cfg["BN"], bk) if p.c % bk else
         tma.TiledSpec(p.dtype, (k, n), (strides5(p.w_shape, p.layouts[1])[0] * esize(p),), (bk, cfg["BN"]),
                       swizzle_of(bk * esize(p))))
    x = x_dense(p, cfg["BM"], bk) if dense_pixels(p) else x_im2col(p, cfg["BM"], bk)
    return tma.MapCache(x), tma.MapCache(w)


def config_ok(p: ProblemDescription, cfg) -> bool:
    bm, bn, wgs, st, per, sk, wsp, tm, pp = (cfg[k] for k in KEYS)
    if wgs not in (1, 2, 3) or bn not in (32, 64, 128, 192, 256) or per not in (0, 1, 2) or tm not in (0, 1, 2):
        return False
    # 192-wide tiles (m64n192k16): 16-bit data on the copy engine (backward data: its phases' forward views), not
    # ping-pong (the kernel's static_assert)
    if bn == 192 and not (esize(p) == 2 and p.direction == "F" and tm and not pp):
        return False
    # resident B on the copy engine: all of N in one tile (backward data: of dx's channels, MN-major), one consumer walk
    # (not ping-pong)
    if per == 2 and not (tm and not pp and gemm_shape(p)[1] <= bn):
        return False
    # 32-deep K tiles (TMA = 2): a stage of 64-byte rows is half the bytes, so a pipeline may hold up to 12
    if st not in range(3, (13 if tm == 2 else 9) if per else 7):
        return False
    # 32-wide tiles (m64n32k16): a 16-bit forward's narrow outputs only (backward data's MN-major filter tiles and the
    # TF32 kernels are 64 wide or more)
    if bn == 32 and not (esize(p) == 2 and p.direction == "F"):
        return False
    if wsp not in (0, 1) or pp not in (0, 1):
        return False
    if tm == 2 and not (wsp and sk == 1 and row64_fits(p)):     # backward data: its phases' forward views
        return False
    # three consumer warpgroups: 192-row tiles (one m64 block a warpgroup) fed by the producer warpgroup (the loaders'
    # 16-row passes divide 192; all 384 threads' 48-row passes would not divide BN), 64 accumulators a thread
    if wgs == 3 and not (bm == 192 and bn <= 128 and wsp and not pp):
        return False
    if tm == 1 and not (wsp and (tma_fits(p) or (sk == 1 and tma_padded(p)))):
        return False
    if pp and not (per and tm and wgs == 2):
        return False
    rows = wg_split(cfg)
    if bm % rows or bm // rows not in (1, 2) or (bm // rows) * bn > 256:
        return False
    if per and not tm and gemm_shape(p)[1] > bn:     # resident B: all of N in one tile
        return False
    if not per and bm * (bn + 8) * esize(p) > st * (bm + bn) * row_bytes(cfg):     # the staged output tile in the buffers
        return False
    if not 1 <= sk <= MAX_SPLITK or (per and sk != 1):
        return False
    m, n, _ = gemm_shape(p)
    if sk > 1 and split_geometry(p, sk)[0] * m * n >= 2**40:      # partial planes past 4 TiB
        return False
    # WSPEC's 2 x STAGES mbarriers are static shared memory beside the dynamic buffers
    return smem_bytes(p, cfg) + 16 * st * wsp <= SMEM_LIMIT


@functools.lru_cache(maxsize=1)
def sm_count() -> int:
    """The current GPU's multiprocessor count (the H100 SXM's 132 where no GPU is visible)."""
    from miofind.device import NoGPUError, current_device
    try:
        return current_device().sm_count
    except NoGPUError:
        return SM_COUNT


def tiles(p: ProblemDescription, cfg) -> int:
    """Output tiles (M tiles x N tiles) of a config."""
    m, n, _ = gemm_shape(p)
    return ceil_div(m, cfg["BM"]) * ceil_div(n, cfg["BN"])


def small_grid(p: ProblemDescription, cfg) -> bool:
    """Whether the output tiles leave block slots of one wave (132 SMs x blocks_per_sm) idle, and the
    reduction has K tiles for two chunks: the only case where a split can pay (non-persistent configs)."""
    return (not cfg["PERSIST"] and tiles(p, cfg) < SM_COUNT * blocks_per_sm(p, cfg)
            and ktiles(p) >= 2 * MIN_KT_PER_SPLIT)


def block_us_per_ktile(cfg, blocks_on_sm: int) -> float:
    """Estimated microseconds of one 64-deep K tile of a block sharing its SM with ``blocks_on_sm - 1``
    others: the SM runs 0.9 TFLOP/s per resident warpgroup up to 2.25 (H100 runs, bench/results/
    hopper-igemm/: 512->512 @7 3x3, one 2-warpgroup block per SM, 1.8 TFLOP/s; the large layer, two
    per SM, 2.25), shared evenly by its blocks."""
    sm_rate = min(2.25e6, 0.9e6 * cfg["WGS"] * blocks_on_sm)
    return cfg["BM"] * cfg["BN"] * BK * 2 * blocks_on_sm / sm_rate


def split_estimate_us(p: ProblemDescription, cfg, splitk: int) -> float:
    """Estimated time of ``cfg`` at ``splitk`` (the form of implicit_gemm_hopper_wrw.default_split):
    full waves of blocks (132 SMs x blocks_per_sm) and a last partial wave, each as long as a block's
    K tiles plus 2 tiles of pipeline fill at the rate of the blocks sharing an SM; split, plus the
    partial planes' round trip (written and read back, 3 TB/s) and the reduce launch (3 us)."""
    m, n, _ = gemm_shape(p)
    eff, per = split_geometry(p, splitk)
    bps = blocks_per_sm(p, dict(cfg, SPLITK=1))
    blocks = tiles(p, cfg) * eff
    full, rem = divmod(blocks, SM_COUNT * bps)
    est = full * (per + 2) * block_us_per_ktile(cfg, bps)
    if rem:
        est += (per + 2) * block_us_per_ktile(cfg, min(bps, ceil_div(rem, SM_COUNT)))
    return est + (eff * m * n * 8 / 3e6 + 3 if eff > 1 else 0)


def default_split(p: ProblemDescription, cfg) -> int:
    """The split of ``cfg``'s tile with the least split_estimate_us: 1 unless the grid is small
    (small_grid); chunks of at least MIN_KT_PER_SPLIT K tiles."""
    if not small_grid(p, cfg):
        return 1
    best = (split_estimate_us(p, cfg, 1), 1)
    for s in range(2, min(ktiles(p) // MIN_KT_PER_SPLIT, MAX_SPLITK) + 1):
        if split_geometry(p, s)[0] == s:
            best = min(best, (split_estimate_us(p, cfg, s), s))
    return best[1]


def default_tile(p: ProblemDescription, copy_engine: bool = True) -> dict:
    """Measured on the H100 (bench/results/hopper-igemm/): 128-row tiles of two warpgroups; BN = 64
    for N <= 64, or when 128 x 128 tiles would leave over half the SMs idle; else BN = 128, with 4
    stages when the grid is at most one wave (one block per SM) and 3 (two blocks per SM) beyond.
    PERSIST without the copy engine is left to tuning: it won by at most 6% where it applies, and lost on
    the large layer. The split is default_split's (1 for grids that fill the GPU). With ``copy_engine``,
    wherever the copy engine serves x (tma_fits, or padded K tiles where they pay: padded_default), persistent_tile's
    config instead, unless the config above is split and the persistent tiles would not give half the SMs one (a
    batch-1 layer of few tiles)."""
    m, n, _ = gemm_shape(p)
    blocks = ceil_div(m, 128) * ceil_div(n, 128)
    if m <= 64:
        cfg = {"BM": 64, "BN": 64 if n <= 64 else 128, "WGS": 1, "STAGES": 4, "PERSIST": 0}
    elif n <= 64 or blocks < SM_COUNT // 2:
        cfg = {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 4, "PERSIST": 0}
    else:
        cfg = {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4 if blocks <= SM_COUNT else 3, "PERSIST": 0}
    cfg["SPLITK"] = 1
    cfg["WSPEC"] = 0
    cfg["TMA"] = 0
    cfg["PINGPONG"] = 0
    cfg["SPLITK"] = default_split(p, cfg)
    if copy_engine and (tma_fits(p) or padded_default(p)):
        per = persistent_tile(p)
        # a split of a small grid stays where the persistent tiles would leave over half the SMs idle
        if config_ok(p, per) and (cfg["SPLITK"] == 1 or tiles(p, per) >= SM_COUNT // 2):
            return per
        # else filters larger than 1x1 load through the copy engine (the same tile and split): faster on all 7
        # such ResNet-50 layers, while 1x1 layers went either way (bench/results/session-tma/)
        tm = dict(cfg, WSPEC=1, TMA=1)
        if math.prod(p.filter_size) > 1 and config_ok(p, tm):
            return tm
    return cfg


def persistent_tile(p: ProblemDescription) -> dict:
    """The persistent copy-engine config (PERSIST = 1, TMA = 1, 4 stages): 128 x 128 tiles of two warpgroups
    (128 x 64 for N <= 64), or 64 x 128 (64 x 64) tiles of one where 128 x 128 tiles would not give every SM
    one. Measured on the H100 against the non-persistent copy-engine and cp.async configs (bench/results/
    session-ptma/): the persistent configs were the fastest of the three on 17 of ResNet-50's 22 FP16 F layers,
    1x1 ones included, and on the large layer; on 512 -> 512 @7 3x3 (N = 32, 100 tiles of 64 x 128) they also
    beat the split."""
    m, n, _ = gemm_shape(p)
    wgs = 1 if ceil_div(m, 128) * ceil_div(n, 128) < SM_COUNT else 2
    return {"BM": 64 * wgs, "BN": 64 if n <= 64 else 128, "WGS": wgs, "STAGES": 4, "PERSIST": 1, "SPLITK": 1,
            "WSPEC": 1, "TMA": 1, "PINGPONG": 0}


def twins(cfgs, keep, **change) -> list[dict]:
    """``dict(c, **change)`` for each config ``c`` of ``cfgs`` that ``keep(c)`` accepts, in order, each once (validity
    is the caller's)."""
    out = []
    for c in cfgs:
        t = dict(c, **change)
        if keep(c) and t not in out:
            out.append(t)
    return out


def resident_twins(cfgs) -> list[dict]:
    """The PERSIST = 2 twins (``resident_b``) of the persistent copy-engine configs of ``cfgs`` that are not ping-pong.
    Measured on an H200 (bench/results/session-nov30b/call1/, FP16, N = 32, isolated kernel time), the twin against its
    PERSIST = 1 config: a median of 0.75 on Inception's 32-channel stems and 0.85-0.96 on other 3x3 layers of at most
    128 output channels, 0.93-1.04 on 1x1 layers."""
    return twins(cfgs, lambda c: c["PERSIST"] == 1 and c.get("TMA") and not c.get("PINGPONG"), PERSIST=2)


def wide_twins(p: ProblemDescription, cfgs) -> list[dict]:
    """The 192-wide twins (BN = 192) of the copy-engine configs of ``cfgs`` for a GEMM N that is a multiple of 192 (none
    otherwise): one tile covers three 64-wide column blocks where 128- and 256-wide tiles leave a third of their last
    tile idle. Measured on an H200 (bench/results/session-nov30c/call3/, FP16, N = 32,
    the 10 PADDED_C and NON_RESNET layers with N % 192 == 0, isolated kernel time): the best of both Hopper forwards'
    find configs 0.932 -> 0.909 of cuDNN's best plan; Inception's 80 -> 192 @73 3x3 1.222 -> 1.002. Backward data (its
    forward view's N, dx's channels; bench/results/session-nov30d/call1/sweep_b192.txt, the two NON_RESNET layers with
    such dx, three passes): 0.844 -> 0.829."""
    if gemm_shape(p)[1] % 192:        # backward data: its forward view's N, dx's channels
        return []
    return twins(cfgs, lambda c: c.get("TMA") and c["BN"] != 192, BN=192)


def split_variants(p: ProblemDescription, cfg):
    """``cfg`` (any SPLITK) at the splits a tuning tries: unsplit, and for a small grid its default split,
    half and twice it; one config per effective split, valid ones only."""
    base = dict(cfg, SPLITK=1)
    base.setdefault("WSPEC", 0)
    base.setdefault("TMA", 0)
    base.setdefault("PINGPONG", 0)
    if not small_grid(p, base):
        if config_ok(p, base):
            yield base
        return
    yield from split_tries(base, default_split(p, base), lambda s: split_geometry(p, s)[0],
                           lambda c: config_ok(p, c))


def width_ok(bn: int, n: int) -> bool:
    """Whether the tuning space (and the 32-deep alternates) hold tiles ``bn`` wide for a GEMM N of ``n``: at most
    max(64, 2N) wide, 32 wide only for N <= 32, and 192 wide only where N is a multiple of 192 (there 128- and 256-wide
    tiles leave a third of a tile idle)."""
    return bn <= max(64, 2 * n) and (bn > 32 or n <= 32) and (bn != 192 or n % 192 == 0)


def tile_sizes(p: ProblemDescription):
    """(BM, BN) of the space: widths as ``width_ok``, heights at most max(64, 2M)."""
    m, n, _ = gemm_shape(p)
    return [(bm, bn) for bm in (64, 128, 192, 256) for bn in (32, 64, 128, 192, 256)
            if width_ok(bn, n) and bm <= max(64, 2 * m)]


def space(p: ProblemDescription):
    for bm, bn in tile_sizes(p):
        for wgs in (1, 2, 3):
            for per in (0, 1, 2):
                for st in range(3, 9 if per else 7):
                    for wsp in (0, 1):
                        for tm in ((0, 1) if wsp else (0,)):
                            for pp in ((0, 1) if per and tm and wgs == 2 else (0,)):
                                yield from split_variants(p, {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st,
                                                              "PERSIST": per, "WSPEC": wsp, "TMA": tm,
                                                              "PINGPONG": pp})
    if p.c % BK == 0 or not row64_fits(p):
        return
    # 32-deep K tiles (TMA = 2) where 64-channel tiles would cross taps (cp.async) or pad them (the copy engine)
    for bm, bn in tile_sizes(p):
        for wgs in (1, 2, 3):
            for per in (0, 1, 2):
                for st in range(3, 13 if per else 7):
                    for pp in ((0, 1) if per and wgs == 2 else (0,)):
                        cfg = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": 1,
                               "WSPEC": 1, "TMA": 2, "PINGPONG": pp}
                        if config_ok(p, cfg):
                            yield cfg


def grid_of(p: ProblemDescription, cfg) -> tuple[int, int, int]:
    """Blocks: every (M, N) tile x every K chunk, or for PERSIST at most as many as run at once."""
    nt = tiles(p, cfg)
    if cfg["PERSIST"]:
        return min(nt, sm_count() * blocks_per_sm(p, cfg)), 1, 1
    return nt, split_geometry(p, cfg["SPLITK"])[0], 1


def partial_bytes(p: ProblemDescription, cfg) -> int:
    """Workspace of the FP32 partial planes (chunks x M x N floats, 256-byte aligned); 0 unsplit."""
    eff = split_geometry(p, cfg["SPLITK"])[0]
    m, n, _ = gemm_shape(p)
    return 0 if eff == 1 else ceil_div(eff * m * n * 4, WS_ALIGN) * WS_ALIGN


def problem_macros(p: ProblemDescription) -> dict:
    """The macros every Hopper kernel takes from problem ``p``: data and index types, sizes, pads,
    strides, dilations, and the x/w/y element strides of its layouts."""
    isz, osz, fsz, pads, strides, dils = dims3(p)
    xs, ws, ys = (strides5(sh, lay) for sh, lay in zip((p.x_shape, p.w_shape, p.y_shape), p.layouts))
    return {
        "DATA_T": CUDA_TYPES[p.dtype], "INDEX_T": "long long" if needs_int64(p) else "int",
        "IS_BF16": int(p.dtype == "BF16"), "IS_TF32": int(p.dtype == "FP32"),
        "P_N": p.n, "P_C": p.c, "P_K": p.k,
        "P_HI": isz[1], "P_WI": isz[2], "P_HO": osz[1], "P_WO": osz[2], "P_Y": fsz[1], "P_X": fsz[2],
        "P_PH": pads[1], "P_PW": pads[2], "P_SH": strides[1], "P_SW": strides[2], "P_DH": dils[1], "P_DW": dils[2],
        "XS_N": xs[0], "XS_C": xs[1], "XS_H": xs[3], "XS_W": xs[4],
        "WS_K": ws[0], "WS_C": ws[1], "WS_Y": ws[3], "WS_X": ws[4],
        "YS_N": ys[0], "YS_C": ys[1], "YS_H": ys[3], "YS_W": ys[4],
    }


def macros(p: ProblemDescription, cfg) -> dict:
    """The forward kernel's macros: the problem's, the tile's, and the effective split (SPLITK chunks
    of KT_PER K tiles; only SPLITK = 1 for an unsplit config; WSPEC, TMA and PINGPONG only when 1)."""
    mac = {**problem_macros(p), **{k: cfg[k] for k in KEYS if k not in ("SPLITK", "WSPEC", "TMA", "PINGPONG")},
           "MIN_BLOCKS": blocks_per_sm(p, cfg)}
    if cfg["WSPEC"]:
        mac["WSPEC"] = 1
    if cfg.get("TMA"):
        mac["TMA"] = 1
    if row64(cfg):
        mac["ROW64"] = 1
    if cfg.get("PINGPONG"):
        mac["PINGPONG"] = 1
    if cfg.get("TMA") and dense_pixels(p):
        mac["A_DENSE"] = 1
    eff, per = split_geometry(p, cfg["SPLITK"])
    mac["SPLITK"] = eff
    if eff > 1:
        mac.update(KT_PER=per, RED_BLOCK=RED_BLOCK)
    return mac


def forward_kernels(p: ProblemDescription, cfg, source: str, name: str,
                    overrides: dict | None = None) -> tuple[list[KernelInfo], int]:
    """The wgmma kernel of forward problem ``p`` with a valid ``cfg`` (then, when split, the reduce
    kernel ``name``_reduce of the same source and macros), and the wgmma kernel's dynamic shared memory.
    ``overrides`` replaces and adds macros (a backward-data phase: dy's size and strides, dx's strides, and
    the geometry of the filter read in place)."""
    mac = tuple((k, str(v)) for k, v in {**macros(p, cfg), **(overrides or {})}.items())
    main = KernelInfo(source, name, grid_of(p, cfg), (threads(cfg), 1, 1), macros=mac, options=(f"-arch={ARCH}",))
    out = [main]
    if main.grid[1] > 1:
        m, n, _ = gemm_shape(p)
        out.append(KernelInfo(source, f"{name}_reduce", (ceil_div(m * n, 8 * RED_BLOCK), 1, 1), (RED_BLOCK, 1, 1),
                              macros=mac, options=(f"-arch={ARCH}",)))
    return out, smem_bytes(p, cfg)


def recipe_steps(main: Launch, red: Launch | None, maps, out_off: int = 0, b=(B, 0), bias: bool = False) -> list:
    """``launch.with_recipe``'s steps of a wgmma launch ``main`` (pointers a, b, the output at ``out_off`` bytes,
    the partial planes: the output itself unsplit, else the workspace; ``maps``: the ``tma.MapCache`` of a and b,
    or None) and its split reduction ``red`` (None unsplit). ``b``: the (role, byte offset) of the filter the launch
    reads (the invoker's b, or a rewritten filter in the workspace); ``bias``: both launches take a fused
    epilogue's bias pointer last."""
    mroles = ((A, 0, maps[0].spec), (*b, maps[1].spec)) if maps else ()
    epi = ((BIAS, 0),) if bias else ()
    if red is None:
        return [(main, ((A, 0), b, (OUT, out_off), (OUT, out_off), *epi), mroles)]
    return [(main, ((A, 0), b, (OUT, out_off), (WS, 0), *epi), mroles), (red, ((WS, 0), (OUT, out_off), *epi))]


def filter_first_factory(sid: str, first: KernelInfo, main: KernelInfo, maps, smem: int, ws: int, pdl: bool):
    """The invoker factory of a solution that writes the filter into the workspace first (``first`` on b -> workspace:
    a rewrite or a rounding) and then runs ``main`` on (a, workspace, out) with tensor maps of a and of the workspace's
    filter (``maps``); ``pdl``: ``main`` goes as the programmatic dependent of ``first`` (its producer waits for it).
    The recipe names both steps for miofind.torch's C++ path."""
    def factory(kerns):
        kfirst, kern = kerns
        if smem > SMEM_STATIC:
            kern.max_dynamic_shared_size_bytes = smem
        lfirst = Launch(kfirst, first.grid, first.block, (PTR, PTR))
        launch = Launch(kern, main.grid, main.block, (PTR,) * 3 + (MAP,) * 2, shared_mem=smem, pdl=pdl)
        lmain = launch.bind_maps(maps)

        def invoker(a, b, out, workspace, stream):
            if a % ALIGN or b % ALIGN or out % ALIGN:
                check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
            if not workspace:
                raise ValueError(f"{sid}: workspace of {ws} bytes required, got none")
            lfirst(stream, b, workspace)
            lmain(stream, a, workspace, out)
        steps = [(lfirst, ((B, 0), (WS, 0))),
                 (launch, ((A, 0), (WS, 0), (OUT, 0)), ((A, 0, maps[0].spec), (WS, 0, maps[1].spec)))]
        return with_recipe(invoker, steps, (ALIGN, ALIGN, ALIGN, 1), True)
    return factory


def split_factory(sid: str, main: KernelInfo, red: KernelInfo | None, maps, smem: int, ws: int):
    """The invoker factory of a wgmma launch ``main`` on (a, b, out, partials) (``maps``: the ``tma.MapCache`` of a and
    b, or None) and, where it is split, its reduce ``red`` on (workspace, out), launched as a programmatic dependent
    (it waits on the device for the partials: griddepcontrol.wait). Unsplit, the partial pointer is the output,
    unread; split, the partial planes are the workspace of ``ws`` bytes. The recipe names the launches for
    miofind.torch's C++ path."""
    def factory(kerns):
        kmain = kerns[0]
        if smem > SMEM_STATIC:
            kmain.max_dynamic_shared_size_bytes = smem
        raw = Launch(kmain, main.grid, main.block, (PTR,) * 4 + (MAP,) * len(maps or ()), shared_mem=smem)
        lmain = raw.bind_maps(maps) if maps else raw
        lred = Launch(kerns[1], red.grid, red.block, (PTR, PTR), pdl=True) if red is not None else None

        def invoker(a, b, out, workspace, stream):
            if a % ALIGN or b % ALIGN or out % ALIGN:
                check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
            if lred is None:
                lmain(stream, a, b, out, out)
                return
            if not workspace:
                raise ValueError(f"{sid}: workspace of {ws} bytes required, got none")
            lmain(stream, a, b, out, workspace)
            lred(stream, workspace, out)
        return with_recipe(invoker, recipe_steps(raw, lred, maps), (ALIGN, ALIGN, ALIGN, 1), lred is not None)
    return factory


def check_aligned(sid: str, ptrs) -> None:
    """Raise a one-line ValueError naming the first (name, address) of ``ptrs`` not ALIGN-byte aligned."""
    for name, ptr in ptrs:
        if ptr % ALIGN:
            raise ValueError(f"{sid}: {name} at address {ptr:#x} is not {ALIGN}-byte aligned, "
                             "as this solution's vector accesses need")


# Persistent copy-engine tiles (BM, BN, WGS, STAGES, PINGPONG) a find of the forward or backward-data solver measures
# beside the default: the three that, with the default, came closest to the best of every persistent config, chosen
# with each layer held out in turn (the same three for 34 of 35 forward and all 35 backward-data layers, FP16, N = 32,
# ResNet-50 and non-ResNet): F 0.950 of cuDNN's best plan against the default's 1.037, B 0.946 against 1.045
# (bench/results/session-epi/fit/f_alternates.txt, b_alternates.txt); and the ping-pong config that added most to
# them on ResNet-50 N = 32 FP16 (F 0.950 -> 0.932, B 0.939 -> 0.919; bench/results/session-pp/call1/); and the
# three-warpgroup tile of the WGS = 3 shapes that added most to the others, chosen with each layer held out in turn, on
# ResNet-50 N = 32 FP16 (F 0.928 -> 0.919, B 0.924 -> 0.907 of cuDNN's best plan, isolated kernel time;
# bench/results/session-nov27l/call1/alternate_fb.txt)
ALTERNATE_TILES = ((64, 128, 1, 8, 0), (128, 128, 2, 4, 0), (256, 64, 2, 4, 0), (128, 128, 2, 4, 1), (192, 128, 3, 4, 0))
# TF32 (FP32 data: twice the bytes a tile, so three of the five above exceed the shared memory): the four persistent
# copy-engine tiles that, with the default, came closest to the best of every persistent config on ResNet-50's 22 F
# layers at N = 32, chosen greedily with each layer held out in turn: 0.967 of cuDNN's best TF32 plan against the
# default's 1.044 (isolated kernel time, H200; bench/results/session-nov28b/call1/, alternates.txt)
ALTERNATE_TILES_TF32 = ((128, 128, 1, 4, 0), (192, 128, 3, 3, 0), (64, 128, 2, 6, 1), (128, 64, 2, 6, 1))
# 32-deep K tiles (TMA = 2; BM, BN, WGS, STAGES, PERSIST) a find of a 16-bit forward with C % 64 != 0 (or backward data
# with dy's K % 64 != 0) measures after the others: the five that, added greedily, brought the best of the forward
# find's configs closest to the best of every TMA = 2 config on the 30 layers of PADDED_C (FP16, N = 32): 1.061 of
# cuDNN's best plan without them, 0.990 with them, 0.974 with every TMA = 2 config; 0.999 with each layer held out of
# its own picks (isolated kernel time, H200; bench/results/session-nov29j/call1/, pick_row64.py). Backward data with the
# same five: 1.114 -> 1.056, every TMA = 2 config 1.042 (call4/b_row64.txt). Tiles wider than max(64, 2N), or 32 wide
# for N > 32, are skipped, as in the space (``width_ok``).
ALTERNATE_TILES_ROW64 = ((256, 64, 2, 8, 1), (256, 32, 2, 6, 1), (256, 128, 2, 4, 1), (192, 64, 3, 4, 0),
                         (192, 128, 3, 4, 1))


class ImplicitGemmHopperBase(Solver):
    """Common applicability, configs and launch of the Hopper implicit-GEMM solvers."""

    family = "implicit_gemm_hopper"
    dtypes = frozenset({"FP16", "BF16"})
    tunable = True
    source = ""
    kernel_name = ""
    config_keys = KEYS                      # a subclass with its own tunables names them and their check
    tile_ok = staticmethod(config_ok)
    # tunables added after records were stored, at the value a stored config without them ran
    legacy_defaults = {"SPLITK": 1, "WSPEC": 0, "TMA": 0, "PINGPONG": 0}

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
        epc = 16 // esize(p)
        if p.c % epc or p.k % epc:
            return not_applicable(f"C={p.c}, K={p.k}: both must be multiples of {epc} (16-byte channel chunks)")
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

    # a find measures the default at once and the alternates later (in the background where it may leave work there)
    configs_now = 1

    def find_configs(self, problem: ProblemDescription, limit: int | None = None) -> list:
        """The default config (None), then ``alternatives``: the first ``limit`` of them when given."""
        if limit is not None and limit <= 1:
            return [None]
        p = problem.as_conv()
        if not self.applicability(p):
            return [None]
        return ([None] + self.alternatives(p))[:limit]

    def alternatives(self, p: ProblemDescription) -> list[dict]:
        """The configs a find measures after the default of applicable problem ``p``: where the default is a
        persistent copy-engine config, the ALTERNATE_TILES (TF32: ALTERNATE_TILES_TF32) persistent copy-engine configs
        that are valid and not the default; for a forward of 16-bit channels not a multiple of 64 whose default loads
        by cp.async (``padded_default``), persistent_tile's config and the ALTERNATE_TILES with padded K tiles where
        the padding less than doubles the K tiles, or the filter is 1x1 over dense pixels (bench/results/
        session-nov29h/call1/: 0.70-1.07x the default's time on 1x1 layers of 16-32 channels, 1.23-1.62x on 3x3
        layers of 32). A 16-bit forward of at most 32 output channels then tries the default and each of those with
        32-wide tiles (BN = 32). Then, where C % 64 != 0 (backward data: dy's channels), the valid ALTERNATE_TILES_ROW64
        with 32-deep K tiles (TMA = 2). Then, for 16-bit data whose GEMM N is a multiple of 192 (backward data: dx's
        channels), the 192-wide twin of each copy-engine config above (the default's too) where valid
        (``wide_twins``). Last, for 16-bit data, the resident-B twin (PERSIST = 2) of each persistent copy-engine config
        above (the default's too) where valid: all of N in one tile and all K tiles of B in the shared memory beside the
        stages (``resident_twins``). TF32's are in the tuning space only: on four ResNet-50 layers they were no faster
        than their PERSIST = 1 configs (medians 0.99-1.19, bench/results/session-nov30b/call7/)."""
        out, default = self._wide_alternatives(p), self.default_config(p)

        def new(cands):     # the candidates not measured yet (the default, ``out``), valid, in order
            return [c for c in cands if c != default and c not in out and self.is_valid_config(p, c)]
        if esize(p) == 2 and gemm_shape(self.forward_problem(p))[1] <= 32:
            # at most 32 output channels (backward data: dx's): each config above and the default again with 32-wide
            # tiles where valid (backward data: copy-engine ones only) (bench/results/session-nov29i/call8/: on seven
            # such forward layers the best 32-wide config beat the best 64-wide one by 6-22%)
            out = out + new(twins([default] + out, lambda c: True, BN=32))
        out = out + self._row64_alternatives(p)
        if esize(p) != 2:
            return out
        out = out + new(wide_twins(self.forward_problem(p), [default] + out))
        return out + new(resident_twins([default] + out))

    def _row64_alternatives(self, p: ProblemDescription) -> list[dict]:
        v = self.forward_problem(p)         # backward data: its main phase's forward view, dy's channels its C
        if v.c % BK == 0 or not row64_fits(v):
            return []
        n = gemm_shape(v)[1]
        tiles = ({"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": 1, "WSPEC": 1, "TMA": 2,
                  "PINGPONG": 0} for bm, bn, wgs, st, per in ALTERNATE_TILES_ROW64 if width_ok(bn, n))
        return [c for c in tiles if self.is_valid_config(p, c)]

    def _wide_alternatives(self, p: ProblemDescription) -> list[dict]:
        d, lead = self.default_config(p), []
        if not d["TMA"] and tma_padded(p) and (2 * p.c > tap_channels(p) or dense_pixels(p)) and \
                self.forward_problem(p) is p:
            # a forward whose channels are not a multiple of 64: persistent_tile's padded config leads, then the
            # ALTERNATE_TILES of it
            d = persistent_tile(p)
            if not self.is_valid_config(p, d):
                return []
            lead = [d]
        if not (d["PERSIST"] and d["TMA"]):
            return []
        alts = ALTERNATE_TILES_TF32 if p.dtype == "FP32" else ALTERNATE_TILES
        tiles = (dict(d, BM=bm, BN=bn, WGS=wgs, STAGES=st, PINGPONG=pp) for bm, bn, wgs, st, pp in alts)
        return lead + [c for c in tiles if c != d and self.is_valid_config(p, c)]

    def config_space(self, problem: ProblemDescription):
        yield from space(problem.as_conv())

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        """The FP32 partial planes of a split config (the default config when None); 0 unsplit."""
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        return partial_bytes(self.forward_problem(p), cfg)

    def legacy_config(self, config):
        """A config written before some of ``legacy_defaults``' tunables existed (stored records, tuned
        PerfDB entries: forward configs without SPLITK or WSPEC) as the config it ran, the missing ones at
        their ``legacy_defaults`` value; any other value unchanged."""
        keys = set(self.config_keys)
        if isinstance(config, dict) and keys - set(self.legacy_defaults) <= set(config) < keys:
            return {**self.legacy_defaults, **config}
        return config

    def config_of(self, problem: ProblemDescription, config) -> dict:
        """``config`` as given (legacy_config), or the default config of ``problem`` when None or empty."""
        return dict(self.legacy_config(config)) if config else self.default_config(problem)

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        config = self.legacy_config(config)
        if not isinstance(config, dict) or set(config) != set(self.config_keys):
            return False
        if any(not isinstance(v, int) or isinstance(v, bool) for v in config.values()):
            return False
        return self.tile_ok(problem.as_conv(), config)

    def checked_config(self, p: ProblemDescription, config) -> dict:
        """``config`` (the default when None) for problem ``p``, after a one-line ValueError where this solver does not
        apply to ``p`` (the kernel's static checks would fail in NVRTC, far from the cause) or the config is not
        valid."""
        fits = self.applicability(p)
        if not fits:
            raise ValueError(f"{self.id} does not apply to {p.key()}: {fits.reason}")
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        return cfg

    def epilogue(self, p: ProblemDescription) -> dict | None:
        """The macros of a fused epilogue (EPI_BIAS, EPI_ACT: the fused forward's), or None for the plain
        kernel. With them the kernels take the bias pointer last, and so does the invoker."""
        return None

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        epi = self.epilogue(p)
        kernels, smem = forward_kernels(p, cfg, self.source, self.kernel_name, overrides=epi)
        ws = partial_bytes(p, cfg)
        sid, key = self.id, p.key()
        nb = 1 if epi else 0                            # the bias pointer, last
        need_bias = bool(epi and epi["EPI_BIAS"])

        maps = forward_maps(p, cfg) if cfg["TMA"] else None

        def factory(kerns):
            kern = kerns[0]
            if smem > SMEM_STATIC:
                kern.max_dynamic_shared_size_bytes = smem
            launch = Launch(kern, kernels[0].grid, kernels[0].block, (PTR,) * (4 + nb) + (MAP,) * len(maps or ()),
                            shared_mem=smem)
            red = Launch(kerns[1], kernels[1].grid, kernels[1].block, (PTR,) * (2 + nb), pdl=True) if ws else None
            main = launch.bind_maps(maps) if maps else launch      # the maps of x (a) and w (b)

            def invoker(a, b, out, workspace, stream, *bias):
                if a % ALIGN or b % ALIGN or out % ALIGN:
                    check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
                if len(bias) != nb or (need_bias and not bias[0]):
                    raise ValueError(f"{sid}: {key} " + ("needs the bias pointer" if need_bias else
                                                         "takes a bias pointer (0: none)" if nb else "takes no bias"))
                if red is None:
                    main(stream, a, b, out, out, *bias)   # unsplit: the partial pointer is not read
                    return
                if not workspace:
                    raise ValueError(f"{sid}: workspace of {ws} bytes required, got none")
                main(stream, a, b, out, workspace, *bias)
                red(stream, workspace, out, *bias)
            return with_recipe(invoker, recipe_steps(launch, red, maps, bias=bool(nb)), (ALIGN, ALIGN, ALIGN, 1),
                               red is not None)

        return ConvSolution(self.id, kernels, ws, factory, cfg)
