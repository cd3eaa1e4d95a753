"""im2col + GEMM forward for every problem but 1x1 stride-1 pad-0 (MIOpen's GemmFwdRest).

Workspace: the column buffer of one batch chunk, C*T*P elements per image, chunked to stay
within gemm_base.WORKSPACE_CAP (1 GiB) unless one image alone needs more.
"""

from .gemm_base import GemmFwdBase


class GemmFwdRest(GemmFwdBase):
    id = "GemmFwdRest"
    other_id = "GemmFwd1x1_0_1"
