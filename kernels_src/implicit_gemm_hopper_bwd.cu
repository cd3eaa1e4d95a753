// Hopper implicit GEMM, backward data, by stride phases (solvers/implicit_gemm_hopper_bwd.py).
//
// dx[n, hi, wi, c] = sum over k and taps (r, s) of dy[n, ho, wo, k] * w[k, r, s, c], ho = (hi + PADH - r*DH) / SH
// where that divides. Split dx into the SH x SW phases hi = hq*SH + a, wi = wq*SW + b: the taps
// reaching phase a are r = r0 + t*SH (t < TH), r0 = (a + PADH) % SH, and then ho = hq + (a + PADH) / SH - t.
// Each phase is therefore a stride-1 forward convolution of dy with its TH x TW sub-filter, taps in
// reverse order (the forward wgmma kernel, implicit_gemm_hopper_fwd.cu with B_MN = 1, reading those
// taps of w in place and writing every SH-th row and SW-th column of dx), and no MMA work is spent on
// taps that miss. Stride 1 is the one-phase case (all Y x X taps, dilation DH x DW). A phase that no
// tap reaches (a filter narrower than the stride) is zero: the kernel below.
#include "common.cuh"

#ifndef SH
#define SH 1
#endif
#ifndef SW
#define SW 1
#endif

// dx pixels of the phases no tap reaches (row phase a with (a + PADH) % SH >= FY, or such a column
// phase): zero, 16 bytes (8 channels) per thread; dx is ZN x ZH x ZW x FC, dense.
extern "C" __global__ void igemm_hopper_bwd_zero(data_t* __restrict__ dx)
{
    constexpr long long chunks = (long long)ZN * ZH * ZW * (FC / 8);
    for(long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < chunks; i += (long long)gridDim.x * blockDim.x)
    {
        const long long pix = i / (FC / 8);
        const int wi = (int)(pix % ZW);
        const int hi = (int)(pix / ZW % ZH);
        if((hi + PADH) % SH >= FY || (wi + PADW) % SW >= FX)
            reinterpret_cast<uint4*>(dx)[i] = make_uint4(0u, 0u, 0u, 0u);
    }
}
