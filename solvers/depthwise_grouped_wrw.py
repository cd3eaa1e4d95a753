"""Small-group direct convolution (C/G <= 8 and K/G <= 8, not depthwise), backward weights; NCHW and NHWC.

Two deterministic stages through the workspace; no atomics.

The depthwise kernels with several channels per group; shared body in depthwise_base.py.
"""

from .depthwise_base import DepthwiseBase


class GroupedDirectWrw(DepthwiseBase):
    id = "ConvGroupedDirectWrw"
    algorithm = "miopenConvolutionBwdWeightsAlgoDirect"
    directions = frozenset("W")
    kind = "grouped"
