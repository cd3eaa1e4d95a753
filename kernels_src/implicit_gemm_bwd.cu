// Implicit-GEMM convolution, backward data (engine in implicit_gemm_core.cu).
//
// Per group g: dx[m, c] = sum_kk A[m, kk] * B[kk, c] with
//   m  = (n, id, ih, iw)          M = N*Di*Hi*Wi input pixels,
//   kk = (k, z, r, s)             K = K/G*Z*Y*X, ordered k-minor ((z, r, s), k) when KK_CLAST
//                                 (channels-last dy),
//   A[m, kk] = dy[n, g*K/G + k, od, oh, ow] where id + pd - z*dd = od*sd (and likewise for h, w):
//              the tap contributes only when that difference is >= 0, divisible by the stride,
//              and the quotient is inside the output (a predicated gather; with stride 1 every
//              tap whose output lands inside contributes),
//   B[kk, c] = w[g*K/G + k, c, z, r, s]   (the filter's transpose: no flip is needed in this form).
// Grid: x = M tiles, y = C/G tiles, z = groups.
#include "common.cuh"

#define CPG (P_C / P_G)
#define KPG (P_K / P_G)
#define TAPS (P_Z * P_Y * P_X)
#define GEMM_M ((index_t)P_N * P_DI * P_HI * P_WI)
#define GEMM_N CPG
#define GEMM_K (KPG * TAPS)
#define BIG (1 << 29)

// kk -> (k, z, r, s)
__device__ __forceinline__ void split_kk(int kk, int& k, int& z, int& r, int& s)
{
    int tap;
#if KK_CLAST
    tap = kk / KPG; k = kk % KPG;
#else
    k = kk / TAPS; tap = kk % TAPS;
#endif
    s = tap % P_X; tap /= P_X;
    r = tap % P_Y; z = tap / P_Y;
}

// t = i + p - tap*d must be t = o*stride with 0 <= o < O; negative t wraps to a huge unsigned
// value whose quotient exceeds O.
template <int S, int O>
__device__ __forceinline__ bool out_pos(int t, int& o)
{
    const unsigned u = (unsigned)t;
    o = (int)(u / S);
    return u % S == 0 && u / S < (unsigned)O;
}

struct OpA  // dy
{
    struct Row { index_t base; int d0, h0, w0; };
    struct Col { index_t off; int dz, dy, dx; };
    static __device__ __forceinline__ Row row(index_t m)
    {
        Row o;
        if(m < GEMM_M)
        {
            index_t t = m;
            const int iw = (int)(t % P_WI); t /= P_WI;
            const int ih = (int)(t % P_HI); t /= P_HI;
            const int id = (int)(t % P_DI);
            const index_t n = t / P_DI;
            o.d0 = id + P_PD; o.h0 = ih + P_PH; o.w0 = iw + P_PW;
            o.base = n * YS_N;
        }
        else
        {
            o.base = 0; o.d0 = -BIG; o.h0 = -BIG; o.w0 = -BIG;
        }
        return o;
    }
    static __device__ __forceinline__ Col col(index_t kk, index_t kend)
    {
        int k, z, r, s;
        split_kk((int)kk, k, z, r, s);
        Col o;
        o.dz = z * P_DD; o.dy = r * P_DH; o.dx = s * P_DW;
        o.off = (index_t)k * YS_C;
        if(kk >= kend) o.dy = BIG;  // past the end of K: h0 - BIG is negative (or the w check fails)
        return o;
    }
    static __device__ __forceinline__ bool elem(const Row& r, const Col& c, index_t& off)
    {
        int od = 0, oh, ow;
        const bool okd = !IS3D || out_pos<P_SD, P_DO>(r.d0 - c.dz, od);
        const bool okh = out_pos<P_SH, P_HO>(r.h0 - c.dy, oh);
        const bool okw = out_pos<P_SW, P_WO>(r.w0 - c.dx, ow);
        off = r.base + c.off + (index_t)od * YS_D + (index_t)oh * YS_H + (index_t)ow * YS_W;
        return okd && okh && okw;
    }
};

struct OpB  // w, rows are input channels c
{
    struct Row { index_t base; bool ok; };
    struct Col { index_t off; bool ok; };
    static __device__ __forceinline__ Row row(index_t c)
    {
        Row o;
        o.ok = c < CPG;
        o.base = o.ok ? c * WS_C : 0;
        return o;
    }
    static __device__ __forceinline__ Col col(index_t kk, index_t kend)
    {
        int k, z, r, s;
        split_kk((int)kk, k, z, r, s);
        Col o;
        o.ok = kk < kend;
        o.off = (index_t)k * WS_K + (index_t)z * WS_Z + (index_t)r * WS_Y + (index_t)s * WS_X;
        return o;
    }
    static __device__ __forceinline__ bool elem(const Row& r, const Col& c, index_t& off)
    {
        off = r.base + c.off;
        return r.ok && c.ok;
    }
};

#include "implicit_gemm_core.cu"

struct Epi  // dx
{
    data_t* dx;
    __device__ __forceinline__ index_t row(index_t m) const
    {
        index_t t = m;
        const index_t iw = t % P_WI; t /= P_WI;
        const index_t ih = t % P_HI; t /= P_HI;
        const index_t id = t % P_DI;
        const index_t n = t / P_DI;
        return n * XS_N + id * XS_D + ih * XS_H + iw * XS_W;
    }
    __device__ __forceinline__ index_t col(index_t c) const { return c * XS_C; }
    __device__ __forceinline__ void put(index_t off, float v) const { store_acc(dx + off, v); }
    __device__ __forceinline__ void put_raw(index_t off, data_t v) const { dx[off] = v; }
};

extern "C" __global__ void __launch_bounds__(NT)
igemm_bwd(const data_t* __restrict__ dy, const data_t* __restrict__ w, data_t* __restrict__ dx)
{
    const index_t g = blockIdx.z;
    const Epi epi{dx + g * CPG * XS_C};
    igemm_block<OpA, OpB, Epi>(dy + g * KPG * YS_C, w + g * KPG * WS_K, epi, (index_t)blockIdx.x * BM,
                               (index_t)blockIdx.y * BN, 0, GEMM_K);
}
