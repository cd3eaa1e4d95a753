"""FFT convolution, backward data (solvers/fft_base.py): dx = IFFT(sum_k FFT(dy) * FFT(w))."""

from .fft_base import FFTBase


class ConvFFTBwd(FFTBase):
    id = "ConvFFTBwd"
    algorithm = "miopenConvolutionBwdDataAlgoFFT"
    directions = frozenset("B")
