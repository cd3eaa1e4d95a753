"""Depthwise direct convolution (groups == C, K = C * multiplier), backward data; NCHW and NHWC.

The stencil of the flipped filter in gather form (stride 2 included).

Shared body in direct_depthwise_base.py; kernels in kernels_src/direct_depthwise_*.cu.
"""

from .direct_depthwise_base import DepthwiseBase


class DepthwiseBwd(DepthwiseBase):
    id = "ConvDepthwiseBwd"
    algorithm = "miopenConvolutionBwdDataAlgoDirect"
    directions = frozenset("B")
    kind = "depthwise"
