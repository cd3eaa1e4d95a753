// Depthwise / small-group direct convolution, backward weights, NCHW: stage 1 of 2.
//
// dw[k, i, r, s] = sum over (n, oh, ow) of dy[n, k, oh, ow] * x[n, g*IPG + i, oh*SH - PH + r*DH, ow*SW - PW + s*DW]
// with g = k / OPG (IPG = C/G, OPG = K/G). A channel combination is a slice of OPT dy channels
// and IPT x channels of a group; a block covers CIB of the NOC*NIC combinations of PPB groups.
// Work items are (image, dst tile); block (chunk, combination block, group block) takes items
// chunk, chunk + NCHUNK, ... in that order, stages the x footprint of each tile in shared memory
// (as depthwise_nchw.cu does, forward algebra) and every thread adds its RPT x VPT
// outputs' products into OPT x IPT x taps register sums. At the end the block
// reduces its threads' sums in a fixed order (warp butterflies, then the warps of a channel
// combination in order) and writes one partial per weight element to
// part[chunk][(k*IPG + i)*TAPS + tap]; depthwise_wrw_reduce.cu sums the chunks in order.
// No atomics: the result is bitwise reproducible.
// Thread order: spatial (cx fastest, then ry; NCX*NRY a multiple of 32), combination, pg.
// Sizes: the image sizes, the group count and the batch (G_, SRC_*, DST_*, NB, NCHUNK) are plain
// expressions wherever they appear, so that a generic build (miofind/generic.py) reads them at
// run time, with the tile counts below (#ifndef) precomputed; the stencil (filter, pads, strides,
// dilations), the channels per group and the tile shape stay compile-time.
#include "depthwise_common.cuh"

#ifndef OPT
#define OPT 1
#endif
#ifndef IPT
#define IPT 1
#endif
#ifndef RPT
#define RPT 4
#endif
#ifndef VPT
#define VPT 4
#endif
#ifndef NCX
#define NCX 16
#endif
#ifndef NRY
#define NRY 8
#endif
#ifndef PPB
#define PPB 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef CIB
#define CIB ((OPG / OPT) * (IPG / IPT))
#endif

typedef Axis<0, PH, SH, DH, FY> AY;
typedef Axis<0, PW, SW, DW, FX> AX;

#define TAPS (FY * FX)
#define NSP (NCX * NRY)
#define NOC (OPG / OPT)
#define NIC (IPG / IPT)
#define NCB (NOC * NIC / CIB)   // combination blocks
#define NT (NSP * CIB * PPB)
#define NWARP (NT / 32)
#define ACC (OPT * IPT * TAPS)
#define SRC_C (G_ * IPG)
#define DST_C (G_ * OPG)
#define TH (NRY * RPT)
#define TW (NCX * VPT)
#define WTOT (G_ * OPG * IPG * TAPS)

constexpr int RB = RPT * SH;
constexpr int ROWS = AY::span(RPT);
constexpr int COLS = AX::span(1);
constexpr int TSR = (NRY - 1) * RB + ROWS;
constexpr int TSC = (NCX * VPT - 1) * SW + COLS;
constexpr int NCHK = (TSC + 2 * VEC - 2) / VEC;
#ifndef TILES_X
#define TILES_X ((DST_W + TW - 1) / TW)
#endif
#ifndef TILES_Y
#define TILES_Y ((DST_H + TH - 1) / TH)
#endif
#ifndef TILES_XY
#define TILES_XY (TILES_X * TILES_Y)
#endif
#ifndef GB
#define GB ((G_ + PPB - 1) / PPB)
#endif
constexpr int STAGE_N = PPB * IPG * TSR * NCHK;
constexpr int BATCH = (STAGE_N + NT - 1) / NT < 32 / VEC ? (STAGE_N + NT - 1) / NT : (32 / VEC > 0 ? 32 / VEC : 1);
#define ITEMS ((long long)NB * TILES_X * TILES_Y)
static_assert(NSP % 32 == 0, "NCX*NRY must be a multiple of 32");
static_assert(OPG % OPT == 0 && IPG % IPT == 0 && (NOC * NIC) % CIB == 0, "bad channel split");
static_assert(PITCH >= NCHK * VEC && PITCH % 4 == 0, "bad PITCH");
#ifndef MIOFIND_GENERIC   // a generic build's SRC_W is a run-time value (the solver picks VEC dividing it)
static_assert(VEC == 1 || SRC_W % VEC == 0, "VEC must divide SRC_W");
#endif

extern "C" __global__ void __launch_bounds__(NT)
dw_nchw_wrw(const data_t* __restrict__ dy, const data_t* __restrict__ x, float* __restrict__ part)
{
    __shared__ __align__(16) float xs[PPB * IPG][TSR][PITCH];
    __shared__ float red[NWARP][ACC];

    const int g0 = (blockIdx.x % GB) * PPB;
    const int cblk = (blockIdx.x / GB) % NCB;
    const int chunk = blockIdx.x / (GB * NCB);
    const int tid = threadIdx.x;
    const int cx = tid % NCX;
    const int ry = (tid / NCX) % NRY;
    const int combo = cblk * CIB + (tid / NSP) % CIB;
    const int ic = combo % NIC;
    const int oc = combo / NIC;
    const int pg = tid / (NSP * CIB);
    const int g = g0 + pg;

    float acc[OPT][IPT][TAPS];
#pragma unroll
    for(int o = 0; o < OPT; ++o)
#pragma unroll
        for(int i = 0; i < IPT; ++i)
#pragma unroll
            for(int t = 0; t < TAPS; ++t) acc[o][i][t] = 0.f;

#pragma unroll 1
    for(long long it = chunk; it < ITEMS; it += NCHUNK)
    {
        const int tcol = (int)(it % TILES_X);
        const int trow = (int)((it / TILES_X) % TILES_Y);
        const index_t n = (index_t)(it / TILES_XY);
        const int r0 = trow * TH, c0 = tcol * TW;
        const int rs0 = r0 * SH - PH, cs0 = c0 * SW - PW;
        const int csa = floordiv(cs0, VEC) * VEC;
        const int offa = cs0 - csa;

        __syncthreads(); // the previous item's readers are done with xs
#pragma unroll 1
        for(int e0 = 0; e0 < STAGE_N; e0 += BATCH * NT)
        {
            float v[BATCH][VEC];
#pragma unroll
            for(int k = 0; k < BATCH; ++k)
            {
                const int e = e0 + k * NT + tid;
                const int ch = e % NCHK, row = (e / NCHK) % TSR, pl = e / (NCHK * TSR);
                const int sr = rs0 + row, sc = csa + ch * VEC;
                if(e < STAGE_N && g0 * IPG + pl < SRC_C && sr >= 0 && sr < SRC_H && sc >= 0 && sc + VEC <= SRC_W)
                    load_vec<VEC>(x + ((n * SRC_C + g0 * IPG + pl) * SRC_H + sr) * SRC_W + sc, v[k]);
                else
                {
#pragma unroll
                    for(int m = 0; m < VEC; ++m) v[k][m] = 0.f;
                }
            }
#pragma unroll
            for(int k = 0; k < BATCH; ++k)
            {
                const int e = e0 + k * NT + tid;
                if(e < STAGE_N) stage_store_n<VEC>(&xs[0][0][0] + (e / NCHK) * PITCH + (e % NCHK) * VEC, v[k]);
            }
        }

        // the thread's dy values (outside the image or the groups: zero, adding nothing)
        float dyv[OPT][RPT][VPT];
#pragma unroll
        for(int o = 0; o < OPT; ++o)
        {
            const data_t* yp = dy + (n * DST_C + (index_t)g * OPG + oc * OPT + o) * DST_H * DST_W;
#pragma unroll
            for(int j = 0; j < RPT; ++j)
#pragma unroll
                for(int q = 0; q < VPT; ++q)
                {
                    const int row = r0 + ry * RPT + j, col = c0 + q * NCX + cx;
                    dyv[o][j][q] = (g < G_ && row < DST_H && col < DST_W) ? to_acc(yp[row * DST_W + col]) : 0.f;
                }
        }
        __syncthreads();

#pragma unroll
        for(int il = 0; il < IPT; ++il)
        {
            const float* xp = &xs[pg * IPG + ic * IPT + il][ry * RB][offa + cx * SW];
#pragma unroll
            for(int sr = 0; sr < ROWS; ++sr)
            {
                if(!AY::used(RPT, sr)) continue;
                float buf[VPT][COLS];
#pragma unroll
                for(int q = 0; q < VPT; ++q)
#pragma unroll
                    for(int c = 0; c < COLS; ++c) buf[q][c] = xp[sr * PITCH + q * NCX * SW + c];
#pragma unroll
                for(int j = 0; j < RPT; ++j)
#pragma unroll
                    for(int r = 0; r < FY; ++r)
                    {
                        if(AY::off(j, r) != sr) continue;
#pragma unroll
                        for(int s = 0; s < FX; ++s)
#pragma unroll
                            for(int o = 0; o < OPT; ++o)
#pragma unroll
                                for(int q = 0; q < VPT; ++q)
                                    acc[o][il][r * FX + s] += dyv[o][j][q] * buf[q][AX::off(0, s)];
                    }
            }
        }
    }

    // block reduction, fixed order: butterfly within each warp (all lanes share a channel combo) ...
    const int lane = tid % 32, warp = tid / 32;
#pragma unroll
    for(int o = 0; o < OPT; ++o)
#pragma unroll
        for(int i = 0; i < IPT; ++i)
#pragma unroll
            for(int t = 0; t < TAPS; ++t)
            {
                float v = acc[o][i][t];
#pragma unroll
                for(int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
                if(lane == 0) red[warp][(o * IPT + i) * TAPS + t] = v;
            }
    __syncthreads();
    // ... then the NSP/32 warps of a combo in order
    for(int e = tid; e < PPB * CIB * ACC; e += NT)
    {
        const int a = e % ACC, cb = e / ACC;
        float s = 0.f;
        for(int k = 0; k < NSP / 32; ++k) s += red[cb * (NSP / 32) + k][a];
        const int t = a % TAPS, il = (a / TAPS) % IPT, o = a / (IPT * TAPS);
        const int ecombo = cblk * CIB + cb % CIB, epg = cb / CIB;
        const int eic = ecombo % NIC, eoc = ecombo / NIC;
        const int eg = g0 + epg;
        if(eg >= G_) continue;
        const int k = eg * OPG + eoc * OPT + o;
        const int c = eic * IPT + il;
        part[(index_t)chunk * WTOT + ((index_t)k * IPG + c) * TAPS + t] = s;
    }
}
