// Hopper implicit GEMM, backward data, by stride phases (solvers/implicit_gemm_hopper_bwd.py).
//
// dx[n, hi, wi, c] = sum over k and taps (r, s) of dy[n, ho, wo, k] * w[k, r, s, c], ho = (hi + PADH - r*DH) / SH
// where that divides. Split dx into the SH x SW phases hi = hq*SH + a, wi = wq*SW + b: the taps
// reaching phase a are r = r0 + t*SH (t < TH), r0 = (a + PADH) % SH, and then ho = hq + (a + PADH) / SH - t.
// Each phase is therefore a stride-1 forward convolution of dy with its TH x TW sub-filter, taps in
// reverse order (the forward wgmma kernel, implicit_gemm_hopper_fwd.cu, writing every SH-th row and
// SW-th column of dx), and no MMA work is spent on taps that miss. Stride 1 is the one-phase case
// (all Y x X taps, dilation DH x DW). A phase that no tap reaches (a filter narrower than the stride)
// is zero.
#include "common.cuh"

#ifndef SH
#define SH 1
#endif
#ifndef SW
#define SW 1
#endif

// The phases' sub-filters into the workspace, one thread per element of w: phases in the order of
// their first taps (r0, s0), r0 major; phase (r0, s0) holds TH = ceil((FY - r0) / SH) x TW taps
// stored C x TH x TW x K (c major, k minor: the forward kernel's KYXC filter with K and C swapped),
// tap (a, b) of it being w's tap (r0 + (TH-1-a)*SH, s0 + (TW-1-b)*SW). Writes along k.
extern "C" __global__ void igemm_hopper_flip(const data_t* __restrict__ w, data_t* __restrict__ wf)
{
    const int total = FK * FY * FX * FC;
    for(int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x)
    {
        int q = i;
#pragma unroll
        for(int ph = 0; ph < SH * SW; ++ph)
        {
            const int r0 = ph / SW, s0 = ph % SW;
            const int th = (FY - r0 + SH - 1) / SH, tw = (FX - s0 + SW - 1) / SW;
            const int size = FC * th * tw * FK;
            if(q < size)
            {
                const int k = q % FK; q /= FK;
                const int b = q % tw; q /= tw;
                const int a = q % th;
                const int c = q / th;
                const int r = r0 + (th - 1 - a) * SH, s = s0 + (tw - 1 - b) * SW;
                wf[i] = w[((k * FY + r) * FX + s) * FC + c];
                break;
            }
            q -= size;
        }
    }
}

#ifdef ZH
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
#endif
