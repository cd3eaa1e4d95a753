"""Depthwise direct convolution (groups == C, K = C * multiplier), backward weights; NCHW and NHWC.

Two deterministic stages through the workspace (per-block partial sums, then a reduction); no atomics.

Shared body in depthwise_base.py; kernels in kernels_src/depthwise_*.cu.
"""

from .depthwise_base import DepthwiseBase


class DepthwiseWrw(DepthwiseBase):
    id = "ConvDepthwiseWrw"
    algorithm = "miopenConvolutionBwdWeightsAlgoDirect"
    directions = frozenset("W")
    kind = "depthwise"
