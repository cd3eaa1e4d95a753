"""Hopper implicit GEMM, backward data with the operands swapped: at stride 1, dx is the forward convolution of dy by w
with its taps reversed and its channel roles exchanged, run by the swapped-operand forward kernel
(kernels_src/implicit_gemm_hopper_fwd_swap.cu, ConvImplicitGemmHopperFwdSwap) after a first kernel
(implicit_gemm_hopper_bwd.flip_kernel, the TF32 backward data's, at stride 1) has rewritten w in the workspace as that
forward's dense KYXC filter (dx's channels out, dy's in): that kernel's A operand, K-major. For narrow layers: dx of at
most 128 channels, dy's a multiple of 64. FP16/BF16, NHWC, groups = 1, stride 1 (any dilation), pads at most the dilated filter's reach."""

from __future__ import annotations

from miofind import tma
from miofind.launch import A, B, MAP, OUT, PTR, WS, Launch, with_recipe
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, not_applicable

from .implicit_gemm_hopper_base import ALIGN, SMEM_STATIC, check_aligned, gemm_shape, x_im2col
from .implicit_gemm_hopper_bwd import FLIP_SRC, flip_kernel, flipped_bytes, phases
from .implicit_gemm_hopper_fwd_swap import THREADS, ImplicitGemmHopperFwdSwap, channels, smem_bytes


class ImplicitGemmHopperBwdSwap(ImplicitGemmHopperFwdSwap):
    id = "ConvImplicitGemmHopperBwdSwap"
    version = 1
    algorithm = "miopenConvolutionBwdDataAlgoImplicitGEMM"
    directions = frozenset("B")

    @property
    def kernel_files(self):
        return (*super().kernel_files, FLIP_SRC)

    def forward_problem(self, p: ProblemDescription) -> ProblemDescription:
        """dx as a forward convolution of dy (stride 1): dy's channels in, dx's out, the taps reversed, pads
        (taps - 1) x dilation - pad; ``p`` itself where that view does not exist (strides above 1, negative pads)."""
        if p.spatial_dims != 2 or any(s != 1 for s in p.strides) or p.layouts != ("NHWC",) * 3:
            return p
        fwd = phases(p)[0].fwd
        return fwd if fwd is not None and fwd.in_size == p.out_size else p

    def applicability(self, problem):
        p = problem.as_conv()
        if p.spatial_dims == 2 and any(s != 1 for s in p.strides):
            return not_applicable(f"strides {p.strides}: stride 1 only (dx as one forward convolution of dy)")
        if p.spatial_dims == 2 and p.layouts == ("NHWC",) * 3 and self.forward_problem(p) is p:
            return not_applicable(f"pads {p.pads} beyond the dilated filter's reach (no forward view of dx)")
        base = super().applicability(problem)       # the forward view's checks: dx's channels <= 128, dy's % 64
        if not base:
            return base
        return APPLICABLE

    def default_config(self, problem) -> dict:
        return super().default_config(self.forward_problem(problem.as_conv()))

    def alternatives(self, p) -> list[dict]:
        return super().alternatives(self.forward_problem(p))

    def workspace_bytes(self, problem, config=None) -> int:
        return flipped_bytes(problem.as_conv())

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
        sid = self.id

        def factory(kerns):
            kflip, kern = kerns
            if smem > SMEM_STATIC:
                kern.max_dynamic_shared_size_bytes = smem
            lflip = Launch(kflip, flip.grid, flip.block, (PTR, PTR))
            launch = Launch(kern, main.grid, (THREADS, 1, 1), (PTR,) * 3 + (MAP,) * 2, shared_mem=smem)
            lmain = launch.bind_maps(maps)

            def invoker(a, b, out, workspace, stream):
                if a % ALIGN or b % ALIGN or out % ALIGN:
                    check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
                if not workspace:
                    raise ValueError(f"{sid}: workspace of {ws} bytes required, got none")
                lflip(stream, b, workspace)
                lmain(stream, a, workspace, out)
            steps = [(lflip, ((B, 0), (WS, 0))),
                     (launch, ((A, 0), (WS, 0), (OUT, 0)), ((A, 0, maps[0].spec), (WS, 0, maps[1].spec)))]
            return with_recipe(invoker, steps, (ALIGN, ALIGN, ALIGN, 1), True)

        return ConvSolution(self.id, [flip, main], ws, factory, cfg)
