"""Depthwise direct convolution (groups == C, K = C * multiplier), backward data (gather form, the flipped filter); NCHW and NHWC.

Shared body in direct_depthwise_base.py; kernels in kernels_src/direct_depthwise_*.cu.
"""

from .direct_depthwise_base import DepthwiseBase


class DepthwiseBwd(DepthwiseBase):
    id = "ConvDepthwiseBwd"
    algorithm = "miopenConvolutionBwdDataAlgoDirect"
    directions = frozenset("B")
    kind = "depthwise"
