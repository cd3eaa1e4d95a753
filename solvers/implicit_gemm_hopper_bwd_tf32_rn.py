"""Hopper implicit GEMM, backward data with TF32 math and operands rounded to nearest: at stride 1, dx is the forward
convolution of dy by w with its taps reversed and its channel roles exchanged, run by the rounding TF32 forward kernel
(kernels_src/implicit_gemm_hopper_fwd_tf32_rn.cu, ConvImplicitGemmHopperFwdTf32Rn) after the filter rewrite
(implicit_gemm_hopper_bwd.flip_kernel, rounding each element to TF32 as it writes) has made that forward's dense KYXC
filter in the workspace. FP32 data, math="tf32", NHWC, groups = 1, stride 1 (any dilation), dy's channels a multiple of
32, dx's of 4, pads at most the dilated filter's reach."""

from __future__ import annotations

from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, KernelInfo, not_applicable

from .implicit_gemm_hopper_bwd import FLIP_SRC, flip_kernel, flipped_bytes, phases
from .implicit_gemm_hopper_fwd_tf32_rn import ImplicitGemmHopperFwdTf32Rn


class ImplicitGemmHopperBwdTf32Rn(ImplicitGemmHopperFwdTf32Rn):
    id = "ConvImplicitGemmHopperBwdTf32Rn"
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
        return super().applicability(problem)     # the forward view's checks: dy's channels % 32

    def workspace_bytes(self, problem, config=None) -> int:
        return flipped_bytes(problem.as_conv())

    def prologue(self, p: ProblemDescription) -> KernelInfo:
        """The filter rewrite (stride 1: one phase, the whole filter), rounded to TF32."""
        return flip_kernel(p, round_tf32=True)
