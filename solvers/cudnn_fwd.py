"""cuDNN forward (conv_fprop) through the frontend graph API; each cuDNN plan is a config (cudnn_base)."""

from __future__ import annotations

from .cudnn_base import CudnnSolverBase


class ConvCudnnFwd(CudnnSolverBase):
    id = "ConvCudnnFwd"
    algorithm = "cudnnFrontendFwd"
    directions = frozenset("F")
