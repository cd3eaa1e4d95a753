"""Naive direct convolution, backward-weights: the GPU reference (MIOpen's ConvDirectNaiveConvWrw)."""

from .direct_naive_base import DirectNaiveBase


class DirectNaiveWrw(DirectNaiveBase):
    id = "ConvDirectNaiveConvWrw"
    algorithm = "miopenConvolutionBwdWeightsAlgoDirect"
    directions = frozenset("W")
    kernel_name = "naive_conv_wrw"
