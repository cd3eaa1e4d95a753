"""Hopper implicit GEMM, forward, with the K reduction split over a thread-block cluster
(kernels_src/implicit_gemm_hopper_fwd.cu built with CSPLIT = 1): the non-persistent configs of ConvImplicitGemmHopperFwd
split into SPLITK = 2..8 chunks (grid.y), the chunks of a tile one cluster. Each block stages its FP32 partial tile in
its shared memory, and each rank sums a slice of the tile's rows from every rank's tile through distributed shared
memory (in rank order, the sums of the forward's split) and writes y. The forward's split writes its partial planes to
a workspace and reads them back in a second kernel: on a small grid that round trip is as long as the multiplication
(``split_estimate_us``). FP16/BF16, NHWC, plain problems (no fused epilogue), grids under MAX_WAVES waves unsplit (a
split then fills the GPU, or evens out its last wave) with K tiles for two chunks."""

from __future__ import annotations

from miofind.solver import APPLICABLE, ConvSolution, not_applicable

from .implicit_gemm_hopper_base import (SM_COUNT, ImplicitGemmHopperBase, config_ok, forward_kernels, forward_maps,
                                        gemm_shape, ktiles, space, split_estimate_us, split_factory, split_geometry,
                                        tiles, tma_fits)

CS_MAX = 8      # chunks of a cluster: the portable cluster size
MIN_CHUNK = 2   # K tiles of a chunk at least
MAX_WAVES = 2   # applicable where the default tile's unsplit grid is under two waves of one block an SM


def cluster_ok(p, cfg) -> bool:
    """A valid non-persistent forward config (``config_ok``) with 64-deep K tiles, split into SPLITK chunks, 2 to
    CS_MAX, none empty (the effective split is SPLITK itself), of MIN_CHUNK K tiles at least."""
    if cfg["PERSIST"] != 0 or cfg["TMA"] == 2 or not 2 <= cfg["SPLITK"] <= CS_MAX:
        return False
    eff, per = split_geometry(p, cfg["SPLITK"])
    return eff == cfg["SPLITK"] and per >= MIN_CHUNK and config_ok(p, cfg)


def cluster_split(p, cfg) -> int:
    """The split of ``cfg``'s tile with the least estimated time without a partial-plane round trip
    (``split_estimate_us``'s waves of blocks only), 2 to CS_MAX; 0 where none is valid."""
    best = None
    for s in range(2, CS_MAX + 1):
        c = dict(cfg, SPLITK=s)
        if cluster_ok(p, c):
            est = split_estimate_us(p, c, s, planes=False)
            best = min(best or (est, s), (est, s))
    return best[1] if best else 0


def base_tile(p) -> dict:
    """128-row tiles of two warpgroups, 128 wide (64 for N <= 64), 4 stages, loaded by the copy engine where it serves
    x (``tma_fits``), else by cp.async; unsplit."""
    tm = int(tma_fits(p))
    return {"BM": 128, "BN": 64 if gemm_shape(p)[1] <= 64 else 128, "WGS": 2, "STAGES": 4, "PERSIST": 0,
            "SPLITK": 1, "WSPEC": tm, "TMA": tm, "PINGPONG": 0}


# Tiles (BM, BN, WGS, STAGES) a find measures beside the default, each at its own ``cluster_split``
ALTERNATE_TILES = ((64, 128, 1, 4), (128, 64, 2, 4))


class ImplicitGemmHopperFwdClusterSplit(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperFwdClusterSplit"
    version = 1
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    source = "implicit_gemm_hopper_fwd.cu"
    kernel_name = "igemm_hopper_fwd"
    tile_ok = staticmethod(cluster_ok)
    legacy_defaults = {}

    def applicability(self, problem):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        tile = base_tile(p)
        if ktiles(p) < 2 * MIN_CHUNK or tiles(p, tile) >= MAX_WAVES * SM_COUNT:
            return not_applicable(f"{gemm_shape(p)[0]} x {gemm_shape(p)[1]} outputs in {ktiles(p)} K tiles: the "
                                  f"unsplit grid fills {MAX_WAVES} waves, or the reduction is too short to split")
        if not cluster_split(p, tile):
            return not_applicable("no split of 2 to 8 chunks fits the reduction")
        return APPLICABLE

    def default_config(self, problem):
        p = problem.as_conv()
        tile = base_tile(p)
        return dict(tile, SPLITK=cluster_split(p, tile))

    def alternatives(self, p):
        """The default tile at half and twice its split, then ALTERNATE_TILES at their own splits, where valid."""
        d = self.default_config(p)
        out = [dict(d, SPLITK=d["SPLITK"] // 2), dict(d, SPLITK=d["SPLITK"] * 2)]
        for bm, bn, wgs, st in ALTERNATE_TILES:
            c = dict(d, BM=bm, BN=bn, WGS=wgs, STAGES=st)
            out.append(dict(c, SPLITK=cluster_split(p, c)))
        return [c for i, c in enumerate(out) if c != d and c not in out[:i] and cluster_ok(p, c)]

    def config_space(self, problem):
        p = problem.as_conv()
        seen = []
        for c in space(p):
            if c["PERSIST"] or c["TMA"] == 2:
                continue
            for s in range(2, CS_MAX + 1):
                t = dict(c, SPLITK=s)
                if t not in seen and cluster_ok(p, t):
                    seen.append(t)
                    yield t

    def workspace_bytes(self, problem, config=None) -> int:
        """None: the partial tiles stay in the cluster's shared memory."""
        return 0

    def get_solution(self, problem, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        kernels, smem = forward_kernels(p, cfg, self.source, self.kernel_name, overrides={"CSPLIT": 1})
        main = kernels[0]           # not its reduce kernel: the cluster sums the partial tiles itself
        maps = forward_maps(p, cfg) if cfg["TMA"] else None
        return ConvSolution(self.id, [main], 0, split_factory(self.id, main, None, maps, smem, 0), cfg)
