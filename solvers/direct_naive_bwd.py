"""Naive direct convolution, backward-data: the GPU reference (MIOpen's ConvDirectNaiveConvBwd)."""

from .direct_naive_base import DirectNaiveBase


class DirectNaiveBwd(DirectNaiveBase):
    id = "ConvDirectNaiveConvBwd"
    algorithm = "miopenConvolutionBwdDataAlgoDirect"
    directions = frozenset("B")
    kernel_name = "naive_conv_bwd"
