"""Hopper implicit GEMM, backward data with the operands swapped: at stride 1, dx is the forward convolution of dy by w
with its taps reversed and its channel roles exchanged, run by the swapped-operand forward kernel
(kernels_src/implicit_gemm_hopper_fwd_swap.cu, ConvImplicitGemmHopperFwdSwap) after a first kernel
(implicit_gemm_hopper_bwd.flip_kernel, the TF32 backward data's, at stride 1) has rewritten w in the workspace as that
forward's dense KYXC filter (dx's channels out, dy's in): that kernel's A operand, K-major. For narrow layers: dx of at
most 128 channels, dy's a multiple of 64. FP16/BF16, NHWC, groups = 1, stride 1 (any dilation), pads at most the dilated filter's reach."""

from __future__ import annotations

from miofind import tma
from miofind.solver import ConvSolution

from .implicit_gemm_hopper_base import filter_first_factory, gemm_shape, x_im2col
from .implicit_gemm_hopper_bwd import StrideOneForwardView, flip_kernel, flipped_bytes
from .implicit_gemm_hopper_fwd_swap import ImplicitGemmHopperFwdSwap, channels, smem_bytes


class ImplicitGemmHopperBwdSwap(StrideOneForwardView, ImplicitGemmHopperFwdSwap):
    id = "ConvImplicitGemmHopperBwdSwap"
    version = 1

    def default_config(self, problem) -> dict:
        return super().default_config(self.forward_problem(problem.as_conv()))

    def alternatives(self, p) -> list[dict]:
        return super().alternatives(self.forward_problem(p))

    def get_solution(self, problem, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.checked_config(p, config)
        f = self.forward_problem(p)
        flip = flip_kernel(p)          # stride 1: one phase, the whole filter
        main = self.forward_kernel(f, cfg)
        smem = smem_bytes(cfg)
        m, n, k = gemm_shape(f)
        # dy's im2col map, and the rewritten filter's tiled map (64 x 64 or 64 x 128 boxes of its KYXC rows: taps x dy's
        # channels)
        maps = (tma.MapCache(x_im2col(f, cfg["BM"])),
                tma.MapCache(tma.TiledSpec(p.dtype, (k, n), (k * 2,), (64, channels(cfg)))))
        ws = flipped_bytes(p)
        factory = filter_first_factory(self.id, flip, main, maps, smem, ws, pdl=False)
        return ConvSolution(self.id, [flip, main], ws, factory, cfg)
