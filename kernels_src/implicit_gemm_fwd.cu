// Implicit-GEMM convolution, forward (engine in implicit_gemm_core.cu).
//
// Per group g: y[m, k] = sum_kk A[m, kk] * B[kk, k] with
//   m  = (n, od, oh, ow)          M = N*Do*Ho*Wo output pixels,
//   kk = (c, z, r, s)             K = C/G*Z*Y*X, ordered c-minor ((z, r, s), c) when KK_CLAST
//                                 (channels-last x, so that a run of kk is a run of channels),
//   A[m, kk] = x[n, g*C/G + c, od*sd - pd + z*dd, oh*sh - ph + r*dh, ow*sw - pw + s*dw] (0 outside),
//   B[kk, k] = w[g*K/G + k, c, z, r, s].
// The x offset splits into a row part (n, od*sd - pd, ...) and a column part (c, z*dd, ...),
// and so does its bounds check: row part + column part in [0, Di) etc.
// Tensor strides are element strides of each tensor's layout (XS_*, WS_*, YS_*); 2D has D = Z = 1.
// Grid: x = M tiles, y = K/G tiles, z = groups.
#include "common.cuh"

#define CPG (P_C / P_G)
#define KPG (P_K / P_G)
#define TAPS (P_Z * P_Y * P_X)
#define GEMM_M ((index_t)P_N * P_DO * P_HO * P_WO)
#define GEMM_N KPG
#define GEMM_K (CPG * TAPS)
#define BIG (1 << 29)

// kk -> (c, z, r, s)
__device__ __forceinline__ void split_kk(int kk, int& c, int& z, int& r, int& s)
{
    int tap;
#if KK_CLAST
    tap = kk / CPG; c = kk % CPG;
#else
    c = kk / TAPS; tap = kk % TAPS;
#endif
    s = tap % P_X; tap /= P_X;
    r = tap % P_Y; z = tap / P_Y;
}

struct OpA  // x
{
    struct Row { index_t base; int d0, h0, w0; };
    struct Col { index_t off; int dz, dy, dx; };
    static __device__ __forceinline__ Row row(index_t m)
    {
        Row o;
        if(m < GEMM_M)
        {
            index_t t = m;
            const int ow = (int)(t % P_WO); t /= P_WO;
            const int oh = (int)(t % P_HO); t /= P_HO;
            const int od = (int)(t % P_DO);
            const index_t n = t / P_DO;
            o.d0 = od * P_SD - P_PD; o.h0 = oh * P_SH - P_PH; o.w0 = ow * P_SW - P_PW;
            o.base = n * XS_N + (index_t)o.d0 * XS_D + (index_t)o.h0 * XS_H + (index_t)o.w0 * XS_W;
        }
        else
        {
            o.base = 0; o.d0 = -BIG; o.h0 = -BIG; o.w0 = -BIG;
        }
        return o;
    }
    static __device__ __forceinline__ Col col(index_t kk, index_t kend)
    {
        int c, z, r, s;
        split_kk((int)kk, c, z, r, s);
        Col o;
        o.dz = z * P_DD; o.dy = r * P_DH; o.dx = s * P_DW;
        o.off = (index_t)c * XS_C + (index_t)o.dz * XS_D + (index_t)o.dy * XS_H + (index_t)o.dx * XS_W;
        if(kk >= kend) o.dy = BIG;  // past the end of K: fails the h check (or the w check of an invalid row)
        return o;
    }
    static __device__ __forceinline__ bool elem(const Row& r, const Col& c, index_t& off)
    {
        off = r.base + c.off;
        return (!IS3D || (unsigned)(r.d0 + c.dz) < (unsigned)P_DI) && (unsigned)(r.h0 + c.dy) < (unsigned)P_HI &&
               (unsigned)(r.w0 + c.dx) < (unsigned)P_WI;
    }
};

struct OpB  // w
{
    struct Row { index_t base; bool ok; };
    struct Col { index_t off; bool ok; };
    static __device__ __forceinline__ Row row(index_t k)
    {
        Row o;
        o.ok = k < KPG;
        o.base = o.ok ? k * WS_K : 0;
        return o;
    }
    static __device__ __forceinline__ Col col(index_t kk, index_t kend)
    {
        Col o;
        o.ok = kk < kend;
#if W_MATCH  // w stores (c, z, r, s) of a k contiguously in kk order
        o.off = kk;
#else
        int c, z, r, s;
        split_kk((int)kk, c, z, r, s);
        o.off = (index_t)c * WS_C + (index_t)z * WS_Z + (index_t)r * WS_Y + (index_t)s * WS_X;
#endif
        return o;
    }
    static __device__ __forceinline__ bool elem(const Row& r, const Col& c, index_t& off)
    {
        off = r.base + c.off;
        return r.ok && c.ok;
    }
};

#include "implicit_gemm_core.cu"

struct Epi  // y
{
    data_t* y;
    __device__ __forceinline__ index_t row(index_t m) const
    {
        index_t t = m;
        const index_t ow = t % P_WO; t /= P_WO;
        const index_t oh = t % P_HO; t /= P_HO;
        const index_t od = t % P_DO;
        const index_t n = t / P_DO;
        return n * YS_N + od * YS_D + oh * YS_H + ow * YS_W;
    }
    __device__ __forceinline__ index_t col(index_t k) const { return k * YS_C; }
    __device__ __forceinline__ void put(index_t off, float v) const { store_acc(y + off, v); }
    __device__ __forceinline__ void put_raw(index_t off, data_t v) const { y[off] = v; }
};

extern "C" __global__ void __launch_bounds__(NT)
igemm_fwd(const data_t* __restrict__ x, const data_t* __restrict__ w, data_t* __restrict__ y)
{
    const index_t g = blockIdx.z;
    const Epi epi{y + g * KPG * YS_C};
    igemm_block<OpA, OpB, Epi>(x + g * CPG * XS_C, w + g * KPG * WS_K, epi, (index_t)blockIdx.x * BM,
                               (index_t)blockIdx.y * BN, 0, GEMM_K);
}
