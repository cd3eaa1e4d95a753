"""Small-group direct convolution (C/G <= 8 and K/G <= 8, not depthwise), backward data; NCHW and NHWC.

The depthwise kernels with several channels per group; shared body in depthwise_base.py.
"""

from .depthwise_base import DepthwiseBase


class GroupedDirectBwd(DepthwiseBase):
    id = "ConvGroupedDirectBwd"
    algorithm = "miopenConvolutionBwdDataAlgoDirect"
    directions = frozenset("B")
    kind = "grouped"
