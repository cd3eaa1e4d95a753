"""Depthwise direct convolution (groups == C, K = C * multiplier), backward weights (two deterministic stages through the workspace); NCHW and NHWC.

Shared body in direct_depthwise_base.py; kernels in kernels_src/direct_depthwise_*.cu.
"""

from .direct_depthwise_base import DepthwiseBase


class DepthwiseWrw(DepthwiseBase):
    id = "ConvDepthwiseWrw"
    algorithm = "miopenConvolutionBwdWeightsAlgoDirect"
    directions = frozenset("W")
    kind = "depthwise"
