"""Small-group direct convolution (C/G <= 8 and K/G <= 8, not depthwise), forward; NCHW and NHWC.

The depthwise kernels with several channels per group; shared body in direct_depthwise_base.py.
"""

from .direct_depthwise_base import DepthwiseBase


class GroupedDirectFwd(DepthwiseBase):
    id = "ConvGroupedDirectFwd"
    algorithm = "miopenConvolutionFwdAlgoDirect"
    directions = frozenset("F")
    kind = "grouped"
