"""Hopper implicit GEMM, forward, with copy-engine stores (kernels_src/implicit_gemm_hopper_fwd_tma_store.cu): the
persistent copy-engine configs of ConvImplicitGemmHopperFwd (PERSIST = TMA = WSPEC = 1, unsplit; ping-pong or not),
whose epilogue hands each output tile to the copy engine (a tiled map of y as an M x K matrix) instead of storing it
16 bytes a thread. The consumers then go on to the next tile while the tile is written. FP16/BF16, NHWC, plain
problems (no fused epilogue), copy-engine loads (C % 64 == 0, or padded K tiles: ``tma_padded``), fewer than 2^31
output pixels (32-bit box coordinates). The tiles are the forward solver's persistent copy-engine tiles (its default
and the alternates a find measures; its tuning space also holds the persistent 32-deep tiles, TMA = 2), each with one
more tunable, OBUF: the output tiles a consumer group stages into in turn (2: a tile's stores overlap the next tile's
staging; a find takes 2 wherever the shared memory holds them). A 32-wide tile is stored as one box of 32 channels
(64-byte rows under the 64-byte swizzle)."""

from __future__ import annotations

from miofind import tma
from miofind.launch import A, B, MAP, OUT, PTR, Launch, with_recipe
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, not_applicable

from .implicit_gemm_base import INT32_MAX
from .implicit_gemm_hopper_base import (ALIGN, ALTERNATE_TILES, ARCH, KEYS, SMEM_LIMIT, SMEM_STATIC,
                                        ImplicitGemmHopperBase, blocks_per_sm, check_aligned, config_ok, esize,
                                        forward_maps, gemm_shape, macros, persistent_tile, row_bytes, sm_count, space,
                                        swizzle_of, threads, tiles, tma_fits, tma_padded, wide_twins)

TS_KEYS = KEYS + ("OBUF",)
BOX_N = 64      # output channels of a stored box: its 128-byte swizzled rows (a 32-wide tile's one box: 32)


def base_tile(cfg) -> dict:
    """The forward solver's config of a tile (without OBUF)."""
    return {k: cfg[k] for k in KEYS}


def smem_bytes(p, cfg) -> int:
    """STAGES x (BM + BN) rows of 128 bytes (64 with 32-deep K tiles: ``row_bytes``), (1 + PINGPONG) x OBUF output
    tiles of BM x BN elements, and 1 KiB to align the first tile to the swizzle's 1024-byte period."""
    bm, bn = cfg["BM"], cfg["BN"]
    return cfg["STAGES"] * (bm + bn) * row_bytes(cfg) + (1 + cfg["PINGPONG"]) * cfg["OBUF"] * bm * bn * esize(p) + 1024


def persistent_ok(p, cfg) -> bool:
    """A valid forward tile that is persistent, on the copy engine (64- or 32-deep K tiles) and unsplit, at least one
    stored box wide (BN >= 64; 32 with 32-deep K tiles, the combination measured), with OBUF 1 or 2 output tiles whose
    shared memory (and the 2 x STAGES mbarriers beside it) fits."""
    if cfg["PERSIST"] != 1 or cfg["TMA"] not in (1, 2) or cfg["SPLITK"] != 1 or cfg["OBUF"] not in (1, 2):
        return False
    if cfg["BN"] < BOX_N and cfg["TMA"] != 2:
        return False
    return config_ok(p, base_tile(cfg)) and smem_bytes(p, cfg) + 16 * cfg["STAGES"] <= SMEM_LIMIT


def with_obuf(p, tile: dict) -> dict:
    """A forward tile with OBUF = 2 where it fits, else 1."""
    two = dict(tile, OBUF=2)
    return two if persistent_ok(p, two) else dict(tile, OBUF=1)


class ImplicitGemmHopperFwdTmaStore(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperFwdTmaStore"
    version = 1
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    source = "implicit_gemm_hopper_fwd_tma_store.cu"
    kernel_name = "igemm_hopper_fwd_tma_store"
    config_keys = TS_KEYS
    tile_ok = staticmethod(persistent_ok)
    legacy_defaults = {}

    def applicability(self, problem):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        if not (tma_fits(p) or tma_padded(p)):
            return not_applicable(f"C={p.c} and the padding, stride and filter: copy-engine loads need C % 8 == 0 and "
                                  "im2col corners in range")
        m, _, _ = gemm_shape(p)
        if m >= INT32_MAX:
            return not_applicable(f"{m} output pixels: copy-engine stores take 32-bit row coordinates")
        if not persistent_ok(p, with_obuf(p, persistent_tile(p))):
            return not_applicable("no persistent copy-engine tile fits")
        return APPLICABLE

    def default_config(self, problem):
        p = problem.as_conv()
        return with_obuf(p, persistent_tile(p))

    def alternatives(self, p):
        """The forward solver's alternates (ALTERNATE_TILES), each with OBUF 2 where it fits, then, where N is a multiple
        of 192, the 192-wide twins of the default and those (``wide_twins``; three stored boxes a tile). The 32-deep
        tiles are in the tuning space only: beside the forward's own 32-deep configs they gained at most 1.6% on one of
        seven narrow-channel layers as a find's alternates (bench/results/session-nov30a/call9/)."""
        d = self.default_config(p)
        out = [with_obuf(p, dict(d, BM=bm, BN=bn, WGS=wgs, STAGES=st, PINGPONG=pp))
               for bm, bn, wgs, st, pp in ALTERNATE_TILES]
        out = [c for i, c in enumerate(out) if c != d and c not in out[:i] and persistent_ok(p, c)]
        wide = [with_obuf(p, base_tile(c)) for c in wide_twins(p, [d] + out)]
        return out + [c for i, c in enumerate(wide) if c not in out and c not in wide[:i] and persistent_ok(p, c)]

    def config_space(self, problem):
        p = problem.as_conv()
        for c in space(p):
            if c["PERSIST"] == 1 and c["TMA"] and c["SPLITK"] == 1:
                for ob in (1, 2):
                    if persistent_ok(p, dict(c, OBUF=ob)):
                        yield dict(c, OBUF=ob)

    def get_solution(self, problem, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        bps = blocks_per_sm(p, cfg, smem_bytes(p, cfg))
        mac = {**macros(p, base_tile(cfg)), "OBUF": cfg["OBUF"], "MIN_BLOCKS": bps}
        main_k = KernelInfo(self.source, self.kernel_name, (min(tiles(p, cfg), sm_count() * bps), 1, 1),
                            (threads(cfg), 1, 1), macros=tuple((k, str(v)) for k, v in mac.items()),
                            options=(f"-arch={ARCH}",))
        kernels, smem = [main_k], smem_bytes(p, cfg)
        m, n, _ = gemm_shape(p)
        # the forward's maps of x and w; y as an M x K matrix (dense NHWC), stored in boxes of BOX_N channels x BM
        # pixels (a 32-wide tile: 32 channels, 64-byte rows)
        box_n = min(cfg["BN"], BOX_N)
        ymap = tma.MapCache(tma.TiledSpec(p.dtype, (n, m), (n * esize(p),), (box_n, cfg["BM"]),
                                          swizzle_of(box_n * esize(p))))
        maps = (*forward_maps(p, cfg), ymap)
        sid = self.id

        def factory(kerns):
            kern = kerns[0]
            if smem > SMEM_STATIC:
                kern.max_dynamic_shared_size_bytes = smem
            launch = Launch(kern, main_k.grid, main_k.block, (PTR,) * 3 + (MAP,) * 3, shared_mem=smem)
            run = launch.bind_maps(maps)

            def invoker(a, b, out, workspace, stream):
                if a % ALIGN or b % ALIGN or out % ALIGN:
                    check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
                run(stream, a, b, out)
            steps = [(launch, ((A, 0), (B, 0), (OUT, 0)),
                      ((A, 0, maps[0].spec), (B, 0, maps[1].spec), (OUT, 0, maps[2].spec)))]
            return with_recipe(invoker, steps, (ALIGN, ALIGN, ALIGN, 1), False)

        return ConvSolution(self.id, kernels, 0, factory, cfg)

