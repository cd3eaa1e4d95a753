// The filter rewrite of the Hopper backward-data solvers whose phases read a dense K-major filter (the TF32 one,
// solvers/implicit_gemm_hopper_bwd_tf32.py, whose wgmma reads K-major operands only; the swapped-operand one,
// solvers/implicit_gemm_hopper_bwd_swap.py, whose filter is wgmma's A operand): w (FK x FY x FX x FC, KYXC, data_t) is
// rewritten as every stride phase's own dense filter, its view's KYXC with dx's channels as the output channels and
// dy's as the input ones, taps reversed:
//   wph[off(r0, s0) + ((c * TH + a) * TW + b) * FK + k] = w[k, r0 + (TH-1-a)*SH, s0 + (TW-1-b)*SW, c]
// for phase (r0, s0) (the taps r = r0 + t*SH, TH = ceil((FY - r0) / SH) of them; stride 1: one phase, TH = FY), the
// phases in row-major (r0, s0) order, each TH*TW*FC*FK elements (all taps: FY*FX*FC*FK in all). Per tap, a transpose of
// the (k, c) plane: 32 x 32 tiles through shared memory, read along c and written along k, coalesced both ways; the
// padding column keeps the transposed reads free of bank conflicts. Macros: DATA_T, FK, FC, FY, FX, SH, SW, and ROUND_TF32
// (1: FP32 elements rounded to TF32 by cvt.rna, for the rounding TF32 backward data, implicit_gemm_hopper_fwd_tf32_rn.cu).
#include "common.cuh"

#ifndef ROUND_TF32
#define ROUND_TF32 0
#endif

#ifndef SH
#define SH 1
#endif
#ifndef SW
#define SW 1
#endif

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
extern "C" __global__ void __launch_bounds__(256) igemm_hopper_bwd_flip(const data_t* __restrict__ w,
                                                                        data_t* __restrict__ wph)
{
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");     // a programmatic dependent may start its set-up
    __shared__ data_t tile[32][33];
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
        {
#if ROUND_TF32
            unsigned v = __float_as_uint(w[((long long)k * FY * FX + tap) * FC + c]);
            asm("cvt.rna.tf32.f32 %0, %0;\n" : "+r"(v));
            tile[ty + j][tx] = __uint_as_float(v);
#else
            tile[ty + j][tx] = w[((long long)k * FY * FX + tap) * FC + c];
#endif
        }
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
