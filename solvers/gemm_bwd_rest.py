"""GEMM + col2im backward data for every problem but 1x1 stride-1 pad-0 (MIOpen's GemmBwdRest).

Workspace: the float column-gradient buffer of one batch chunk, C*T*P*4 bytes per image, chunked
to stay within gemm_base.WORKSPACE_CAP (1 GiB) unless one image alone needs more.
"""

from .gemm_base import GemmBwdBase


class GemmBwdRest(GemmBwdBase):
    id = "GemmBwdRest"
    other_id = "GemmBwd1x1_stride1"
