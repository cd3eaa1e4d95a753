"""Hopper implicit GEMM, backward weights (kernels_src/implicit_gemm_hopper_wrw.cu): M = K, N = Y*X*C,
reduction over the N*Ho*Wo output pixels, both operands staged MN-major for wgmma's transposed
operands (sm_90a), FP16/BF16, NHWC, groups = 1. The reduction is split over SPLITK chunks (grid.y)
writing FP32 partial tiles to the workspace, summed in a fixed order by a second kernel, or over the
CLUSTER blocks of a thread-block cluster, each summing its share of the rows through distributed shared memory,
or both: each of the SPLITK chunks over a cluster, whose sum is the chunk's partial tile.

Tunables: BM (64 x WGS x 1 or 2), BN (64, 128, 256), WGS (1, 2, or 3 with the copy engine: BM = 192, BN <= 128),
STAGES (3-6; 8 with the copy engine),
SPLITK (requested reduction chunks; the kernel runs ceil(tiles / ceil(tiles / SPLITK)) of them),
CLUSTER (1 to 8 blocks of a cluster sharing the reduction or a SPLITK chunk of it, each summing 1 / CLUSTER of
the tiles' rows through distributed shared memory), WSPEC (1: a
producer warpgroup issues the loads, the WGS warpgroups only multiply, stages handed over by mbarriers),
TMA (1, with WSPEC and C % 64 == 0, or 16-bit with each tap's columns padded to 64-wide blocks: ``gemm_cols``: the
producer's one thread copies each stage's tiles with the copy engine, tensor maps of dy (tiled) and x (im2col) passed by
value, ``miofind.tma``), ST16 (1, unsplit without a cluster:
dw staged in shared memory and stored 16 bytes at a time instead of 4-byte pairs from the accumulators), RG (the
split's reduce: thread groups of a block, each summing a range of the partial planes; derived from the split by
red_groups, not searched; 4 in configs stored before it)."""

from __future__ import annotations

import math

from miofind import tma
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, ceil_div, not_applicable

from .implicit_gemm_base import INT32_MAX, SM_COUNT
from .implicit_gemm_hopper_base import (ARCH, SMEM_LIMIT, ImplicitGemmHopperBase, dense_pixels, padded_default,
                                        problem_macros, split_chunks, split_factory, split_tries, threads, tma_fits,
                                        tma_padded, x_dense, x_im2col)

KEYS = ("BM", "BN", "WGS", "STAGES", "SPLITK", "CLUSTER", "WSPEC", "TMA", "ST16", "RG")
CLUSTERS = (1, 2, 3, 4, 5, 6, 7, 8)
BJ = 64                 # reduction (output pixel) rows per pipeline stage
MAX_SPLITK = 256
MIN_JT_PER_SPLIT = 4    # a chunk of the reduction spans at least 4 j tiles (256 pixels)
RED_BLOCK = 256
RED_GROUPS = (4, 8, 16, 32)     # RG: thread groups of a reduce block summing ranges of the splits (RED_GROUPS)
WS_ALIGN = 256
# stage counts by load kind (TMA 0, 1). The copy engine's 8 stages, on ResNet-50's W layers (FP16 NHWC, N = 32, H200):
# the 8-stage twins of the find's and the shipped DB's configs took 64 -> 64 @56 3x3 to 0.808 of cuDNN from 0.852
# (bench/results/session-nov30f/call2/); on the 1x1 stride-1 layers at 28, 14 and 7, 8 stages ran 1-11% faster than
# 4-6 and than 10 or 12 (session-nov30e/call9/)
STAGES_OK = {0: range(3, 7), 1: (3, 4, 5, 6, 8)}


def wrw_shape(p: ProblemDescription) -> tuple[int, int, int]:
    """(M, N, J) = (K, Y*X*C, N*Ho*Wo)."""
    return p.k, p.c * math.prod(p.filter_size), p.n * math.prod(p.out_size)


def gemm_cols(p: ProblemDescription, cfg) -> int:
    """The GEMM's columns as ``cfg``'s kernel tiles them: Y*X*C, or with the copy engine and C % 64 != 0 each tap's
    C rounded up to whole 64-wide column blocks (the kernel's W_PAD: the copy engine reads zeros past C, and dw gets
    a tap's first C columns)."""
    taps = math.prod(p.filter_size)
    return taps * (ceil_div(p.c, 64) * 64 if cfg.get("TMA") and p.c % 64 else p.c)


def j_tiles(p: ProblemDescription) -> int:
    """The 64-pixel tiles of the reduction."""
    return ceil_div(wrw_shape(p)[2], BJ)


def split_geometry(p: ProblemDescription, splitk: int) -> tuple[int, int]:
    """(effective chunks, j tiles per chunk) for a requested SPLITK: no chunk is empty."""
    return split_chunks(j_tiles(p), splitk)


def red_groups(p: ProblemDescription, cfg) -> int:
    """RG for ``cfg``'s split: the largest of 4, 8 and 16 with at least 8 partial planes a group (4 unsplit). A reduce
    of many planes ran faster with more blocks of fewer planes each, by isolated kernel time on ResNet-50's W layers at
    N = 32, FP16, H200 (bench/results/session-nov29g/call6/): 64 -> 64 @56 1x1 at 131 planes 11.97 -> 10.37 us (16
    groups), at 224 planes 13.5 -> 12.1; 256 -> 64 @56 1x1 at 66 planes 25.3 -> 24.2 (8); at 33 planes or fewer
    within the runs' noise."""
    eff = split_geometry(p, cfg["SPLITK"])[0]
    g = 4
    while g < 16 and 16 * g <= eff:
        g *= 2
    return g


def smem_bytes(cfg) -> int:
    """STAGES x (BM + BN) MN rows of 64 j (128 bytes), plus 1 KiB to align to the swizzle period."""
    return cfg["STAGES"] * (cfg["BM"] + cfg["BN"]) * 128 + 1024


def blocks_per_sm(cfg) -> int:
    """2 when two blocks' shared memory fits an SM and the accumulators fit 128 registers a thread; 1 with
    WSPEC (three warpgroups: the consumers' accumulators would not fit two blocks' registers)."""
    if cfg.get("WSPEC", 0):
        return 1
    acc = cfg["BM"] // (64 * cfg["WGS"]) * cfg["BN"] // 2
    fits = 2 * (smem_bytes(cfg) + 1024) <= 228 * 1024
    return 2 if fits and (cfg["WGS"] == 1 or acc <= 64) else 1


def tiles(p: ProblemDescription, cfg) -> int:
    return ceil_div(p.k, cfg["BM"]) * ceil_div(gemm_cols(p, cfg), cfg["BN"])


def default_split(p: ProblemDescription, cfg) -> int:
    """The split with the least estimated time: waves of blocks (132 SMs x blocks_per_sm) times each
    block's j tiles plus 2 tiles of pipeline fill, at about 2 TFLOP/s per SM (what the H100 runs showed),
    plus the partial tiles' round trip (written and read back, 3 TB/s) and the reduce launch."""
    m, n = p.k, gemm_cols(p, cfg)
    jt = j_tiles(p)
    bps = blocks_per_sm(cfg)
    slots, nt = SM_COUNT * bps, tiles(p, cfg)
    tile_us = cfg["BM"] * cfg["BN"] * BJ * 2 / 2e6 * bps
    best = (math.inf, 1)
    for s in range(1, max(1, min(jt // MIN_JT_PER_SPLIT, MAX_SPLITK)) + 1):
        eff, per = split_geometry(p, s)
        if eff != s:
            continue
        est = ceil_div(nt * eff, slots) * (per + 2) * tile_us + (eff * m * n * 8 / 3e6 + 3 if eff > 1 else 0)
        best = min(best, (est, s))
    return best[1]


def cluster_tiles(p: ProblemDescription, splitk: int, cluster: int) -> int:
    """The j tiles each block of a cluster takes of its split's chunk (the chunk's last block may take fewer)."""
    return ceil_div(split_geometry(p, splitk)[1], cluster)


def cluster_splits(p: ProblemDescription, cfg, cluster: int) -> list[int]:
    """The splits a tuning tries for ``cfg`` in clusters of ``cluster`` blocks: unsplit, and the one or two
    effective splits whose blocks (tiles x splits x cluster) come nearest to filling the SMs once from below and
    from above."""
    slots = SM_COUNT * blocks_per_sm(cfg)
    per = tiles(p, cfg) * cluster
    lo = max(1, slots // per)
    return sorted({1, lo, lo + 1} if lo * per < slots else {1, lo})


def config_ok(p: ProblemDescription, cfg) -> bool:
    bm, bn, wgs, st, sk, cl, ws, tm, s16, rg = (cfg[k] for k in KEYS)
    if wgs not in (1, 2, 3) or bn not in (64, 128, 256) or not 1 <= sk <= MAX_SPLITK:
        return False
    # three consumer warpgroups: 192-row tiles (a third more rows a block than 128, three quarters of 256), loaded by
    # the copy engine only (the cp.async loaders' rows do not divide 24 chunks), 64 accumulators a thread
    if wgs == 3 and not (bm == 192 and bn <= 128 and tm):
        return False
    if ws not in (0, 1) or tm not in (0, 1) or s16 not in (0, 1) or rg not in RED_GROUPS or st not in STAGES_OK[tm]:
        return False
    # ST16 stages the finished dw tile: the unsplit path only
    if s16 and (cl != 1 or split_geometry(p, sk)[0] != 1):
        return False
    # TMA: dy's rows (the J pixels) are 32-bit box coordinates; C % 64 != 0: 16-bit, each tap's columns padded (W_PAD)
    if tm and not (ws and (tma_fits(p) or tma_padded(p)) and wrw_shape(p)[2] < INT32_MAX):
        return False
    if bm % (64 * wgs) or bm // (64 * wgs) not in (1, 2) or (bm // (64 * wgs)) * bn > 256:
        return False
    if cl not in CLUSTERS:
        return False
    eff, per = split_geometry(p, sk)
    # more reduce groups than planes would leave groups idle
    if rg > 4 and rg > eff:
        return False
    # a cluster split: each block at least 2 j tiles of its chunk, the FP32 tile fits its pipeline buffers
    if cl > 1 and not (per >= 2 * cl and bm * (bn + 8) * 4 <= st * (bm + bn) * 128):
        return False
    m, n = p.k, gemm_cols(p, cfg)
    if eff > 1 and eff * m * n >= 2**40:
        return False
    # WSPEC's 2 x STAGES mbarriers are static shared memory beside the dynamic buffers
    return eff * cl <= 65535 and smem_bytes(cfg) + 16 * st * ws <= SMEM_LIMIT


# The time model that ranks a find's alternative configs (estimate_us), fitted by bench/fit_wrw_estimate.py to the
# isolated kernel times of every copy-engine config (STAGES 4 or 6) swept on ResNet-50's 22 W layers and 16
# non-ResNet ones at N = 32, FP16, H100 (bench/results/session-wrw/call3/, session-epi/call2/; the fit and its
# leave-one-layer-out check: session-epi/fit/): per tile shape (BM, BN, WGS, TMA), microseconds per wave per j tile
# of a block and per wave; then a launch, the split's partial planes per MB and its reduce launch, and the cluster
# split's distributed-shared-memory exchange per MB of a wave's tiles.
ESTIMATE = {
    "tiles": {(64, 64, 1, 0): (0.298, 0.0), (64, 64, 1, 1): (0.192, 0.51), (64, 128, 1, 0): (0.518, 0.07),
              (64, 128, 1, 1): (0.246, 1.63), (64, 256, 1, 0): (0.853, 3.64), (64, 256, 1, 1): (0.316, 2.87),
              (128, 64, 1, 0): (0.433, 0.0), (128, 64, 1, 1): (0.277, 1.45), (128, 64, 2, 0): (0.445, 0.0),
              (128, 64, 2, 1): (0.279, 1.33), (128, 128, 1, 0): (0.664, 4.73), (128, 128, 1, 1): (0.311, 3.14),
              (128, 128, 2, 0): (0.679, 3.39), (128, 128, 2, 1): (0.326, 2.75), (128, 256, 2, 0): (1.152, 2.71),
              (128, 256, 2, 1): (0.568, 2.06), (256, 64, 2, 0): (0.711, 0.19), (256, 64, 2, 1): (0.419, 2.36),
              (256, 128, 2, 0): (0.961, 3.35), (256, 128, 2, 1): (0.566, 2.62),
              # three warpgroups: fitted to their 4-stage configs' isolated times on ResNet-50's W layers (400 configs,
              # bench/results/session-nov27l/call1/: fit_wgs3.py), the other terms held at the values above
              (192, 64, 3, 1): (0.321, 4.71), (192, 128, 3, 1): (0.410, 3.51)},
    "launch_us": 4.614, "partial_us_per_mb": 0.547, "reduce_us": 1.015, "cluster_us_per_mb": 66.97,
}
ALTERNATES = 3          # configs a find measures beside the default, later (the Hopper base's configs_now = 1)


def estimate_terms(p: ProblemDescription, cfg) -> tuple:
    """(tile shape, waves x j tiles per block, waves, MB of partial planes, reduce launches, MB exchanged by the
    cluster split): the terms estimate_us weighs. Waves are of one block per SM."""
    m, n = p.k, gemm_cols(p, cfg)
    nt, cl = tiles(p, cfg), cfg["CLUSTER"]
    eff = split_geometry(p, cfg["SPLITK"])[0]
    blocks = nt * eff * cl
    per = cluster_tiles(p, cfg["SPLITK"], cl)
    waves = ceil_div(blocks, SM_COUNT)
    return ((cfg["BM"], cfg["BN"], cfg["WGS"], cfg["TMA"]), waves * per, waves,
            eff * m * n * 8 / 1e6 if eff > 1 else 0.0, 1 if eff > 1 else 0,
            waves * cfg["BM"] * cfg["BN"] * 4 / 1e6 * (cl - 1) / cl if cl > 1 else 0.0)


def estimate_us(p: ProblemDescription, cfg, coef=None) -> float:
    """Estimated isolated time of ``cfg`` on ``p`` (ESTIMATE's model, or ``coef`` of the same form)."""
    c = coef or ESTIMATE
    shape, jw, waves, part_mb, reduces, cl_mb = estimate_terms(p, cfg)
    k, g = c["tiles"].get(shape, (math.inf, 0.0))
    return (c["launch_us"] + jw * k + waves * g + part_mb * c["partial_us_per_mb"] + reduces * c["reduce_us"]
            + cl_mb * c["cluster_us_per_mb"])


def alternates(p: ProblemDescription, count: int | None = ALTERNATES, coef=None) -> list[dict]:
    """The ``count`` (None: all) configs of the space with the least estimate_us (ESTIMATE's model, or ``coef``),
    other than the default: 4 stages, the default's loads (the copy engine where it applies, else the producer
    warpgroup's cp.async)."""
    dflt = default_tile(p)
    pool = [c for c in space(p, stages=(4,), loads=((1, dflt["TMA"]),)) if c != dflt]
    pool.sort(key=lambda c: estimate_us(p, c, coef))
    return pool[:count]


def space(p: ProblemDescription, stages=STAGES_OK[1], loads=((0, 0), (1, 0), (1, 1))):
    """The config space: every tile, stage count and load kind ((WSPEC, TMA) pairs), each at the splits a tuning
    tries (split_tries around default_split) and in clusters of 2 to 8 blocks at cluster_splits; valid configs only
    (8 stages: the copy engine's)."""
    m, n, _ = wrw_shape(p)
    for bm in (64, 128, 192, 256):
        for bn in (64, 128, 256):
            if bn > max(64, 2 * n) or bm > max(64, 2 * m):
                continue
            for wgs in (1, 2, 3):
                for st in stages:
                    for ws, tm in loads:
                        cfg = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "SPLITK": 1, "CLUSTER": 1,
                               "WSPEC": ws, "TMA": tm, "ST16": 0, "RG": 4}
                        # validity does not depend on RG: the derived value never exceeds the planes
                        for c in split_tries(cfg, default_split(p, cfg), lambda s: split_geometry(p, s)[0],
                                             lambda c: config_ok(p, c)):
                            c = dict(c, RG=red_groups(p, c))
                            yield c
                            if config_ok(p, dict(c, ST16=1)):
                                yield dict(c, ST16=1)
                        for cl in CLUSTERS[1:]:
                            seen = set()
                            for sk in cluster_splits(p, cfg, cl):
                                c = dict(cfg, CLUSTER=cl, SPLITK=sk)
                                c["RG"] = red_groups(p, c)
                                eff = split_geometry(p, sk)[0]
                                if eff not in seen and config_ok(p, c):
                                    seen.add(eff)
                                    yield c


def padded_columns(p: ProblemDescription) -> bool:
    """Whether the default pads each tap's columns for the copy engine (C % 64 != 0): where the forward's rule pads
    (padded_default: C >= 96, padding at most a third), for filters larger than 1x1, or 1x1 filters of 224 channels or
    more. The Hopper W solver's find (default and alternates) on the 22 such layers of tests/shapes.py's PADDED_C
    (bench/results/session-nov29h/call11/, one run each way, H200, FP16 NHWC N = 32), padded / cp.async: 0.73-0.97 on
    6 of the 7 larger filters (1.12 on Inception's 96 -> 96 3x3 stride 2), 0.87-1.04 on the 1x1 layers of 224
    channels or more, 0.96-1.14 (5 of 7 slower) on the narrower 1x1 layers."""
    return padded_default(p) and (math.prod(p.filter_size) > 1 or p.c >= 224)


def default_tile(p: ProblemDescription) -> dict:
    """From the H100 sweep after the loader rewrite (bench/results/hopper-igemm/wrw-loaders): 1x1
    stride-1 filters (x read without pixel decode) run best with one warpgroup of 64 x 128 tiles, other
    filters with two warpgroups of 128 x 128 (64 x 128 for K <= 64); 5 stages; the estimated split
    (default_split), which was the fastest of (it, half, twice it) on 19 of the 22 ResNet-50 layers.
    Loads through the copy engine (WSPEC = 1, TMA = 1, the same tile and split) where it applies: faster
    on 20 of the 22 ResNet-50 layers (bench/results/session-tma/)."""
    m, n, _ = wrw_shape(p)
    light = math.prod(p.filter_size) == 1 and all(s == 1 for s in p.strides)
    if light or m <= 64:
        cfg = {"BM": 64, "BN": 128 if n > 64 else 64, "WGS": 1, "STAGES": 5}
    else:
        cfg = {"BM": 128, "BN": 128 if n > 64 else 64, "WGS": 2, "STAGES": 5}
    cfg["SPLITK"] = default_split(p, cfg)
    cfg["CLUSTER"] = 1
    cfg["WSPEC"] = 0
    cfg["TMA"] = 0
    cfg["ST16"] = 0
    cfg["RG"] = red_groups(p, cfg)
    tm = dict(cfg, WSPEC=1, TMA=1)
    cfg = tm if config_ok(p, tm) and (tma_fits(p) or padded_columns(p)) else cfg
    return dict(cfg, ST16=1) if config_ok(p, dict(cfg, ST16=1)) else cfg


class ImplicitGemmHopperWrw(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperWrw"
    version = 6                 # 2: the cluster split (CLUSTER); 3: the producer warpgroup (WSPEC); 4: the reduce as a programmatic dependent launch; 5: ST16 and clusters of any size 2-8; 6: clusters with SPLITK > 1
    algorithm = "miopenConvolutionBwdWeightsAlgoImplicitGEMM"
    directions = frozenset("W")
    source = "implicit_gemm_hopper_wrw.cu"
    kernel_name = "igemm_hopper_wrw"
    config_keys = KEYS
    tile_ok = staticmethod(config_ok)
    # a tuning searches up to 400 configs, until 48 in a row bring no gain: on ResNet-50's 22 W layers (FP16 NHWC,
    # N = 32, one H200, no system DB) the configs the tuner's default budget (16 configs, patience 8) keeps took 1.039x
    # (geomean; 7 layers more than 2% slower) the time of those a 400-config, patience-100 search keeps, 400 / 48's
    # 1.009x (2), measured again side by side; its search took 87 s against 19 s and 155 s
    # (bench/results/session-nov30h/call2/, call3/). Its space (1500-2700 configs) holds splits x clusters whose best
    # lie far from the default; the backward-data solver's default budget kept 1.001x.
    tune_budget = (400, 48)
    # configs stored before the cluster split, WSPEC, TMA, ST16, RG (4: the reduce they ran)
    legacy_defaults = {"CLUSTER": 1, "WSPEC": 0, "TMA": 0, "ST16": 0, "RG": 4}

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        m, n, j = wrw_shape(p)
        if m * n >= INT32_MAX:
            return not_applicable(f"filter of {m * n} elements: 2^31 or more")
        if ceil_div(j, BJ) >= INT32_MAX:
            return not_applicable(f"reduction of {j} output pixels: 2^31 tiles of 64 or more")
        return APPLICABLE

    def default_config(self, problem: ProblemDescription) -> dict:
        return default_tile(problem.as_conv())

    def alternatives(self, p: ProblemDescription) -> list[dict]:
        """``alternates``: the ALTERNATES configs of the least estimated time. On the 38 swept layers, each held out
        of the fit in turn, the fastest of the default and the three came to 0.951 of cuDNN's best plan on the
        non-ResNet layers and 1.121 on ResNet-50's, against 1.125 and 1.182 for the default alone
        (bench/results/session-epi/fit/)."""
        return alternates(p)

    def config_space(self, problem: ProblemDescription):
        yield from space(problem.as_conv())

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        eff, _ = split_geometry(p, cfg["SPLITK"])
        m, n = p.k, gemm_cols(p, cfg)
        return 0 if eff == 1 else ceil_div(eff * m * n * 4, WS_ALIGN) * WS_ALIGN

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        eff, per = split_geometry(p, cfg["SPLITK"])
        cl = cfg["CLUSTER"]
        ny = eff * cl        # grid.y: each chunk's cluster of blocks
        dense = cfg["TMA"] and dense_pixels(p)      # x read through a tiled map of the dense J x C matrix
        mac = {
            **problem_macros(p),
            "BM": cfg["BM"], "BN": cfg["BN"], "WGS": cfg["WGS"], "STAGES": cfg["STAGES"],
            "SPLITK": eff, "JT_PER": per, "MIN_BLOCKS": blocks_per_sm(cfg), "RED_BLOCK": RED_BLOCK,
            "RED_GROUPS": cfg["RG"], **({"CLUSTER": cl, "JT_R": cluster_tiles(p, cfg["SPLITK"], cl)} if cl > 1 else {}),
            **({"WSPEC": 1} if cfg["WSPEC"] else {}), **({"TMA": 1} if cfg["TMA"] else {}),
            **({"ST16": 1} if cfg["ST16"] else {}), **({"B_DENSE": 1} if dense else {}),
        }
        mac = tuple((k, str(v)) for k, v in mac.items())
        smem = smem_bytes(cfg)
        m, n = p.k, gemm_cols(p, cfg)
        main = KernelInfo(self.source, self.kernel_name, (tiles(p, cfg), ny, 1), (threads(cfg), 1, 1),
                          macros=mac, options=(f"-arch={ARCH}",))
        kernels = [main]
        if eff > 1:
            kernels.append(KernelInfo(self.source, "igemm_hopper_wrw_reduce",
                                      (ceil_div(m * n // 4, RED_BLOCK // cfg["RG"]), 1, 1),
                                      (RED_BLOCK, 1, 1), macros=mac, options=(f"-arch={ARCH}",)))
        ws_total = self.workspace_bytes(p, cfg)
        maps = None
        if cfg["TMA"]:      # dy as a dense J x K matrix (64 x 64 boxes), x's im2col map (64 pixels a box; dense x: tiled)
            maps = (tma.MapCache(tma.TiledSpec(p.dtype, (m, wrw_shape(p)[2]), (m * 2,), (64, BJ))),
                    tma.MapCache(x_dense(p, BJ) if dense else x_im2col(p, BJ)))

        factory = split_factory(self.id, main, kernels[1] if eff > 1 else None, maps, smem, ws_total)
        return ConvSolution(self.id, kernels, ws_total, factory, cfg)
