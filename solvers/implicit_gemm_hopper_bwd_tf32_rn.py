"""Hopper implicit GEMM, backward data with TF32 math and operands rounded to nearest: at stride 1, dx is the forward
convolution of dy by w with its taps reversed and its channel roles exchanged, run by the rounding TF32 forward kernel
(kernels_src/implicit_gemm_hopper_fwd_tf32_rn.cu, ConvImplicitGemmHopperFwdTf32Rn) after the filter rewrite
(implicit_gemm_hopper_bwd.flip_kernel, rounding each element to TF32 as it writes) has made that forward's dense KYXC
filter in the workspace. FP32 data, math="tf32", NHWC, groups = 1, stride 1 (any dilation), dy's channels a multiple of
32, dx's of 4, pads at most the dilated filter's reach."""

from __future__ import annotations

from miofind.problem import ProblemDescription
from miofind.solver import KernelInfo

from .implicit_gemm_hopper_bwd import StrideOneForwardView, flip_kernel
from .implicit_gemm_hopper_fwd_tf32_rn import ImplicitGemmHopperFwdTf32Rn


class ImplicitGemmHopperBwdTf32Rn(StrideOneForwardView, ImplicitGemmHopperFwdTf32Rn):
    id = "ConvImplicitGemmHopperBwdTf32Rn"
    version = 1

    def prologue(self, p: ProblemDescription, main: KernelInfo) -> KernelInfo:
        """The filter rewrite (stride 1: one phase, the whole filter), rounded to TF32: its own kernel file."""
        return flip_kernel(p, round_tf32=True)
