// Depthwise / small-group direct convolution, NCHW, forward and backward data (gather form).
//
// A pass dst <- src with G groups of IPG src and OPG dst channels: forward src = x, dst = y
// (IPG = C/G, OPG = K/G); backward data src = dy, dst = dx (IPG = K/G, OPG = C/G). The
// per-axis index algebra (Axis in depthwise_common.cuh) makes the tap pattern of every
// register position a compile-time constant, also for the stride-2 backward pass.
//
// Block: PPB consecutive groups of one image, a TH x TW dst tile, TH = NRY*RPT, TW = NCX*VPT*UNIT_X.
// The block stages the src footprint of the tile, (TSR x TSC per src channel, zero outside the
// image) in shared memory as float, read once from DRAM with VEC-wide loads (VEC divides SRC_W,
// chunks start VEC-aligned, so a chunk is wholly inside or outside a row), and the group's
// weights. Thread (pg, oc, ry, cx) computes OPT dst channels x RPT consecutive rows x VPT column
// units; unit q of the thread is the tile's unit q*NCX + cx (interleaved, so that a warp reads
// consecutive shared-memory words), a unit being UNIT_X consecutive columns (S_W in the
// backward pass, one phase each). The thread walks its footprint rows once, keeping one row's
// values in registers and adding it to every (row, tap) pair that reads it.
// Grid: x = ((n * GB + group block) * TILES_Y + tile row) * TILES_X + tile column.
// Sizes: the image sizes, the group count and the batch (G_, SRC_*, DST_*, NB) are plain
// expressions wherever they appear, so that a generic build (miofind/generic.py) reads them at
// run time, with the tile counts below (#ifndef) precomputed; the stencil (filter, pads, strides,
// dilations), the channels per group and the tile shape stay compile-time.
#include "depthwise_common.cuh"

#ifndef OPT
#define OPT 1
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
#ifndef W_CL
#define W_CL 0
#endif

typedef Axis<BWD, PH, SH, DH, FY> AY;
typedef Axis<BWD, PW, SW, DW, FX> AX;

#define TAPS (FY * FX)
#define NOC (OPG / OPT)
#define NT (NCX * NRY * NOC * PPB)
#define SRC_C (G_ * IPG)
#define DST_C (G_ * OPG)
#define UX (AX::UNIT)
#define TH (NRY * RPT)
#define TW (NCX * VPT * UX)

constexpr int RB = RPT / AY::UNIT * AY::STEP;       // src rows between consecutive ry
constexpr int ROWS = AY::span(RPT);                 // src rows one thread reads
constexpr int COLS = AX::span(UX);                  // src columns one unit reads
constexpr int TSR = (NRY - 1) * RB + ROWS;
constexpr int TSC = (NCX * VPT - 1) * AX::STEP + COLS;
constexpr int NCHK = (TSC + 2 * VEC - 2) / VEC;     // staged chunks per row (start misaligned by < VEC)
#ifndef TILES_X
#define TILES_X ((DST_W + TW - 1) / TW)
#endif
#ifndef TILES_Y
#define TILES_Y ((DST_H + TH - 1) / TH)
#endif
#ifndef GB
#define GB ((G_ + PPB - 1) / PPB)
#endif
constexpr int STAGE_N = PPB * IPG * TSR * NCHK;   // chunks to stage
constexpr int BATCH = (STAGE_N + NT - 1) / NT < 32 / VEC ? (STAGE_N + NT - 1) / NT : (32 / VEC > 0 ? 32 / VEC : 1);
static_assert(RPT % AY::UNIT == 0, "RPT must be a multiple of the row unit");
static_assert(OPG % OPT == 0, "OPT must divide OPG");
static_assert(PITCH >= NCHK * VEC && PITCH % 4 == 0, "bad PITCH");
#ifndef MIOFIND_GENERIC   // a generic build's SRC_W is a run-time value (the solver picks VEC dividing it)
static_assert(VEC == 1 || SRC_W % VEC == 0, "VEC must divide SRC_W");
#endif

// weight of dst channel o and src channel i of group g at tap t (both channel indices group-local)
__device__ __forceinline__ index_t wofs(int g, int o, int i, int t)
{
    const int k = BWD ? g * IPG + i : g * OPG + o;
    const int c = BWD ? o : i;
    const int cpg = BWD ? OPG : IPG;
    return W_CL ? ((index_t)k * TAPS + t) * cpg + c : ((index_t)k * cpg + c) * TAPS + t;
}

extern "C" __global__ void __launch_bounds__(NT)
dw_nchw(const data_t* __restrict__ src, const data_t* __restrict__ w, data_t* __restrict__ dst)
{
    __shared__ __align__(16) float xs[PPB * IPG][TSR][PITCH];
    __shared__ float ws[PPB][IPG][OPG][TAPS];

    int b = blockIdx.x;
    const int tcol = b % TILES_X;
    b /= TILES_X;
    const int trow = b % TILES_Y;
    b /= TILES_Y;
    const int g0 = (b % GB) * PPB;
    const index_t n = b / GB;
    const int r0 = trow * TH, c0 = tcol * TW;
    const int rs0 = AY::origin(r0), cs0 = AX::origin(c0);
    const int csa = floordiv(cs0, VEC) * VEC; // staging starts VEC-aligned ...
    const int offa = cs0 - csa;               // ... offa columns before the footprint
    const int tid = threadIdx.x;

    for(int e = tid; e < PPB * IPG * OPG * TAPS; e += NT)
    {
        const int t = e % TAPS, o = (e / TAPS) % OPG, i = (e / (TAPS * OPG)) % IPG, pg = e / (TAPS * OPG * IPG);
        const int g = g0 + pg;
        ws[pg][i][o][t] = g < G_ ? to_acc(w[wofs(g, o, i, t)]) : 0.f;
    }
    // all of a batch's loads are issued before its shared-memory stores, for memory-level parallelism
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
                load_vec<VEC>(src + ((n * SRC_C + g0 * IPG + pl) * SRC_H + sr) * SRC_W + sc, v[k]);
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
    __syncthreads();

    const int cx = tid % NCX;
    const int ry = (tid / NCX) % NRY;
    const int oc = (tid / (NCX * NRY)) % NOC;
    const int pg = tid / (NCX * NRY * NOC);

    float acc[OPT][RPT][VPT][UX];
#pragma unroll
    for(int o = 0; o < OPT; ++o)
#pragma unroll
        for(int j = 0; j < RPT; ++j)
#pragma unroll
            for(int q = 0; q < VPT; ++q)
#pragma unroll
                for(int u = 0; u < UX; ++u) acc[o][j][q][u] = 0.f;

#pragma unroll 1
    for(int i = 0; i < IPG; ++i)
    {
        float wr[OPT][TAPS];
#pragma unroll
        for(int o = 0; o < OPT; ++o)
#pragma unroll
            for(int t = 0; t < TAPS; ++t) wr[o][t] = ws[pg][i][oc * OPT + o][t];
        const float* xp = &xs[pg * IPG + i][ry * RB][offa + cx * AX::STEP];
#pragma unroll
        for(int sr = 0; sr < ROWS; ++sr)
        {
            if(!AY::used(RPT, sr)) continue;
            // the row's values under the thread's units: unit q reads columns q*NCX*STEP + [0, COLS)
            float buf[VPT][COLS];
#pragma unroll
            for(int q = 0; q < VPT; ++q)
#pragma unroll
                for(int c = 0; c < COLS; ++c) buf[q][c] = xp[sr * PITCH + q * NCX * AX::STEP + c];
#pragma unroll
            for(int j = 0; j < RPT; ++j)
#pragma unroll
                for(int r = 0; r < FY; ++r)
                {
                    if(!(AY::hit(j, r) && AY::off(j, r) == sr)) continue;
#pragma unroll
                    for(int u = 0; u < UX; ++u)
#pragma unroll
                        for(int s = 0; s < FX; ++s)
                        {
                            if(!AX::hit(u, s)) continue;
#pragma unroll
                            for(int o = 0; o < OPT; ++o)
#pragma unroll
                                for(int q = 0; q < VPT; ++q)
                                    acc[o][j][q][u] += wr[o][r * FX + s] * buf[q][AX::off(u, s)];
                        }
                }
        }
    }

    const int g = g0 + pg;
    if(g >= G_) return;
#pragma unroll
    for(int o = 0; o < OPT; ++o)
    {
        data_t* dp = dst + (n * DST_C + g * OPG + oc * OPT + o) * DST_H * DST_W;
#pragma unroll
        for(int j = 0; j < RPT; ++j)
        {
            const int row = r0 + ry * RPT + j;
            if(row >= DST_H) break;
#pragma unroll
            for(int q = 0; q < VPT; ++q)
#pragma unroll
                for(int u = 0; u < UX; ++u)
                {
                    const int col = c0 + (q * NCX + cx) * UX + u;
                    if(col < DST_W) store_acc(&dp[row * DST_W + col], acc[o][j][q][u]);
                }
        }
    }
}
