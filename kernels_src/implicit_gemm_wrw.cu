// Implicit-GEMM convolution, backward weights (engine in implicit_gemm_core.cu), with a deterministic
// split-K over the reduction.
//
// Per group g: dw[k, col] = sum_j A[k, j] * B[j, col] with
//   k   = output channel in the group  M = K/G,
//   col = (c, z, r, s)                 N = C/G*Z*Y*X, ordered c-minor ((z, r, s), c) when KK_CLAST
//                                      (channels-last x, so that a run of cols is a run of channels),
//   j   = (n, od, oh, ow)              K = N*Do*Ho*Wo,
//   A[k, j]   = dy[n, g*K/G + k, od, oh, ow],
//   B[j, col] = x[n, g*C/G + c, od*sd - pd + z*dd, oh*sh - ph + r*dh, ow*sw - pw + s*dw] (0 outside).
// The x offset splits into a row part (c, z*dd, ...: fixed per GEMM column) and a part of j.
// With SPLITK > 1 the reduction is cut into SPLITK chunks of KCHUNK (a multiple of BK); chunk s
// writes its FP32 partial tile to ws[s][g][k][col] and igemm_wrw_reduce sums the chunks in order
// (no atomics), converts and scatters into dw's layout. With SPLITK = 1 the GEMM writes dw.
// Grid: x = K/G tiles, y = N tiles, z = groups * SPLITK.
#include "common.cuh"

#ifndef SPLITK
#define SPLITK 1
#endif
#ifndef KCHUNK
#define KCHUNK 0
#endif
#ifndef RED_BLOCK
#define RED_BLOCK 256
#endif

#define CPG (P_C / P_G)
#define KPG (P_K / P_G)
#define TAPS (P_Z * P_Y * P_X)
#define GEMM_M KPG
#define GEMM_N (CPG * TAPS)
#define GEMM_K ((index_t)P_N * P_DO * P_HO * P_WO)
#define BIG (1 << 29)

// GEMM column -> (c, z, r, s)
__device__ __forceinline__ void split_col(int col, int& c, int& z, int& r, int& s)
{
    int tap;
#if KK_CLAST
    tap = col / CPG; c = col % CPG;
#else
    c = col / TAPS; tap = col % TAPS;
#endif
    s = tap % P_X; tap /= P_X;
    r = tap % P_Y; z = tap / P_Y;
}

struct OpA  // dy, rows are output channels k, kk = j
{
    struct Row { index_t base; bool ok; };
    struct Col { index_t off; bool ok; };
    static __device__ __forceinline__ Row row(index_t k)
    {
        Row o;
        o.ok = k < KPG;
        o.base = o.ok ? k * YS_C : 0;
        return o;
    }
    static __device__ __forceinline__ Col col(index_t j, index_t kend)
    {
        Col o;
        o.ok = j < kend;
        index_t t = j;
        const index_t ow = t % P_WO; t /= P_WO;
        const index_t oh = t % P_HO; t /= P_HO;
        const index_t od = t % P_DO;
        const index_t n = t / P_DO;
        o.off = n * YS_N + od * YS_D + oh * YS_H + ow * YS_W;
        return o;
    }
    static __device__ __forceinline__ bool elem(const Row& r, const Col& c, index_t& off)
    {
        off = r.base + c.off;
        return r.ok && c.ok;
    }
};

struct OpB  // x, rows are GEMM columns (c, z, r, s), kk = j
{
    struct Row { index_t base; int dz, dy, dx; };
    struct Col { index_t off; int d0, h0, w0; };
    static __device__ __forceinline__ Row row(index_t col)
    {
        Row o;
        if(col < GEMM_N)
        {
            int c, z, r, s;
            split_col((int)col, c, z, r, s);
            o.dz = z * P_DD; o.dy = r * P_DH; o.dx = s * P_DW;
            o.base = (index_t)c * XS_C + (index_t)o.dz * XS_D + (index_t)o.dy * XS_H + (index_t)o.dx * XS_W;
        }
        else
        {
            o.base = 0; o.dz = BIG; o.dy = BIG; o.dx = BIG;
        }
        return o;
    }
    static __device__ __forceinline__ Col col(index_t j, index_t kend)
    {
        Col o;
        index_t t = j;
        const int ow = (int)(t % P_WO); t /= P_WO;
        const int oh = (int)(t % P_HO); t /= P_HO;
        const int od = (int)(t % P_DO);
        const index_t n = t / P_DO;
        o.d0 = od * P_SD - P_PD; o.h0 = oh * P_SH - P_PH; o.w0 = ow * P_SW - P_PW;
        o.off = n * XS_N + (index_t)o.d0 * XS_D + (index_t)o.h0 * XS_H + (index_t)o.w0 * XS_W;
        if(j >= kend) { o.h0 = BIG; o.w0 = BIG; }
        return o;
    }
    static __device__ __forceinline__ bool elem(const Row& r, const Col& c, index_t& off)
    {
        off = r.base + c.off;
        return (!IS3D || (unsigned)(r.dz + c.d0) < (unsigned)P_DI) && (unsigned)(r.dy + c.h0) < (unsigned)P_HI &&
               (unsigned)(r.dx + c.w0) < (unsigned)P_WI;
    }
};

#include "implicit_gemm_core.cu"

struct EpiDirect  // dw
{
    data_t* dw;
    __device__ __forceinline__ index_t row(index_t k) const { return k * WS_K; }
    __device__ __forceinline__ index_t col(index_t col) const
    {
        int c, z, r, s;
        split_col((int)col, c, z, r, s);
        return (index_t)c * WS_C + (index_t)z * WS_Z + (index_t)r * WS_Y + (index_t)s * WS_X;
    }
    __device__ __forceinline__ void put(index_t off, float v) const { store_acc(dw + off, v); }
};

struct EpiPartial  // ws[split][g][k][col], FP32
{
    float* ws;
    __device__ __forceinline__ index_t row(index_t k) const { return k * GEMM_N; }
    __device__ __forceinline__ index_t col(index_t col) const { return col; }
    __device__ __forceinline__ void put(index_t off, float v) const { ws[off] = v; }
};

extern "C" __global__ void __launch_bounds__(NT)
igemm_wrw(const data_t* __restrict__ dy, const data_t* __restrict__ x, data_t* __restrict__ dw,
          float* __restrict__ ws)
{
    const index_t g = blockIdx.z % P_G;
    const data_t* a = dy + g * KPG * YS_C;
    const data_t* b = x + g * CPG * XS_C;
    const index_t m0 = (index_t)blockIdx.x * BM, n0 = (index_t)blockIdx.y * BN;
#if SPLITK > 1
    const index_t split = blockIdx.z / P_G;
    const index_t kbeg = split * KCHUNK;
    const index_t kend = kbeg + KCHUNK < GEMM_K ? kbeg + KCHUNK : GEMM_K;
    const EpiPartial epi{ws + (split * P_G + g) * (index_t)KPG * GEMM_N};
    igemm_block<OpA, OpB, EpiPartial>(a, b, epi, m0, n0, kbeg, kend);
#else
    const EpiDirect epi{dw + g * KPG * WS_K};
    igemm_block<OpA, OpB, EpiDirect>(a, b, epi, m0, n0, 0, GEMM_K);
#endif
}

// dw[g*K/G + k, c, z, r, s] = sum over splits, in order, of ws[split][g][k][col].
extern "C" __global__ void __launch_bounds__(RED_BLOCK)
igemm_wrw_reduce(const float* __restrict__ ws, data_t* __restrict__ dw)
{
    const index_t per = (index_t)P_K * GEMM_N;  // one split's partials: G * K/G * N
    const index_t i = (index_t)blockIdx.x * RED_BLOCK + threadIdx.x;
    if(i >= per) return;
    float acc = 0.f;
#pragma unroll 4
    for(int s = 0; s < SPLITK; ++s) acc += ws[s * per + i];
    const index_t col = i % GEMM_N;
    const index_t gk = i / GEMM_N;  // g * K/G + k
    int c, z, r, s;
    split_col((int)col, c, z, r, s);
    store_acc(dw + gk * WS_K + (index_t)c * WS_C + (index_t)z * WS_Z + (index_t)r * WS_Y + (index_t)s * WS_X, acc);
}
