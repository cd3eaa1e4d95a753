// Tiled direct convolution, forward, NCHW, 2D, with shared memory.
//
// A block of TILE_W x TILE_H threads computes a TILE_H x TILE_W output tile for KPT output
// channels of one image (one output pixel x KPT channels per thread, in registers). The input
// channels of the group are walked in chunks of CCH: each chunk stages the input patch the tile
// needs, IN_TH x IN_TW with IN_TH = (TILE_H-1)*SH + (Y-1)*DH + 1, zero-padded at the borders, and
// the KPT x CCH x Y x X weights, in shared memory. Weights are stored [c][tap][KPT] so a thread
// reads its KPT weights of one tap as float4 broadcasts.
// Grid: x = output tiles, y = groups x ceil(K/G / KPT), z = N.
#include "common.cuh"

#ifndef TILE_W
#define TILE_W 16
#endif
#ifndef TILE_H
#define TILE_H 8
#endif
#ifndef KPT
#define KPT 8
#endif
#ifndef CCH
#define CCH 8
#endif

#define NT (TILE_W * TILE_H)
#define CPG (C_ / G_)
#define KPG (K_ / G_)
#define TAPS (Y_ * X_)
#define IN_TH ((TILE_H - 1) * SH + (Y_ - 1) * DH + 1)
#define IN_TW ((TILE_W - 1) * SW + (X_ - 1) * DW + 1)
#define TILES_W ((WO + TILE_W - 1) / TILE_W)
#define KBLOCKS ((KPG + KPT - 1) / KPT)

extern "C" __global__ void __launch_bounds__(NT)
direct_tiled_fwd(const data_t* __restrict__ x, const data_t* __restrict__ w, data_t* __restrict__ y)
{
    __shared__ float xs[CCH][IN_TH][IN_TW];
    __shared__ __align__(16) float ws[CCH][TAPS][KPT];

    const int tile_h0 = (blockIdx.x / TILES_W) * TILE_H;
    const int tile_w0 = (blockIdx.x % TILES_W) * TILE_W;
    const int g = blockIdx.y / KBLOCKS;
    const int k0 = (blockIdx.y % KBLOCKS) * KPT;
    const index_t n = blockIdx.z;
    const int tx = threadIdx.x % TILE_W, ty = threadIdx.x / TILE_W;
    const int ih0 = tile_h0 * SH - PH, iw0 = tile_w0 * SW - PW;
    const data_t* xg = x + (n * C_ + (index_t)g * CPG) * HI * WI;
    const data_t* wg = w + ((index_t)g * KPG) * CPG * TAPS;

    float acc[KPT];
#pragma unroll
    for(int j = 0; j < KPT; ++j) acc[j] = 0.f;

    for(int cb = 0; cb < CPG; cb += CCH)
    {
        for(int i = threadIdx.x; i < CCH * IN_TH * IN_TW; i += NT)
        {
            const int c = i / (IN_TH * IN_TW), hw = i % (IN_TH * IN_TW);
            const int ih = ih0 + hw / IN_TW, iw = iw0 + hw % IN_TW;
            float v = 0.f;
            if(cb + c < CPG && ih >= 0 && ih < HI && iw >= 0 && iw < WI)
                v = to_acc(xg[((index_t)(cb + c) * HI + ih) * WI + iw]);
            xs[c][hw / IN_TW][hw % IN_TW] = v;
        }
        for(int i = threadIdx.x; i < CCH * TAPS * KPT; i += NT)
        {
            // consecutive threads walk taps (contiguous in global memory), then channels, then k
            const int t = i % TAPS, c = (i / TAPS) % CCH, j = i / (TAPS * CCH);
            float v = 0.f;
            if(k0 + j < KPG && cb + c < CPG)
                v = to_acc(wg[((index_t)(k0 + j) * CPG + cb + c) * TAPS + t]);
            ws[c][t][j] = v;
        }
        __syncthreads();
#pragma unroll 2
        for(int c = 0; c < CCH; ++c)
        {
#pragma unroll
            for(int r = 0; r < Y_; ++r)
#pragma unroll
                for(int s = 0; s < X_; ++s)
                {
                    const float v = xs[c][ty * SH + r * DH][tx * SW + s * DW];
#if KPT % 4 == 0
#pragma unroll
                    for(int j = 0; j < KPT; j += 4)
                    {
                        const float4 wv = *reinterpret_cast<const float4*>(&ws[c][r * X_ + s][j]);
                        acc[j] += v * wv.x;
                        acc[j + 1] += v * wv.y;
                        acc[j + 2] += v * wv.z;
                        acc[j + 3] += v * wv.w;
                    }
#else
#pragma unroll
                    for(int j = 0; j < KPT; ++j) acc[j] += v * ws[c][r * X_ + s][j];
#endif
                }
        }
        __syncthreads();
    }

    const int oh = tile_h0 + ty, ow = tile_w0 + tx;
    if(oh < HO && ow < WO)
    {
#pragma unroll
        for(int j = 0; j < KPT; ++j)
            if(k0 + j < KPG)
                store_acc(&y[((n * K_ + (index_t)g * KPG + k0 + j) * HO + oh) * WO + ow], acc[j]);
    }
}
