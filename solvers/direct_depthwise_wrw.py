"""Depthwise direct convolution (groups == C, K = C * multiplier), backward weights; NCHW and NHWC.

Two deterministic stages through the workspace (per-block partial sums, then a reduction); no atomics.

Shared body in direct_depthwise_base.py; kernels in kernels_src/direct_depthwise_*.cu.
"""

from .direct_depthwise_base import DepthwiseBase


class DepthwiseWrw(DepthwiseBase):
    id = "ConvDepthwiseWrw"
    algorithm = "miopenConvolutionBwdWeightsAlgoDirect"
    directions = frozenset("W")
    kind = "depthwise"
