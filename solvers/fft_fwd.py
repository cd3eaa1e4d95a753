"""FFT convolution, forward (solvers/fft_base.py): y = IFFT(sum_c FFT(x) * conj(FFT(w)))."""

from .fft_base import FFTBase


class ConvFFTFwd(FFTBase):
    id = "ConvFFTFwd"
    algorithm = "miopenConvolutionFwdAlgoFFT"
    directions = frozenset("F")
