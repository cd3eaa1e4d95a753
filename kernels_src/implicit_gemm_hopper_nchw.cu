// Batched transpose [B][R][S] -> [B][S][R] for the Hopper family's NCHW wrappers (solvers/implicit_gemm_hopper_nchw.py):
// channels-first activations and KCYX filters to channels-last copies, and the channels-last output back. One
// shape-free build per element size. 64 x 64 element tiles through shared memory: each thread reads 16-byte vectors
// along S and writes 16-byte vectors along R, so that both sides move whole sectors with few instructions (the
// element-wise igemm_xpose reached 1.5 TB/s of an H200's 4.8 on 51 MB, session nov28e call 2). A vector is used where
// the row length is a multiple of it and the base is 16-byte aligned; otherwise, and at the edges, single elements.
// Grid: x = S tiles, y = R tiles, z = B.
#include "common.cuh"

template <int BYTES> struct Raw;
template <> struct Raw<2> { typedef unsigned short t; };
template <> struct Raw<4> { typedef unsigned int t; };
typedef Raw<sizeof(data_t)>::t raw_t;

#define XT 64                                  // tile rows and columns (elements)
#define XV (16 / (int)sizeof(raw_t))           // elements of a 16-byte vector
#define XPAD 1                                 // shared-memory row padding: a column read spreads over the banks

union Vec16 {
    uint4 q;
    raw_t e[XV];
};

extern "C" __global__ void __launch_bounds__(256)
igemm_hopper_nchw_xpose(const data_t* __restrict__ in, data_t* __restrict__ out, int R, int S)
{
    __shared__ raw_t tile[XT][XT + XPAD];
    const long long base = (long long)blockIdx.z * R * S;
    const raw_t* src = reinterpret_cast<const raw_t*>(in) + base;
    raw_t* dst = reinterpret_cast<raw_t*>(out) + base;
    const int s0 = blockIdx.x * XT, r0 = blockIdx.y * XT;
    const bool vin = S % XV == 0 && ((unsigned long long)in & 15) == 0;
    const bool vout = R % XV == 0 && ((unsigned long long)out & 15) == 0;
    constexpr int PER_ROW = XT / XV;                   // vectors in a tile row
    constexpr int PASSES = XT * PER_ROW / 256;         // vectors per thread

    // tile[r][s] = src[r0 + r][s0 + s]: every vector loaded before any is stored, so that all are in flight at once
    Vec16 v[PASSES];
#pragma unroll
    for(int k = 0; k < PASSES; ++k)
    {
        const int i = threadIdx.x + k * 256, r = r0 + i / PER_ROW, s = s0 + (i % PER_ROW) * XV;
        if(r < R && vin && s + XV <= S)
            v[k].q = *reinterpret_cast<const uint4*>(src + (long long)r * S + s);
        else
#pragma unroll
            for(int j = 0; j < XV; ++j)
                v[k].e[j] = (r < R && s + j < S) ? src[(long long)r * S + s + j] : raw_t(0);
    }
#pragma unroll
    for(int k = 0; k < PASSES; ++k)
    {
        const int i = threadIdx.x + k * 256, r = i / PER_ROW, s = (i % PER_ROW) * XV;
#pragma unroll
        for(int j = 0; j < XV; ++j)
            tile[r][s + j] = v[k].e[j];
    }
    __syncthreads();

    // dst[s0 + s][r0 + r .. + XV] = tile[r .. + XV][s]
#pragma unroll
    for(int k = 0; k < PASSES; ++k)
    {
        const int i = threadIdx.x + k * 256, s = i / PER_ROW, r = (i % PER_ROW) * XV;
        const int gs = s0 + s, gr = r0 + r;
        if(gs >= S)
            continue;
        Vec16 o;
#pragma unroll
        for(int j = 0; j < XV; ++j)
            o.e[j] = tile[r + j][s];
        if(vout && gr + XV <= R)
            *reinterpret_cast<uint4*>(dst + (long long)gs * R + gr) = o.q;
        else
#pragma unroll
            for(int j = 0; j < XV; ++j)
                if(gr + j < R)
                    dst[(long long)gs * R + gr + j] = o.e[j];
    }
}
