"""Small-group direct convolution (C/G <= 8 and K/G <= 8, not depthwise), backward weights (two deterministic stages through the workspace); NCHW and NHWC.

The depthwise kernels with several channels per group; shared body in direct_depthwise_base.py.
"""

from .direct_depthwise_base import DepthwiseBase


class GroupedDirectWrw(DepthwiseBase):
    id = "ConvGroupedDirectWrw"
    algorithm = "miopenConvolutionBwdWeightsAlgoDirect"
    directions = frozenset("W")
    kind = "grouped"
