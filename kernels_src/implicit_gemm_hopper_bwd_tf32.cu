// Hopper implicit GEMM, backward data with TF32 (solvers/implicit_gemm_hopper_bwd_tf32.py): the stride phases of
// implicit_gemm_hopper_bwd.cu, each a forward convolution of dy by the forward kernel's TF32 build. TF32 wgmma reads
// K-major operands only, so the phases cannot read w in place (MN-major, B_MN) as the 16-bit ones do: w (FK x FY x FX
// x FC, FP32) is first rewritten as every phase's own dense filter, its view's KYXC with dx's channels as the output
// channels and dy's as the input ones, taps reversed:
//   wph[off(r0, s0) + ((c * TH + a) * TW + b) * FK + k] = w[k, r0 + (TH-1-a)*SH, s0 + (TW-1-b)*SW, c]
// for phase (r0, s0) (the taps r = r0 + t*SH, TH = ceil((FY - r0) / SH) of them; stride 1: one phase, TH = FY), the
// phases in row-major (r0, s0) order, each TH*TW*FC*FK elements (all taps: FY*FX*FC*FK in all). Per tap, a transpose of
// the (k, c) plane: 32 x 32 tiles through shared memory, read along c and written along k,
// coalesced both ways (4-byte accesses); the padding column keeps the transposed reads free of bank conflicts.
#include "common.cuh"

#ifndef SH
#define SH 1
#endif
#ifndef SW
#define SW 1
#endif

#ifdef FK            // the filter's rewriting (its macros: FK, FC, FY, FX, SH, SW)
__device__ __forceinline__ int taps_of(int f, int first, int step) { return (f - first + step - 1) / step; }

// element offset of phase (r0, s0)'s filter: the phases before it in row-major order
__device__ __forceinline__ long long phase_offset(int r0, int s0)
{
    long long off = 0;
    for(int i = 0; i < SH; ++i)
        for(int j = 0; j < SW; ++j)
            if(i < r0 || (i == r0 && j < s0))
                off += (long long)taps_of(FY, i, SH) * taps_of(FX, j, SW) * FC * FK;
    return off;
}

// grid (ceil(FC / 32), ceil(FK / 32), FY * FX), block (32, 8)
extern "C" __global__ void __launch_bounds__(256) igemm_hopper_bwd_tf32_flip(const float* __restrict__ w,
                                                                             float* __restrict__ wph)
{
    __shared__ float tile[32][33];
    const int tap = blockIdx.z, r = tap / FX, s = tap % FX;
    const int r0 = r % SH, s0 = s % SW;
    const int th = taps_of(FY, r0, SH), tw = taps_of(FX, s0, SW);
    const int a = th - 1 - r / SH, b = tw - 1 - s / SW;
    const int c0 = blockIdx.x * 32, k0 = blockIdx.y * 32;
    const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for(int j = 0; j < 32; j += 8)
    {
        const int k = k0 + ty + j, c = c0 + tx;
        if(k < FK && c < FC)
            tile[ty + j][tx] = w[((long long)k * FY * FX + tap) * FC + c];
    }
    __syncthreads();
    const long long base = phase_offset(r0, s0) + (long long)(a * tw + b) * FK;
#pragma unroll
    for(int j = 0; j < 32; j += 8)
    {
        const int c = c0 + ty + j, k = k0 + tx;
        if(k < FK && c < FC)
            wph[base + (long long)c * th * tw * FK + k] = tile[tx][ty + j];
    }
}

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
