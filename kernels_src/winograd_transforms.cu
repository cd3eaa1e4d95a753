// Winograd F(WM x WM, 3x3) tile transforms (Lavin & Gray), FP32 arithmetic for every data type.
//
// The convolution solved here is always a stride-1 correlation of an input `in` (CI channels,
// HI x WI) with a 3x3 filter and pads (PH, PW), giving `out` (CO channels, HO x WO), G groups:
//   forward:       in = x,  out = y,  filter w[k][c][r][s];
//   backward data: in = dy, out = dx,  filter w[k][c][2-r][2-s] with k and c swapped, pads 2 - p
//                  (the full correlation of dy with the rotated filter). PH/PW may be negative
//                  (forward pad > 2), which only crops.
// Output tile (th, tw) covers out[th*WM .. th*WM+WM-1][tw*WM ..] and reads the ALPHA x ALPHA input
// patch starting at in[th*WM - PH][tw*WM - PW] (ALPHA = WM + 2), zero outside the image.
//
// Workspace tensors (FP32), pt = xi * ALPHA + nu the transform point, p = (n*TH + th)*TW + tw the tile:
//   U[pt][g][co][ci]                          filter, U = G g G^T
//   V[pt][g][ci][p] (NCHW) or [pt][g][p][ci]  (NHWC)   input, V = B^T d B
//   M[pt][g][co][p] (NCHW) or [pt][g][p][co]  (NHWC)   M[pt] = U[pt] V[pt] (the batched GEMMs)
// and out = A^T M A per tile. NCHW kernels put consecutive threads on consecutive tiles, NHWC
// kernels on consecutive channels, so the workspace traffic is coalesced in both layouts.
//
// Macros: WM (2 or 4), NHWC (0/1), BWD (0/1: read w rotated and transposed), N_, CI, CO, G_,
// HI, WI, HO, WO, PH, PW, TH, TW, P_ (= N_*TH*TW), DATA_T, INDEX_T.
#include "common.cuh"

#ifndef WM
#define WM 2
#endif
#ifndef NHWC
#define NHWC 0
#endif
#ifndef BWD
#define BWD 0
#endif
#ifndef BLOCK
#define BLOCK 256
#endif

#define ALPHA (WM + 2)
#define A2 (ALPHA * ALPHA)
#define CIG (CI / G_)
#define COG (CO / G_)
#define TILES (TH * TW)

#if WM != 2 && WM != 4
#error "WM must be 2 or 4"
#endif

// -- 1D transforms, in place on v[0], v[S], ..., v[(ALPHA-1)*S] ------------------------------------

// d -> B^T d.
// F(2,3): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
// F(4,3), points 0, 1, -1, 2, -2, inf:
//   B^T = [4  0 -5  0 1 0;  0 -4 -4  1 1 0;  0  4 -4 -1 1 0;
//          0 -2 -1  2 1 0;  0  2 -1 -2 1 0;  0  4  0 -5 0 1]
template <int S>
__device__ __forceinline__ void input_1d(float* v)
{
#if WM == 2
    const float d0 = v[0], d1 = v[S], d2 = v[2 * S], d3 = v[3 * S];
    v[0] = d0 - d2;
    v[S] = d1 + d2;
    v[2 * S] = d2 - d1;
    v[3 * S] = d1 - d3;
#else
    const float d0 = v[0], d1 = v[S], d2 = v[2 * S], d3 = v[3 * S], d4 = v[4 * S], d5 = v[5 * S];
    const float a = d4 - 4.f * d2, b = d3 - 4.f * d1;   // rows 1, 2: a +- b
    const float c = d4 - d2, e = 2.f * (d3 - d1);       // rows 3, 4: c +- e
    v[0] = 4.f * d0 - 5.f * d2 + d4;
    v[S] = a + b;
    v[2 * S] = a - b;
    v[3 * S] = c + e;
    v[4 * S] = c - e;
    v[5 * S] = 4.f * d1 - 5.f * d3 + d5;
#endif
}

// g (3 taps, stride 1) -> G g (ALPHA values, stride S).
// F(2,3): G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
// F(4,3): G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
template <int S>
__device__ __forceinline__ void filter_1d(const float* g, float* u)
{
#if WM == 2
    const float s = 0.5f * (g[0] + g[2]), h = 0.5f * g[1];
    u[0] = g[0];
    u[S] = s + h;
    u[2 * S] = s - h;
    u[3 * S] = g[2];
#else
    const float s = g[0] + g[2];
    const float p = g[0] * (1.f / 24.f) + g[2] * (1.f / 6.f), q = g[1] * (1.f / 12.f);
    u[0] = 0.25f * g[0];
    u[S] = -(s + g[1]) * (1.f / 6.f);
    u[2 * S] = -(s - g[1]) * (1.f / 6.f);
    u[3 * S] = p + q;
    u[4 * S] = p - q;
    u[5 * S] = g[2];
#endif
}

// m (ALPHA values, stride S) -> A^T m (WM values, stride T).
// F(2,3): A^T = [1 1 1 0; 0 1 -1 -1]
// F(4,3): A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
template <int S, int T>
__device__ __forceinline__ void output_1d(const float* m, float* y)
{
#if WM == 2
    y[0] = m[0] + m[S] + m[2 * S];
    y[T] = m[S] - m[2 * S] - m[3 * S];
#else
    const float a = m[S] + m[2 * S], b = m[S] - m[2 * S];
    const float c = m[3 * S] + m[4 * S], d = m[3 * S] - m[4 * S];
    y[0] = m[0] + a + c;
    y[T] = b + 2.f * d;
    y[2 * T] = a + 4.f * c;
    y[3 * T] = b + 8.f * d + m[5 * S];
#endif
}

// -- filter transform: one thread per (output channel co, input channel ci of its group) ---------
// U[pt][co][ci] with co = g*COG + cog: consecutive threads write consecutive ci.
extern "C" __global__ void __launch_bounds__(BLOCK)
winograd_filter(const data_t* __restrict__ w, float* __restrict__ u)
{
    const index_t t = (index_t)blockIdx.x * BLOCK + threadIdx.x;
    if(t >= (index_t)CO * CIG)
        return;
    const int ci = (int)(t % CIG);
    const int co = (int)(t / CIG);
    float g[3][3];
#if BWD
    // forward weights w[kf][cf][r][s] with kf = g*CIG + ci (dy's channel), cf = cog (dx's channel)
    const int grp = co / COG, cog = co % COG;
    const index_t kf = (index_t)grp * CIG + ci;
#pragma unroll
    for(int r = 0; r < 3; ++r)
#pragma unroll
        for(int s = 0; s < 3; ++s)
        {
            const int tap = (2 - r) * 3 + (2 - s);
#if NHWC
            g[r][s] = to_acc(w[(kf * 9 + tap) * COG + cog]);
#else
            g[r][s] = to_acc(w[(kf * COG + cog) * 9 + tap]);
#endif
        }
#else
#pragma unroll
    for(int r = 0; r < 3; ++r)
#pragma unroll
        for(int s = 0; s < 3; ++s)
        {
#if NHWC
            g[r][s] = to_acc(w[((index_t)co * 9 + r * 3 + s) * CIG + ci]);
#else
            g[r][s] = to_acc(w[((index_t)co * CIG + ci) * 9 + r * 3 + s]);
#endif
        }
#endif
    // columns: tmp = G g (ALPHA x 3), then rows: U = tmp G^T (ALPHA x ALPHA)
    float tmp[ALPHA][3], ut[ALPHA][ALPHA];
#pragma unroll
    for(int s = 0; s < 3; ++s)
    {
        const float col[3] = {g[0][s], g[1][s], g[2][s]};
        filter_1d<3>(col, &tmp[0][s]);
    }
#pragma unroll
    for(int i = 0; i < ALPHA; ++i)
        filter_1d<1>(tmp[i], ut[i]);
#pragma unroll
    for(int i = 0; i < ALPHA; ++i)
#pragma unroll
        for(int j = 0; j < ALPHA; ++j)
            u[(index_t)(i * ALPHA + j) * ((index_t)CO * CIG) + t] = ut[i][j];
}

// -- input transform: one thread per (tile, input channel) ---------------------------------------
extern "C" __global__ void __launch_bounds__(BLOCK)
winograd_input(const data_t* __restrict__ in, float* __restrict__ v)
{
    const index_t t = (index_t)blockIdx.x * BLOCK + threadIdx.x;
    if(t >= (index_t)P_ * CI)
        return;
#if NHWC
    const int c = (int)(t % CI);
    const index_t p = t / CI;
    const index_t n = p / TILES;
    const int tile = (int)(p % TILES);
#else
    const int tile = (int)(t % TILES);
    const index_t nc = t / TILES;
    const int c = (int)(nc % CI);
    const index_t n = nc / CI;
    const index_t p = n * TILES + tile;
#endif
    const int h0 = (tile / TW) * WM - PH, w0 = (tile % TW) * WM - PW;
    float d[ALPHA][ALPHA];
#pragma unroll
    for(int i = 0; i < ALPHA; ++i)
    {
        const int h = h0 + i;
        const bool hok = h >= 0 && h < HI;
#pragma unroll
        for(int j = 0; j < ALPHA; ++j)
        {
            const int x = w0 + j;
            float val = 0.f;
            if(hok && x >= 0 && x < WI)
            {
#if NHWC
                val = to_acc(in[((n * HI + h) * WI + x) * CI + c]);
#else
                val = to_acc(in[(nc * HI + h) * WI + x]);
#endif
            }
            d[i][j] = val;
        }
    }
    // V = B^T d B: columns, then rows
#pragma unroll
    for(int j = 0; j < ALPHA; ++j)
        input_1d<ALPHA>(&d[0][j]);
#pragma unroll
    for(int i = 0; i < ALPHA; ++i)
        input_1d<1>(d[i]);
#if NHWC
    const int grp = c / CIG, ci = c % CIG;
    float* vt = v + ((index_t)grp * P_ + p) * CIG + ci;
#else
    float* vt = v + (index_t)c * P_ + p;
#endif
#pragma unroll
    for(int i = 0; i < ALPHA; ++i)
#pragma unroll
        for(int j = 0; j < ALPHA; ++j)
            vt[(index_t)(i * ALPHA + j) * ((index_t)CI * P_)] = d[i][j];
}

// -- output transform: one thread per (tile, output channel) -------------------------------------
template <int N>
struct __align__(N * sizeof(data_t)) row_vec
{
    data_t v[N];
};

__device__ __forceinline__ data_t from_acc(float x)
{
    data_t r;
    store_acc(&r, x);
    return r;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
winograd_output(const float* __restrict__ m, data_t* __restrict__ out, int vec_ok)
{
    const index_t t = (index_t)blockIdx.x * BLOCK + threadIdx.x;
    if(t >= (index_t)P_ * CO)
        return;
#if NHWC
    const int k = (int)(t % CO);
    const index_t p = t / CO;
    const index_t n = p / TILES;
    const int tile = (int)(p % TILES);
    const int grp = k / COG, cog = k % COG;
    const float* mt = m + ((index_t)grp * P_ + p) * COG + cog;
#else
    const int tile = (int)(t % TILES);
    const index_t nk = t / TILES;
    const index_t p = (nk / CO) * TILES + tile;
    const float* mt = m + (index_t)(nk % CO) * P_ + p;
#endif
    float a[ALPHA][ALPHA];
#pragma unroll
    for(int i = 0; i < ALPHA; ++i)
#pragma unroll
        for(int j = 0; j < ALPHA; ++j)
            a[i][j] = mt[(index_t)(i * ALPHA + j) * ((index_t)CO * P_)];
    // Y = A^T M A: columns (ALPHA -> WM rows), then rows (ALPHA -> WM columns)
    float tmp[WM][ALPHA], y[WM][WM];
#pragma unroll
    for(int j = 0; j < ALPHA; ++j)
        output_1d<ALPHA, ALPHA>(&a[0][j], &tmp[0][j]);
#pragma unroll
    for(int i = 0; i < WM; ++i)
        output_1d<1, 1>(tmp[i], y[i]);

    const int h0 = (tile / TW) * WM, w0 = (tile % TW) * WM;
#pragma unroll
    for(int i = 0; i < WM; ++i)
    {
        const int h = h0 + i;
        if(h >= HO)
            break;
#if NHWC
        data_t* row = out + ((n * HO + h) * WO + w0) * CO + k;
#pragma unroll
        for(int j = 0; j < WM; ++j)
            if(w0 + j < WO)
                store_acc(row + (index_t)j * CO, y[i][j]);
#else
        data_t* row = out + (nk * HO + h) * WO + w0;
#if WO % WM == 0
        // the tile row lies inside the image and starts at a multiple of WM elements: one vector
        // store when `out` itself is aligned to WM elements (vec_ok, checked by the invoker)
        if(vec_ok)
        {
            row_vec<WM> r;
#pragma unroll
            for(int j = 0; j < WM; ++j)
                r.v[j] = from_acc(y[i][j]);
            *reinterpret_cast<row_vec<WM>*>(row) = r;
            continue;
        }
#endif
#pragma unroll
        for(int j = 0; j < WM; ++j)
            if(w0 + j < WO)
                store_acc(row + j, y[i][j]);
#endif
    }
}
