// Depthwise / small-group direct convolution, NHWC, forward and backward data (gather form).
//
// The pass dst <- src and the index algebra are those of depthwise_nchw.cu. In NHWC a
// group's channels are contiguous, so a thread owns GPT consecutive groups: SI = GPT*IPG src
// channels loaded as one vector per pixel (16-byte loads where the width allows) and SO = GPT*OPG
// dst channels stored as one vector. The thread computes a patch of RPT rows x VC columns (both
// a multiple of the backward pass's stride) and walks the patch's src footprint row by row,
// each footprint pixel loaded once (halos between threads are served by L1/L2), so DRAM sees
// src and dst about once. The block's weights are staged as float [tap][o][i][group] (and held
// in registers when WREG).
// Block: NCS group slots (fastest, for coalescing) x NPX x NPY patches.
// Grid: x = ((n * CBLK + channel block) * TILES_Y + tile row) * TILES_X + tile column.
// Sizes: the image sizes, the group count and the batch (G_, SRC_*, DST_*, NB) are plain
// expressions wherever they appear, so that a generic build (miofind/generic.py) reads them at
// run time, with the tile counts below (#ifndef) precomputed; the stencil (filter, pads, strides,
// dilations), the channels per group and the tile shape stay compile-time.
#include "depthwise_common.cuh"

#ifndef GPT
#define GPT 1
#endif
#ifndef NCS
#define NCS 32
#endif
#ifndef RPT
#define RPT 2
#endif
#ifndef VC
#define VC 4
#endif
#ifndef NPX
#define NPX 2
#endif
#ifndef NPY
#define NPY 2
#endif
#ifndef WREG
#define WREG 1
#endif
#ifndef W_CL
#define W_CL 0
#endif

typedef Axis<BWD, PH, SH, DH, FY> AY;
typedef Axis<BWD, PW, SW, DW, FX> AX;

#define TAPS (FY * FX)
#define NT (NCS * NPX * NPY)
#define SRC_C (G_ * IPG)
#define DST_C (G_ * OPG)
#define TH (NPY * RPT)
#define TW (NPX * VC)

constexpr int RB = RPT / AY::UNIT * AY::STEP;   // src rows between vertically adjacent patches
constexpr int CB = VC / AX::UNIT * AX::STEP;    // src columns between horizontally adjacent patches
constexpr int ROWS = AY::span(RPT);
constexpr int COLS = AX::span(VC);
#define NGS (G_ / GPT)
#ifndef CBLK
#define CBLK ((NGS + NCS - 1) / NCS)
#endif
constexpr int SI = GPT * IPG, SO = GPT * OPG;
#ifndef TILES_X
#define TILES_X ((DST_W + TW - 1) / TW)
#endif
#ifndef TILES_Y
#define TILES_Y ((DST_H + TH - 1) / TH)
#endif
#ifndef MIOFIND_GENERIC   // a generic build's G_ is a run-time value (the solver's configs divide it)
static_assert(G_ % GPT == 0, "GPT must divide G");
#endif
static_assert(RPT % AY::UNIT == 0 && VC % AX::UNIT == 0, "patch must be a multiple of the stride (bwd)");

__device__ __forceinline__ index_t wofs(int g, int o, int i, int t)
{
    const int k = BWD ? g * IPG + i : g * OPG + o;
    const int c = BWD ? o : i;
    const int cpg = BWD ? OPG : IPG;
    return W_CL ? ((index_t)k * TAPS + t) * cpg + c : ((index_t)k * cpg + c) * TAPS + t;
}

extern "C" __global__ void __launch_bounds__(NT)
dw_nhwc(const data_t* __restrict__ src, const data_t* __restrict__ w, data_t* __restrict__ dst)
{
    __shared__ float ws[TAPS][OPG][IPG][NCS * GPT];

    int b = blockIdx.x;
    const int tcol = b % TILES_X;
    b /= TILES_X;
    const int trow = b % TILES_Y;
    b /= TILES_Y;
    const int cblk = b % CBLK;
    const index_t n = b / CBLK;
    const int gb0 = cblk * NCS * GPT;
    const int tid = threadIdx.x;

    for(int e = tid; e < TAPS * OPG * IPG * NCS * GPT; e += NT)
    {
        const int t = e % TAPS, i = (e / TAPS) % IPG, o = (e / (TAPS * IPG)) % OPG, gl = e / (TAPS * IPG * OPG);
        const int g = gb0 + gl;
        ws[t][o][i][gl] = g < G_ ? to_acc(w[wofs(g, o, i, t)]) : 0.f;
    }
    __syncthreads();

    const int cs = tid % NCS;
    const int px = (tid / NCS) % NPX;
    const int py = tid / (NCS * NPX);
    const int slot = cblk * NCS + cs;
    if(slot >= NGS) return;
    const int g0 = slot * GPT;

#if WREG
    float wr[TAPS][OPG][IPG][GPT];
#pragma unroll
    for(int t = 0; t < TAPS; ++t)
#pragma unroll
        for(int o = 0; o < OPG; ++o)
#pragma unroll
            for(int i = 0; i < IPG; ++i)
#pragma unroll
                for(int gg = 0; gg < GPT; ++gg) wr[t][o][i][gg] = ws[t][o][i][cs * GPT + gg];
#define WGT(t, o, i, gg) wr[t][o][i][gg]
#else
#define WGT(t, o, i, gg) ws[t][o][i][cs * GPT + (gg)]
#endif

    float acc[RPT][VC][SO];
#pragma unroll
    for(int j = 0; j < RPT; ++j)
#pragma unroll
        for(int jj = 0; jj < VC; ++jj)
#pragma unroll
            for(int m = 0; m < SO; ++m) acc[j][jj][m] = 0.f;

    const int rsb = AY::origin(trow * TH) + py * RB;
    const int csb = AX::origin(tcol * TW) + px * CB;
    const data_t* sp = src + n * SRC_H * SRC_W * SRC_C + g0 * IPG;
#pragma unroll
    for(int sr = 0; sr < ROWS; ++sr)
    {
        if(!AY::used(RPT, sr)) continue;
        const int row = rsb + sr;
        const bool rok = row >= 0 && row < SRC_H;
        float xb[COLS][SI];
#pragma unroll
        for(int c = 0; c < COLS; ++c)
        {
            if(!AX::used(VC, c)) continue;
            const int col = csb + c;
            if(rok && col >= 0 && col < SRC_W)
                load_vec<SI>(sp + ((index_t)row * SRC_W + col) * SRC_C, xb[c]);
            else
            {
#pragma unroll
                for(int m = 0; m < SI; ++m) xb[c][m] = 0.f;
            }
        }
#pragma unroll
        for(int j = 0; j < RPT; ++j)
#pragma unroll
            for(int r = 0; r < FY; ++r)
            {
                if(!(AY::hit(j, r) && AY::off(j, r) == sr)) continue;
#pragma unroll
                for(int jj = 0; jj < VC; ++jj)
#pragma unroll
                    for(int s = 0; s < FX; ++s)
                    {
                        if(!AX::hit(jj, s)) continue;
                        const int c = AX::off(jj, s);
#pragma unroll
                        for(int gg = 0; gg < GPT; ++gg)
#pragma unroll
                            for(int o = 0; o < OPG; ++o)
#pragma unroll
                                for(int i = 0; i < IPG; ++i)
                                    acc[j][jj][gg * OPG + o] += WGT(r * FX + s, o, i, gg) * xb[c][gg * IPG + i];
                    }
            }
    }

    data_t* dp = dst + n * DST_H * DST_W * DST_C + g0 * OPG;
#pragma unroll
    for(int j = 0; j < RPT; ++j)
    {
        const int row = trow * TH + py * RPT + j;
        if(row >= DST_H) break;
#pragma unroll
        for(int jj = 0; jj < VC; ++jj)
        {
            const int col = tcol * TW + px * VC + jj;
            if(col < DST_W) store_vec<SO>(dp + ((index_t)row * DST_W + col) * DST_C, acc[j][jj]);
        }
    }
}
