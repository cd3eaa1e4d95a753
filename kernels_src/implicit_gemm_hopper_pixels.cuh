// Output-pixel helpers of the persistent copy-engine Hopper kernels that stream (tile, K tile) positions
// (implicit_gemm_hopper_fwd_swap.cu, implicit_gemm_hopper_fwd_tf32_rn.cu): the element offset of output pixel m in y,
// and a tile's first im2col filter base.
#pragma once

// y element of output pixel m = (n, oh, ow), channel 0 (the YS_* strides of the problem's layout)
__device__ __forceinline__ index_t y_pixel(index_t m)
{
    const int ow = (int)(m % P_WO); m /= P_WO;
    const int oh = (int)(m % P_HO);
    return (m / P_HO) * YS_N + (index_t)oh * YS_H + (index_t)ow * YS_W;
}

// the first filter base (ow*sw - pw, oh*sh - ph, n) of output pixel m0: the im2col box's start for a tile at m0
__device__ __forceinline__ void filter_base(index_t m0, int& wb, int& hb, int& nb)
{
    const index_t q = m0 / P_WO;
    wb = (int)(m0 - q * P_WO) * P_SW - P_PW;
    hb = (int)(q % P_HO) * P_SH - P_PH;
    nb = (int)(q / P_HO);
}
