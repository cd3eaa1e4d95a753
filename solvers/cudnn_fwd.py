"""cuDNN forward (conv_fprop) through the frontend graph API; each cuDNN plan is a config (cudnn_base).
Fused forward problems (bias, ReLU/GELU) become one graph conv_fprop -> bias -> activation, which
cuDNN's runtime-fusion engines run as one kernel where they can."""

from __future__ import annotations

from .cudnn_base import CudnnSolverBase


class ConvCudnnFwd(CudnnSolverBase):
    id = "ConvCudnnFwd"
    algorithm = "cudnnFrontendFwd"
    directions = frozenset("F")
    fused_epilogue = True
