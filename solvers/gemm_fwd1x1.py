"""im2col-free GEMM forward for 1x1 filters, pad 0, stride 1 (MIOpen's GemmFwd1x1_0_1).

NCHW: one strided-batched GEMM over the images (groups batched or looped); NHWC: one GEMM over
all N*H*W pixels, groups batched. No workspace; cuBLAS only (no compiled kernel).
"""

from .gemm_base import GemmFwdBase


class GemmFwd1x1(GemmFwdBase):
    id = "GemmFwd1x1_0_1"
    one_by_one = True
    other_id = "GemmFwdRest"
    kernel_files = ()
