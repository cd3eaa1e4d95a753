"""GEMM backward data for 1x1 filters, pad 0, stride 1 (MIOpen's GemmBwd1x1_stride1).

dx = W^T dy written directly by cuBLAS (no col2im, no workspace, no compiled kernel).
"""

from .gemm_base import GemmBwdBase


class GemmBwd1x1(GemmBwdBase):
    id = "GemmBwd1x1_stride1"
    one_by_one = True
    other_id = "GemmBwdRest"
    kernel_files = ()
