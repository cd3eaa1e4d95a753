// Naive direct convolution, forward / backward-data / backward-weights: the GPU reference.
//
// Every layout is handled through explicit element strides (n, c, d, h, w) per tensor, so one
// build serves NCHW, NHWC, NCDHW, NDHWC and mixed layouts; 2D problems run with D = Z = 1.
// Weights are indexed (k, c-within-group, z, y, x). index_t is int or 64-bit (INDEX_T) as the
// tensors' element counts require. Accumulation is in acc_t (float, or double for the float64
// reference build).
#include "common.cuh"

#ifndef WRW_BLOCK
#define WRW_BLOCK 256
#endif

#define CONV_PARAMS                                                                        \
    index_t N, index_t C, index_t K, index_t G,                                            \
    index_t Di, index_t Hi, index_t Wi, index_t Do, index_t Ho, index_t Wo,                \
    index_t Z, index_t Y, index_t X,                                                       \
    index_t pd, index_t ph, index_t pw, index_t sd, index_t sh, index_t sw,                \
    index_t dd, index_t dh, index_t dw,                                                    \
    index_t xn, index_t xc, index_t xd, index_t xh, index_t xw,                            \
    index_t wk, index_t wc, index_t wd, index_t wh, index_t ww,                            \
    index_t yn, index_t yc, index_t yd, index_t yh, index_t yw

// y[n,k,od,oh,ow] = sum_{c in group, z, r, s} x[n, g*C/G + c, od*sd - pd + z*dd, ...] * w[k, c, z, r, s]
extern "C" __global__ void naive_conv_fwd(const data_t* __restrict__ x, const data_t* __restrict__ w,
                                          data_t* __restrict__ y, CONV_PARAMS)
{
    const index_t total = N * K * Do * Ho * Wo;
    const index_t cpg = C / G, kpg = K / G;
    for(index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
        i += (index_t)gridDim.x * blockDim.x)
    {
        index_t t = i;
        const index_t ow = t % Wo; t /= Wo;
        const index_t oh = t % Ho; t /= Ho;
        const index_t od = t % Do; t /= Do;
        const index_t k = t % K;
        const index_t n = t / K;
        const index_t c0 = (k / kpg) * cpg;
        acc_t acc = 0;
        for(index_t c = 0; c < cpg; ++c)
            for(index_t z = 0; z < Z; ++z)
            {
                const index_t id = od * sd - pd + z * dd;
                if(id < 0 || id >= Di) continue;
                for(index_t r = 0; r < Y; ++r)
                {
                    const index_t ih = oh * sh - ph + r * dh;
                    if(ih < 0 || ih >= Hi) continue;
                    for(index_t s = 0; s < X; ++s)
                    {
                        const index_t iw = ow * sw - pw + s * dw;
                        if(iw < 0 || iw >= Wi) continue;
                        acc += to_acc(x[n * xn + (c0 + c) * xc + id * xd + ih * xh + iw * xw]) *
                               to_acc(w[k * wk + c * wc + z * wd + r * wh + s * ww]);
                    }
                }
            }
        store_acc(&y[n * yn + k * yc + od * yd + oh * yh + ow * yw], acc);
    }
}

// dx[n,c,id,ih,iw] = sum over k in c's group and filter taps (z,r,s) with
// od = (id + pd - z*dd) / sd exact and in range: dy[n,k,od,oh,ow] * w[k, c mod C/G, z, r, s]
extern "C" __global__ void naive_conv_bwd(const data_t* __restrict__ dy, const data_t* __restrict__ w,
                                          data_t* __restrict__ dx, CONV_PARAMS)
{
    const index_t total = N * C * Di * Hi * Wi;
    const index_t cpg = C / G, kpg = K / G;
    for(index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
        i += (index_t)gridDim.x * blockDim.x)
    {
        index_t t = i;
        const index_t iw = t % Wi; t /= Wi;
        const index_t ih = t % Hi; t /= Hi;
        const index_t id = t % Di; t /= Di;
        const index_t c = t % C;
        const index_t n = t / C;
        const index_t k0 = (c / cpg) * kpg, cg = c % cpg;
        acc_t acc = 0;
        for(index_t kk = 0; kk < kpg; ++kk)
            for(index_t z = 0; z < Z; ++z)
            {
                const index_t td = id + pd - z * dd;
                if(td < 0 || td % sd) continue;
                const index_t od = td / sd;
                if(od >= Do) continue;
                for(index_t r = 0; r < Y; ++r)
                {
                    const index_t th = ih + ph - r * dh;
                    if(th < 0 || th % sh) continue;
                    const index_t oh = th / sh;
                    if(oh >= Ho) continue;
                    for(index_t s = 0; s < X; ++s)
                    {
                        const index_t tw = iw + pw - s * dw;
                        if(tw < 0 || tw % sw) continue;
                        const index_t ow = tw / sw;
                        if(ow >= Wo) continue;
                        const index_t k = k0 + kk;
                        acc += to_acc(dy[n * yn + k * yc + od * yd + oh * yh + ow * yw]) *
                               to_acc(w[k * wk + cg * wc + z * wd + r * wh + s * ww]);
                    }
                }
            }
        store_acc(&dx[n * xn + c * xc + id * xd + ih * xh + iw * xw], acc);
    }
}

// dw[k,c,z,r,s] = sum_{n,od,oh,ow} x[n, g*C/G + c, od*sd - pd + z*dd, ...] * dy[n,k,od,oh,ow].
// One block per weight element; the block's threads split the N*Do*Ho*Wo sum and reduce it in a
// fixed order (warp shuffles, then shared memory), so the result is deterministic: no atomics.
extern "C" __global__ void __launch_bounds__(WRW_BLOCK)
naive_conv_wrw(const data_t* __restrict__ dy, const data_t* __restrict__ x, data_t* __restrict__ dw_,
               CONV_PARAMS)
{
    __shared__ acc_t partial[WRW_BLOCK / 32];
    const index_t cpg = C / G, kpg = K / G;
    const index_t wtotal = K * cpg * Z * Y * X;
    const index_t red = N * Do * Ho * Wo;
    for(index_t e = blockIdx.x; e < wtotal; e += gridDim.x)
    {
        index_t t = e;
        const index_t s = t % X; t /= X;
        const index_t r = t % Y; t /= Y;
        const index_t z = t % Z; t /= Z;
        const index_t c = t % cpg;
        const index_t k = t / cpg;
        const index_t cx = (k / kpg) * cpg + c;
        acc_t acc = 0;
        for(index_t j = threadIdx.x; j < red; j += WRW_BLOCK)
        {
            index_t u = j;
            const index_t ow = u % Wo; u /= Wo;
            const index_t oh = u % Ho; u /= Ho;
            const index_t od = u % Do;
            const index_t n = u / Do;
            const index_t id = od * sd - pd + z * dd;
            const index_t ih = oh * sh - ph + r * dh;
            const index_t iw = ow * sw - pw + s * dw;
            if(id < 0 || id >= Di || ih < 0 || ih >= Hi || iw < 0 || iw >= Wi) continue;
            acc += to_acc(x[n * xn + cx * xc + id * xd + ih * xh + iw * xw]) *
                   to_acc(dy[n * yn + k * yc + od * yd + oh * yh + ow * yw]);
        }
        for(int off = 16; off > 0; off >>= 1)
            acc += __shfl_down_sync(0xffffffffu, acc, off);
        if((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = acc;
        __syncthreads();
        if(threadIdx.x == 0)
        {
            acc_t sum = 0;
            for(int i = 0; i < WRW_BLOCK / 32; ++i) sum += partial[i];
            store_acc(&dw_[k * wk + c * wc + z * wd + r * wh + s * ww], sum);
        }
        __syncthreads();
    }
}
