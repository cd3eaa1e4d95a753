"""Depthwise direct convolution (groups == C, K = C * multiplier), forward; NCHW and NHWC.

Shared body in direct_depthwise_base.py; kernels in kernels_src/direct_depthwise_*.cu.
"""

from .direct_depthwise_base import DepthwiseBase


class DepthwiseFwd(DepthwiseBase):
    id = "ConvDepthwiseFwd"
    algorithm = "miopenConvolutionFwdAlgoDirect"
    directions = frozenset("F")
    kind = "depthwise"
