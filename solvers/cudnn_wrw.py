"""cuDNN backward weights (conv_wgrad) through the frontend graph API; each cuDNN plan is a config (cudnn_base)."""

from __future__ import annotations

from .cudnn_base import CudnnSolverBase


class ConvCudnnWrw(CudnnSolverBase):
    id = "ConvCudnnWrw"
    algorithm = "cudnnFrontendBwdWeights"
    directions = frozenset("W")
