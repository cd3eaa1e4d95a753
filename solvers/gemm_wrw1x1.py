"""GEMM backward weights for 1x1 filters, pad 0, stride 1 (MIOpen's GemmWrw1x1_stride1).

NHWC: one GEMM over all N*H*W pixels (no workspace). NCHW: per-image GEMMs in one strided batch
into float partials summed in image order by wrw_reduce, or (small images, many output channels)
x and dy transposed to C x N*P and K x N*P and one GEMM; see gemm_base.GemmWrwBase. Workspace is
chunked to stay within gemm_base.WORKSPACE_CAP (1 GiB).
"""

from .gemm_base import GemmWrwBase


class GemmWrw1x1(GemmWrwBase):
    id = "GemmWrw1x1_stride1"
    one_by_one = True
    other_id = "GemmWrwUniversal"
