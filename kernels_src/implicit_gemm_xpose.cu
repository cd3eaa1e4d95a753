// Batched transpose [B][R][S] -> [B][S][R]: channels-first activations (R = channels, S = pixels)
// or KCYX weights (R = C/G, S = taps) to channels-last copies in the workspace, so that the
// implicit-GEMM loads of 16-bit data move 16 bytes along channels instead of single elements.
// 32 x 32 tiles through shared memory (one padding column against bank conflicts); reads and
// writes are coalesced along S and R respectively. Grid: x = S tiles, y = R tiles, z = B.
#include "common.cuh"

template <int BYTES> struct Raw;
template <> struct Raw<2> { typedef unsigned short t; };
template <> struct Raw<4> { typedef unsigned int t; };
typedef Raw<sizeof(data_t)>::t raw_t;

extern "C" __global__ void __launch_bounds__(256)
igemm_xpose(const data_t* __restrict__ in, data_t* __restrict__ out, int R, int S)
{
    __shared__ raw_t tile[32][33];
    const long long base = (long long)blockIdx.z * R * S;
    const raw_t* src = reinterpret_cast<const raw_t*>(in) + base;
    raw_t* dst = reinterpret_cast<raw_t*>(out) + base;
    const int s0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
#pragma unroll
    for(int i = ty; i < 32; i += 8)
        if(r0 + i < R && s0 + tx < S) tile[i][tx] = src[(long long)(r0 + i) * S + s0 + tx];
    __syncthreads();
#pragma unroll
    for(int i = ty; i < 32; i += 8)
        if(s0 + i < S && r0 + tx < R) dst[(long long)(s0 + i) * R + r0 + tx] = tile[tx][i];
}
