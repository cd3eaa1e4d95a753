"""cuDNN backward data (conv_dgrad) through the frontend graph API; each cuDNN plan is a config (cudnn_base)."""

from __future__ import annotations

from .cudnn_base import CudnnSolverBase


class ConvCudnnBwd(CudnnSolverBase):
    id = "ConvCudnnBwd"
    algorithm = "cudnnFrontendBwdData"
    directions = frozenset("B")
