// im2col / col2im and the layout helpers of the im2col + GEMM solvers (Caffe2's design).
//
// Problem sizes are macros (2D problems run with DI = DO = Z_ = 1); the batch chunk nb is a
// run-time argument. A generic build (miofind/generic.py) reads the sizes but the depth axis's at
// run time, and defines the derived sizes below (#ifndef) as precomputed values with fast-division
// magic numbers: every index split divides by a named size. Every kernel is a grid-stride loop
// over its OUTPUT in memory order, so stores are coalesced; im2col moves raw bit patterns (elem_t)
// and needs no type conversion.
//
// Column layouts (T_ = Z_*Y_*X_ filter taps, P_ output pixels, tap = (z*Y_ + y)*X_ + x):
//   NCHW, per image ("A"):   col[n][c][tap][p]     row c*T_+tap of image n's (C*T) x P matrix
//   NCHW, concatenated ("B", COL_CONCAT=1): col[c][tap][n][p], the chunk's images side by side,
//                            a (C*T) x (nb*P) matrix (backward weights)
//   NHWC:                    col[n][p][g][tap][cg], an (nb*P) x (C*T) matrix whose group-g block of
//                            T*C/G columns matches the K x filter x C/G weight rows of group g
// Output pixel p = (od*HO + oh)*WO + ow reads input (od*SD - PD + z*DD, oh*SH - PH + y*DH,
// ow*SW - PW + x*DW), or zero outside the input.
#include "common.cuh"

#ifndef ELEM_BYTES
#define ELEM_BYTES 4
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef CHANNELS_LAST
#define CHANNELS_LAST 0
#endif
#ifndef COL_CONCAT
#define COL_CONCAT 0
#endif

#ifndef CPG
#define CPG (C_ / G_)
#endif
#ifndef T_
#define T_ (Z_ * Y_ * X_)
#endif
#ifndef Q_
#define Q_ (DI * HI * WI)
#endif
#ifndef P_
#define P_ (DO * HO * WO)
#endif
#ifndef PV_
#define PV_ (P_ / VEC)    // VEC-pixel vectors per column row (NCHW)
#endif
#ifndef CV_
#define CV_ (CPG / VEC)   // VEC-channel vectors per (pixel, group, tap) (NHWC)
#endif
#ifndef CT_
#define CT_ (C_ * T_)
#endif
#ifndef XY_
#define XY_ (X_ * Y_)
#endif
#ifndef HWO_
#define HWO_ (WO * HO)
#endif
#ifndef HWI_
#define HWI_ (WI * HI)
#endif
#define WSZ ((index_t)K_ * (CPG * T_))

#if ELEM_BYTES == 4
typedef unsigned int elem_t;
#else
typedef unsigned short elem_t;
#endif

template <int N>
struct __align__(N * ELEM_BYTES) vec_t
{
    elem_t v[N];
};
typedef vec_t<VEC> vec_type;

#define GRID_LOOP(i, total)                                                                        \
    for(index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < (total);                  \
        i += (index_t)gridDim.x * blockDim.x)

#if !CHANNELS_LAST

// im2col, NCHW / NCDHW: thread i writes VEC consecutive pixels of one column row.
extern "C" __global__ void __launch_bounds__(256)
im2col_nchw(const elem_t* __restrict__ x, elem_t* __restrict__ col, int nb)
{
    const index_t total = (index_t)nb * CT_ * PV_;
    GRID_LOOP(i, total)
    {
        const int pv = (int)(i % PV_);
        const index_t r = i / PV_;
#if COL_CONCAT
        const index_t n = r % nb;
        const int row = (int)(r / nb);
#else
        const int row = (int)(r % CT_);
        const index_t n = r / CT_;
#endif
        const int c = row / T_, tap = row % T_;
        const int fx = tap % X_, fy = (tap / X_) % Y_, fz = tap / XY_;
        const elem_t* xc = x + (n * C_ + c) * (index_t)Q_;
        vec_type o;
#pragma unroll
        for(int j = 0; j < VEC; ++j)
        {
            const int p = pv * VEC + j;
            const int ow = p % WO, oh = (p / WO) % HO, od = p / HWO_;
            const int id = od * SD - PD + fz * DD;
            const int ih = oh * SH - PH + fy * DH;
            const int iw = ow * SW - PW + fx * DW;
            o.v[j] = ((unsigned)id < (unsigned)DI && (unsigned)ih < (unsigned)HI && (unsigned)iw < (unsigned)WI)
                         ? xc[(id * HI + ih) * WI + iw]
                         : (elem_t)0;
        }
        reinterpret_cast<vec_type*>(col)[i] = o;
    }
}

// col2im (gather), NCHW: dx[n][c][q] = sum (in float) of the column entries [n][c][tap][p] that
// read input pixel q. Tap (z, y, x) reaches output od iff
// id + PD - z*DD = od*SD with 0 <= od < DO (likewise h, w); no atomics, fixed summation order.
extern "C" __global__ void __launch_bounds__(256)
col2im_nchw(const data_t* __restrict__ dcol, data_t* __restrict__ dx, int nb)
{
    const index_t total = (index_t)nb * C_ * Q_;
    GRID_LOOP(i, total)
    {
        const int iw = (int)(i % WI);
        const int ih = (int)((i / WI) % HI);
        const int id = (int)((i / HWI_) % DI);
        const index_t nc = i / Q_;
        const data_t* base = dcol + nc * ((index_t)T_ * P_);
        float acc = 0.f;
#pragma unroll
        for(int fz = 0; fz < Z_; ++fz)
        {
            const int td = id + PD - fz * DD;
            if(td < 0 || td % SD != 0 || td / SD >= DO) continue;
            const int od = td / SD;
#pragma unroll
            for(int fy = 0; fy < Y_; ++fy)
            {
                const int th = ih + PH - fy * DH;
                if(th < 0 || th % SH != 0 || th / SH >= HO) continue;
                const int oh = th / SH;
#pragma unroll
                for(int fx = 0; fx < X_; ++fx)
                {
                    const int tw = iw + PW - fx * DW;
                    if(tw < 0 || tw % SW != 0 || tw / SW >= WO) continue;
                    const int ow = tw / SW;
                    acc += to_acc(base[(index_t)((fz * Y_ + fy) * X_ + fx) * P_ + (od * HO + oh) * WO + ow]);
                }
            }
        }
        store_acc(&dx[i], acc);
    }
}

// dy [nb][K][P] -> dyT [K][nb][P] (concatenated backward weights): rows of P copied whole.
// vec_load = 0 when the source is not VEC-aligned (a caller's view): then loads go one by one.
extern "C" __global__ void __launch_bounds__(256)
nkp_to_knp(const elem_t* __restrict__ src, elem_t* __restrict__ dst, int nb, int vec_load)
{
    const index_t total = (index_t)nb * K_ * PV_;
    GRID_LOOP(i, total)
    {
        const int pv = (int)(i % PV_);
        const index_t r = i / PV_;
        const index_t n = r % nb, k = r / nb;
        const index_t s = (n * K_ + k) * PV_ + pv;
        vec_type o;
        if(vec_load)
            o = reinterpret_cast<const vec_type*>(src)[s];
        else
        {
#pragma unroll
            for(int j = 0; j < VEC; ++j) o.v[j] = src[s * VEC + j];
        }
        reinterpret_cast<vec_type*>(dst)[i] = o;
    }
}

#else  // CHANNELS_LAST

// im2col, NHWC / NDHWC: thread i moves VEC consecutive channels of one (pixel, group, tap).
extern "C" __global__ void __launch_bounds__(256)
im2col_nhwc(const elem_t* __restrict__ x, elem_t* __restrict__ col, int nb, int vec_load)
{
    const index_t total = (index_t)nb * P_ * (G_ * T_ * CV_);
    GRID_LOOP(i, total)
    {
        const int cv = (int)(i % CV_);
        index_t r = i / CV_;
        const int tap = (int)(r % T_);
        r /= T_;
        const int g = (int)(r % G_);
        r /= G_;
        const int p = (int)(r % P_);
        const index_t n = r / P_;
        const int fx = tap % X_, fy = (tap / X_) % Y_, fz = tap / XY_;
        const int ow = p % WO, oh = (p / WO) % HO, od = p / HWO_;
        const int id = od * SD - PD + fz * DD;
        const int ih = oh * SH - PH + fy * DH;
        const int iw = ow * SW - PW + fx * DW;
        vec_type o;
        if((unsigned)id < (unsigned)DI && (unsigned)ih < (unsigned)HI && (unsigned)iw < (unsigned)WI)
        {
            const index_t s = (((n * DI + id) * HI + ih) * WI + iw) * C_ + g * CPG + cv * VEC;
            if(vec_load)
                o = *reinterpret_cast<const vec_type*>(x + s);
            else
            {
#pragma unroll
                for(int j = 0; j < VEC; ++j) o.v[j] = x[s + j];
            }
        }
        else
        {
#pragma unroll
            for(int j = 0; j < VEC; ++j) o.v[j] = 0;
        }
        reinterpret_cast<vec_type*>(col)[i] = o;
    }
}

// col2im (gather), NHWC: dx[n][q][c] sums (in float) columns [n][p][g][tap][cg] over the taps
// that read pixel q (same tap condition as col2im_nchw).
extern "C" __global__ void __launch_bounds__(256)
col2im_nhwc(const data_t* __restrict__ dcol, data_t* __restrict__ dx, int nb)
{
    const index_t total = (index_t)nb * Q_ * C_;
    GRID_LOOP(i, total)
    {
        const int c = (int)(i % C_);
        const index_t pix = i / C_;
        const int iw = (int)(pix % WI);
        const int ih = (int)((pix / WI) % HI);
        const int id = (int)((pix / HWI_) % DI);
        const index_t n = pix / Q_;
        const int g = c / CPG, cg = c % CPG;
        const data_t* base = dcol + n * P_ * ((index_t)C_ * T_) + g * (T_ * CPG) + cg;
        float acc = 0.f;
#pragma unroll
        for(int fz = 0; fz < Z_; ++fz)
        {
            const int td = id + PD - fz * DD;
            if(td < 0 || td % SD != 0 || td / SD >= DO) continue;
            const int od = td / SD;
#pragma unroll
            for(int fy = 0; fy < Y_; ++fy)
            {
                const int th = ih + PH - fy * DH;
                if(th < 0 || th % SH != 0 || th / SH >= HO) continue;
                const int oh = th / SH;
#pragma unroll
                for(int fx = 0; fx < X_; ++fx)
                {
                    const int tw = iw + PW - fx * DW;
                    if(tw < 0 || tw % SW != 0 || tw / SW >= WO) continue;
                    const int ow = tw / SW;
                    acc += to_acc(base[(index_t)((od * HO + oh) * WO + ow) * (C_ * T_) + ((fz * Y_ + fy) * X_ + fx) * CPG]);
                }
            }
        }
        store_acc(&dx[i], acc);
    }
}

#endif  // CHANNELS_LAST

// Backward weights from per-image partial products part[n][K*C/G*T] (float): out = acc + sum over
// the chunk's images in order (deterministic). first: start from zero; last: store the result in
// the output type, else keep it in the float accumulator (acc may alias out for FP32).
extern "C" __global__ void __launch_bounds__(256)
wrw_reduce(const float* __restrict__ part, float* acc, data_t* out, int nb, int first, int last)
{
    GRID_LOOP(i, WSZ)
    {
        float v = first ? 0.f : acc[i];
        for(int n = 0; n < nb; ++n) v += part[n * WSZ + i];
        if(last)
            store_acc(&out[i], v);
        else
            acc[i] = v;
    }
}

// The float accumulator of a chunked 16-bit backward-weights pass, rounded into the output type.
extern "C" __global__ void __launch_bounds__(256)
f32_to_data(const float* __restrict__ src, data_t* __restrict__ dst)
{
    GRID_LOOP(i, WSZ) store_acc(&dst[i], src[i]);
}
