"""Hopper implicit GEMM forward with a fused epilogue (kernels_src/implicit_gemm_hopper_fwd.cu, EPI_BIAS and
EPI_ACT): y = act(conv(x, w) + bias), the bias added and the activation (ReLU or the exact GELU) applied to
the FP32 sums before the output's rounding, so y is written once. Fused forward problems only
(``ProblemDescription.fused``); the plain forward problem is ConvImplicitGemmHopperFwd's. Same tiles,
tunables and split-K as that solver; when split, the reduce kernel applies the epilogue."""

from __future__ import annotations

from miofind.solver import APPLICABLE, not_applicable

from .implicit_gemm_hopper_fwd import ImplicitGemmHopperFwd

ACT_CODES = {"none": 0, "relu": 1, "gelu": 2}


class ImplicitGemmHopperFwdBiasActiv(ImplicitGemmHopperFwd):
    id = "ConvImplicitGemmHopperFwdBiasActiv"
    version = 2                 # 2: the reduce as a programmatic dependent launch
    fused_epilogue = True

    def applicability(self, problem):
        base = super().applicability(problem)
        if not base:
            return base
        if not problem.as_conv().fused:
            return not_applicable("no fused epilogue (bias 0, activation none): ConvImplicitGemmHopperFwd's problem")
        return APPLICABLE

    def epilogue(self, p):
        return {"EPI_BIAS": int(bool(p.bias)), "EPI_ACT": ACT_CODES[p.activation]}
