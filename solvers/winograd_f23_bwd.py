"""Winograd F(2x2,3x3), backward data (winograd_base.py: transforms, workspace, accuracy)."""

from .winograd_base import WinogradBase


class WinogradF23Bwd(WinogradBase):
    id = "ConvWinograd3x3F23Bwd"
    algorithm = "miopenConvolutionBwdDataAlgoWinograd"
    directions = frozenset("B")
    tile = 2
