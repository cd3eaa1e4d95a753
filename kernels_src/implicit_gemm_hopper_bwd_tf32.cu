// Hopper implicit GEMM, backward data with TF32 (solvers/implicit_gemm_hopper_bwd_tf32.py): the stride phases of
// implicit_gemm_hopper_bwd.cu, each a forward convolution of dy by the forward kernel's TF32 build on its own dense
// filter (rewritten first by implicit_gemm_hopper_flip.cu); here, the zeroing of the FP32 dx pixels no tap reaches.
#include "common.cuh"

#ifndef SH
#define SH 1
#endif
#ifndef SW
#define SW 1
#endif

#ifdef ZN            // the zeroing (its macros: ZN, ZH, ZW, FC, FY, FX, SH, SW, PADH, PADW)
// FP32 dx pixels of the phases no tap reaches (row phase a with (a + PADH) % SH >= FY, or such a column phase): zero,
// 16 bytes (4 channels) per thread; dx is ZN x ZH x ZW x FC, dense (implicit_gemm_hopper_bwd.cu's for 4-byte elements).
extern "C" __global__ void igemm_hopper_bwd_tf32_zero(float* __restrict__ dx)
{
    constexpr long long chunks = (long long)ZN * ZH * ZW * (FC / 4);
    for(long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < chunks; i += (long long)gridDim.x * blockDim.x)
    {
        const long long pix = i / (FC / 4);
        const int wi = (int)(pix % ZW);
        const int hi = (int)(pix / ZW % ZH);
        if((hi + PADH) % SH >= FY || (wi + PADW) % SW >= FX)
            reinterpret_cast<float4*>(dx)[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
}
#endif
