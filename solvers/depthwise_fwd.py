"""Depthwise direct convolution (groups == C, K = C * multiplier), forward; NCHW and NHWC.

Shared body in depthwise_base.py; kernels in kernels_src/depthwise_*.cu.
"""

from .depthwise_base import DepthwiseBase


class DepthwiseFwd(DepthwiseBase):
    id = "ConvDepthwiseFwd"
    algorithm = "miopenConvolutionFwdAlgoDirect"
    directions = frozenset("F")
    kind = "depthwise"
