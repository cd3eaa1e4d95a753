"""Small-group direct convolution (C/G <= 8 and K/G <= 8, not depthwise), backward data; NCHW and NHWC.

The depthwise kernels with several channels per group; shared body in direct_depthwise_base.py.
"""

from .direct_depthwise_base import DepthwiseBase


class GroupedDirectBwd(DepthwiseBase):
    id = "ConvGroupedDirectBwd"
    algorithm = "miopenConvolutionBwdDataAlgoDirect"
    directions = frozenset("B")
    kind = "grouped"
