"""Winograd F(4x4,3x3), backward data (winograd_base.py: transforms, workspace, accuracy)."""

from .winograd_base import WinogradBase


class WinogradF43Bwd(WinogradBase):
    id = "ConvWinograd3x3F43Bwd"
    algorithm = "miopenConvolutionBwdDataAlgoWinograd"
    directions = frozenset("B")
    tile = 4
