"""im2col + GEMM backward weights for every problem but 1x1 stride-1 pad-0 (MIOpen's GemmWrwUniversal).

Deterministic batch reduction (see gemm_base.GemmWrwBase). Workspace: one batch chunk's column
buffer (C*T*P elements per image) plus the per-image float partials or the transposed dy, chunked
to stay within gemm_base.WORKSPACE_CAP (1 GiB); chunked 16-bit passes add a K*C/G*T float
accumulator.
"""

from .gemm_base import GemmWrwBase


class GemmWrwUniversal(GemmWrwBase):
    id = "GemmWrwUniversal"
    other_id = "GemmWrw1x1_stride1"
