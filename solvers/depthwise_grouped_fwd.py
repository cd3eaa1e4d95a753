"""Small-group direct convolution (C/G <= 8 and K/G <= 8, not depthwise), forward; NCHW and NHWC.

The depthwise kernels with several channels per group; shared body in depthwise_base.py.
"""

from .depthwise_base import DepthwiseBase


class GroupedDirectFwd(DepthwiseBase):
    id = "ConvGroupedDirectFwd"
    algorithm = "miopenConvolutionFwdAlgoDirect"
    directions = frozenset("F")
    kind = "grouped"
