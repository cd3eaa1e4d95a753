"""Winograd F(4x4,3x3), forward (winograd_base.py: transforms, workspace, accuracy)."""

from .winograd_base import WinogradBase


class WinogradF43Fwd(WinogradBase):
    id = "ConvWinograd3x3F43Fwd"
    algorithm = "miopenConvolutionFwdAlgoWinograd"
    directions = frozenset("F")
    tile = 4
