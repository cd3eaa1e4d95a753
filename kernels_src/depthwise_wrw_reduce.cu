// Depthwise / small-group direct convolution, backward weights: stage 2 of 2.
//
// dw[e] = sum over chunks c = 0 .. NCHUNK-1 of part[c][e], e = (k*IPG + i)*TAPS + tap, summed in a
// fixed order (8 strided partial sums per element, then those 8 in order), and written in the
// weights' layout: K x C/G x Y x X (W_CL = 0) or K x Y x X x C/G (W_CL = 1).
// Block 32 x 8: x walks weight elements (coalesced), y splits the chunks.
#include "common.cuh"

#ifndef W_CL
#define W_CL 0
#endif

extern "C" __global__ void __launch_bounds__(256)
dw_wrw_reduce(const float* __restrict__ part, data_t* __restrict__ dw)
{
    __shared__ float red[8][33];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int e = blockIdx.x * 32 + tx;
    float s = 0.f;
    if(e < WTOT)
        for(int c = ty; c < NCHUNK; c += 8) s += part[(index_t)c * WTOT + e];
    red[ty][tx] = s;
    __syncthreads();
    if(ty != 0 || e >= WTOT) return;
    float t = 0.f;
#pragma unroll
    for(int y = 0; y < 8; ++y) t += red[y][tx];
    const int tap = e % TAPS, i = (e / TAPS) % IPG, k = e / (TAPS * IPG);
    store_acc(&dw[W_CL ? ((index_t)k * TAPS + tap) * IPG + i : (index_t)e], t);
}
