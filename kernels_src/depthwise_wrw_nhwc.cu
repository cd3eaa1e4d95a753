// Depthwise / small-group direct convolution, backward weights, NHWC: stage 1 of 2.
//
// dw[k, i, r, s] = sum over (n, oh, ow) of dy[n, oh, ow, k] * x[n, oh*SH - PH + r*DH, ow*SW - PW + s*DW, g*IPG + i]
// with g = k / OPG. A thread owns GPT consecutive groups, or with GPT = 1 a slice of OPT dy
// channels and IPT x channels of one group (the block's channel combination), so that it loads
// SO = GPT*OPT dy and SI = GPT*IPT x channels per pixel as one contiguous vector; and a patch of
// RPT x VC outputs of each work item (image, tile). Block (chunk, combination, channel block)
// takes items chunk, chunk + NCHUNK, ... in order.
// Per item the thread loads its dy patch, then walks the patch's x footprint row by row (each
// footprint pixel loaded once) adding products into taps x SO x IPG register sums. The block
// then reduces over its patches in a fixed order (butterflies over the lanes of one group slot,
// then the warps in order, ACC_BLK sums at a time through shared memory) and writes one partial
// per weight element to part[chunk][(k*IPG + i)*TAPS + tap]; depthwise_wrw_reduce.cu sums
// the chunks in order. No atomics: the result is bitwise reproducible.
// Thread order: group slot (fastest; NCS a power of two below 32 or a multiple of 32), px, py.
// Sizes: the image sizes, the group count and the batch (G_, SRC_*, DST_*, NB, NCHUNK) are plain
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
#ifndef OPT
#define OPT OPG
#endif
#ifndef IPT
#define IPT IPG
#endif

typedef Axis<0, PH, SH, DH, FY> AY;
typedef Axis<0, PW, SW, DW, FX> AX;

#define TAPS (FY * FX)
#define NT (NCS * NPX * NPY)
#define NWARP (NT / 32)
#define SRC_C (G_ * IPG)
#define DST_C (G_ * OPG)
#define TH (NPY * RPT)
#define TW (NPX * VC)
#define WTOT (G_ * OPG * IPG * TAPS)

constexpr int ROWS = AY::span(RPT);
constexpr int COLS = AX::span(VC);
#define NGS (G_ / GPT)
#ifndef CBLK
#define CBLK ((NGS + NCS - 1) / NCS)
#endif
constexpr int SI = GPT * IPT, SO = GPT * OPT;
constexpr int NOC = OPG / OPT, NIC = IPG / IPT;
constexpr int ACC = TAPS * SO * SI / GPT;
constexpr int LU = NCS < 32 ? NCS : 32;      // lanes of a warp that hold distinct slots
constexpr int WPR = NCS < 32 ? 1 : NCS / 32; // warps per row of slots
constexpr int ACC_BLK = ACC < 4096 / (NWARP * LU) ? ACC : (4096 / (NWARP * LU) > 0 ? 4096 / (NWARP * LU) : 1);
#ifndef TILES_X
#define TILES_X ((DST_W + TW - 1) / TW)
#endif
#ifndef TILES_Y
#define TILES_Y ((DST_H + TH - 1) / TH)
#endif
#ifndef TILES_XY
#define TILES_XY (TILES_X * TILES_Y)
#endif
#define ITEMS ((long long)NB * TILES_X * TILES_Y)
#ifndef MIOFIND_GENERIC   // a generic build's G_ is a run-time value (the solver's configs divide it)
static_assert(G_ % GPT == 0, "GPT must divide G");
#endif
static_assert(NT % 32 == 0 && (NCS % 32 == 0 || 32 % NCS == 0), "bad thread shape");
static_assert(OPG % OPT == 0 && IPG % IPT == 0 && (GPT == 1 || (OPT == OPG && IPT == IPG)), "bad channel split");

extern "C" __global__ void __launch_bounds__(NT)
dw_nhwc_wrw(const data_t* __restrict__ dy, const data_t* __restrict__ x, float* __restrict__ part)
{
    __shared__ float red[NWARP][LU][ACC_BLK];

    const int cblk = blockIdx.x % CBLK;
    const int ic = (blockIdx.x / CBLK) % NIC;
    const int oc = (blockIdx.x / (CBLK * NIC)) % NOC;
    const int chunk = blockIdx.x / (CBLK * NIC * NOC);
    const int tid = threadIdx.x;
    const int cs = tid % NCS;
    const int px = (tid / NCS) % NPX;
    const int py = tid / (NCS * NPX);
    const int slot = cblk * NCS + cs;
    const bool active = slot < NGS;
    const int g0 = slot * GPT;

    // acc[(t * SO + m) * IPT + i], m = gg*OPT + o
    float acc[ACC];
#pragma unroll
    for(int a = 0; a < ACC; ++a) acc[a] = 0.f;

    if(active)
    {
#pragma unroll 1
        for(long long it = chunk; it < ITEMS; it += NCHUNK)
        {
            const int tcol = (int)(it % TILES_X);
            const int trow = (int)((it / TILES_X) % TILES_Y);
            const index_t n = (index_t)(it / TILES_XY);
            const int r0 = trow * TH + py * RPT, c0 = tcol * TW + px * VC;

            float dyv[RPT][VC][SO];
            const data_t* yp = dy + n * DST_H * DST_W * DST_C + g0 * OPG + oc * OPT;
#pragma unroll
            for(int j = 0; j < RPT; ++j)
#pragma unroll
                for(int jj = 0; jj < VC; ++jj)
                {
                    if(r0 + j < DST_H && c0 + jj < DST_W)
                        load_vec<SO>(yp + ((index_t)(r0 + j) * DST_W + c0 + jj) * DST_C, dyv[j][jj]);
                    else
                    {
#pragma unroll
                        for(int m = 0; m < SO; ++m) dyv[j][jj][m] = 0.f;
                    }
                }

            const int rsb = r0 * SH - PH, csb = c0 * SW - PW;
            const data_t* xp = x + n * SRC_H * SRC_W * SRC_C + g0 * IPG + ic * IPT;
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
                        load_vec<SI>(xp + ((index_t)row * SRC_W + col) * SRC_C, xb[c]);
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
                        if(AY::off(j, r) != sr) continue;
#pragma unroll
                        for(int jj = 0; jj < VC; ++jj)
#pragma unroll
                            for(int s = 0; s < FX; ++s)
#pragma unroll
                                for(int gg = 0; gg < GPT; ++gg)
#pragma unroll
                                    for(int o = 0; o < OPT; ++o)
#pragma unroll
                                        for(int i = 0; i < IPT; ++i)
                                            acc[((r * FX + s) * SO + gg * OPT + o) * IPT + i] +=
                                                dyv[j][jj][gg * OPT + o] * xb[AX::off(jj, s)][gg * IPT + i];
                    }
            }
        }
    }

    // block reduction in a fixed order, ACC_BLK sums at a time
    const int lane = tid % 32, warp = tid / 32;
#pragma unroll
    for(int a0 = 0; a0 < ACC; a0 += ACC_BLK)
    {
#pragma unroll
        for(int a = 0; a < ACC_BLK; ++a)
        {
            if(a0 + a >= ACC) break;
            float v = acc[a0 + a];
#pragma unroll
            for(int m = 16; m >= NCS; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
            if(lane < LU) red[warp][lane][a] = v;
        }
        __syncthreads();
        for(int e = tid; e < NCS * ACC_BLK; e += NT)
        {
            const int csl = e % NCS, a = e / NCS;
            if(a0 + a >= ACC || cblk * NCS + csl >= NGS) continue;
            float s = 0.f;
            for(int k = csl / LU; k < NWARP; k += WPR) s += red[k][csl % LU][a];
            const int af = a0 + a;
            const int i = af % IPT, m = (af / IPT) % SO, t = af / (IPT * SO);
            const int k = ((cblk * NCS + csl) * GPT + m / OPT) * OPG + oc * OPT + m % OPT;
            part[(index_t)chunk * WTOT + ((index_t)k * IPG + ic * IPT + i) * TAPS + t] = s;
        }
        __syncthreads();
    }
}
