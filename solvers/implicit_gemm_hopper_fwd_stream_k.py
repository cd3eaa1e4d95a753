"""Hopper implicit GEMM, forward, stream-K (kernels_src/implicit_gemm_hopper_fwd_stream_k.cu): the persistent
copy-engine tiles of ConvImplicitGemmHopperFwd (PERSIST = TMA = WSPEC = 1, unsplit, no ping-pong), with the
(tile, K tile) iterations of all output tiles cut into one equal range per block instead of whole tiles per block.
A tile whose K loop is shared by blocks is summed through FP32 slots of the workspace, in block order, by the block
that finishes its share last (deterministic; no block waits for another). Meant for problems whose tiles leave the
last wave of the persistent forward partly idle: ResNet-50's 1x1 layers at 14 x 14 and 7 x 7 with long reductions.
FP16/BF16, NHWC, plain problems, C % 64 == 0 (copy-engine loads). Two launches: the workspace's counters cleared,
then the main kernel as its programmatic dependent."""

from __future__ import annotations

import numpy as np

from miofind.launch import A, B, MAP, OUT, PTR, WS, Launch, with_recipe
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, ceil_div, not_applicable

from .implicit_gemm_hopper_base import (ALIGN, ALTERNATE_TILES, ARCH, SMEM_STATIC, WS_ALIGN,
                                        ImplicitGemmHopperBase, blocks_per_sm, check_aligned, config_ok, forward_maps,
                                        ktiles, macros, persistent_tile, smem_bytes, sm_count, space, threads, tiles,
                                        tma_fits)

ZERO_BLOCK = 256

def stream_ok(p, cfg) -> bool:
    """A valid forward tile that is persistent, on the copy engine, unsplit and not ping-pong."""
    return (cfg["PERSIST"] == 1 and cfg["TMA"] == 1 and cfg["SPLITK"] == 1 and cfg["PINGPONG"] == 0
            and config_ok(p, cfg))

def stream_tile(p) -> dict:
    """128 x 128 tiles of two warpgroups (128 x 64 for N <= 64), 4 stages: the persistent forward's tile wherever its
    tiles fill the GPU. Where they would not (persistent_tile then takes 64-row tiles of one warpgroup), stream-K
    spreads the tiles' K loops over every SM instead."""
    return dict(persistent_tile(p), BM=128, WGS=2)


def blocks(p, cfg) -> int:
    """G: the blocks that run at once, at most one per (tile, K tile) iteration."""
    return min(sm_count() * blocks_per_sm(p, cfg), tiles(p, cfg) * ktiles(p))

def workspace_of(p, cfg) -> int:
    """Two FP32 slots of a BM x BN tile per block, then one int counter per block (256-byte aligned)."""
    g = blocks(p, cfg)
    return ceil_div(2 * g * cfg["BM"] * cfg["BN"] * 4 + 4 * g, WS_ALIGN) * WS_ALIGN

def counters_at(p, cfg) -> int:
    """Byte offset of the counters in the workspace."""
    return 2 * blocks(p, cfg) * cfg["BM"] * cfg["BN"] * 4

class ImplicitGemmHopperFwdStreamK(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperFwdStreamK"
    version = 1
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    source = "implicit_gemm_hopper_fwd_stream_k.cu"
    kernel_name = "igemm_hopper_fwd_sk"
    tile_ok = staticmethod(stream_ok)
    legacy_defaults = {}

    def applicability(self, problem):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        if not tma_fits(p):
            return not_applicable(f"C={p.c} and the padding, stride and filter: copy-engine loads need C % 64 == 0 and "
                                  "im2col corners in range")
        if not stream_ok(p, stream_tile(p)):
            return not_applicable("no persistent copy-engine tile fits")
        return APPLICABLE

    def default_config(self, problem):
        return stream_tile(problem.as_conv())

    def alternatives(self, p):
        """The forward solver's alternates (ALTERNATE_TILES) but ping-pong ones."""
        d = self.default_config(p)
        out = [dict(d, BM=bm, BN=bn, WGS=wgs, STAGES=st, PINGPONG=0) for bm, bn, wgs, st, pp in ALTERNATE_TILES
               if not pp]
        return [c for i, c in enumerate(out) if c != d and c not in out[:i] and stream_ok(p, c)]

    def config_space(self, problem):
        p = problem.as_conv()
        for c in space(p):
            if stream_ok(p, c):
                yield c

    def workspace_bytes(self, problem, config=None) -> int:
        p = problem.as_conv()
        return workspace_of(p, self.config_of(p, config))

    def get_solution(self, problem, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        mac = tuple((k, str(v)) for k, v in macros(p, cfg).items())
        g = blocks(p, cfg)
        opts = (f"-arch={ARCH}",)
        zero_k = KernelInfo(self.source, "igemm_hopper_fwd_sk_zero", (1, 1, 1), (ZERO_BLOCK, 1, 1), macros=mac,
                            options=opts)
        main_k = KernelInfo(self.source, self.kernel_name, (g, 1, 1), (threads(cfg), 1, 1), macros=mac, options=opts)
        smem, ws, cnt = smem_bytes(p, cfg), workspace_of(p, cfg), counters_at(p, cfg)
        maps = forward_maps(p, cfg)
        sid = self.id

        def factory(kerns):
            kz, km = kerns
            if smem > SMEM_STATIC:
                km.max_dynamic_shared_size_bytes = smem
            lzero = Launch(kz, zero_k.grid, zero_k.block, (PTR, np.int32(g)))
            launch = Launch(km, main_k.grid, main_k.block, (PTR,) * 4 + (MAP,) * 2, shared_mem=smem, pdl=True)
            run = launch.bind_maps(maps)

            def invoker(a, b, out, workspace, stream):
                if a % ALIGN or b % ALIGN or out % ALIGN:
                    check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
                if not workspace:
                    raise ValueError(f"{sid}: workspace of {ws} bytes required, got none")
                lzero(stream, workspace + cnt)
                run(stream, a, b, out, workspace)
            steps = [(lzero, ((WS, cnt),)),
                     (launch, ((A, 0), (B, 0), (OUT, 0), (WS, 0)), ((A, 0, maps[0].spec), (B, 0, maps[1].spec)))]
            return with_recipe(invoker, steps, (ALIGN, ALIGN, ALIGN, WS_ALIGN), True)

        return ConvSolution(self.id, [zero_k, main_k], ws, factory, cfg)
