"""Winograd F(2x2,3x3), forward (winograd_base.py: transforms, workspace, accuracy)."""

from .winograd_base import WinogradBase


class WinogradF23Fwd(WinogradBase):
    id = "ConvWinograd3x3F23Fwd"
    algorithm = "miopenConvolutionFwdAlgoWinograd"
    directions = frozenset("F")
    tile = 2
