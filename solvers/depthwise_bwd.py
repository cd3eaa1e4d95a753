"""Depthwise direct convolution (groups == C, K = C * multiplier), backward data; NCHW and NHWC.

The stencil of the flipped filter in gather form (stride 2 included).

Shared body in depthwise_base.py; kernels in kernels_src/depthwise_*.cu.
"""

from .depthwise_base import DepthwiseBase


class DepthwiseBwd(DepthwiseBase):
    id = "ConvDepthwiseBwd"
    algorithm = "miopenConvolutionBwdDataAlgoDirect"
    directions = frozenset("B")
    kind = "depthwise"
