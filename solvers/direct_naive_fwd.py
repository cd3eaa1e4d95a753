"""Naive direct convolution, forward: the GPU reference (MIOpen's ConvDirectNaiveConvFwd)."""

from .direct_naive_base import DirectNaiveBase


class DirectNaiveFwd(DirectNaiveBase):
    id = "ConvDirectNaiveConvFwd"
    algorithm = "miopenConvolutionFwdAlgoDirect"
    directions = frozenset("F")
    kernel_name = "naive_conv_fwd"
