// The float64 reference's forward (miofind.harness.Reference of kind naive; the naive forward solver's
// get_solution(reference=True)): naive_conv_fwd's sum with the filter taps outermost, so a tap's input position and
// bounds test are made once per tap rather than once per (tap, input channel), and its C/G products run as one loop:
//   y[n,k,o] = sum_{t in range} sum_{c in k's group} x[n, c, o*stride - pad + t*dil] * w[k, c - group start, t].
// Element i of y is decoded in y's memory order: channels-last (yc == 1) has k fastest, so a warp's threads share
// their x reads and store consecutive y elements.
#include "direct_naive.cu"

#define TAP_PARAMS                                                                                             \
    index_t Di, index_t Hi, index_t Wi, index_t Z, index_t Y, index_t X, index_t pd, index_t ph, index_t pw,    \
    index_t sd, index_t sh, index_t sw, index_t dd, index_t dh, index_t dw,                                     \
    index_t xc, index_t xd, index_t xh, index_t xw, index_t wc, index_t wd, index_t wh, index_t ww
#define TAP_ARGS Di, Hi, Wi, Z, Y, X, pd, ph, pw, sd, sh, sw, dd, dh, dw, xc, xd, xh, xw, wc, wd, wh, ww

// sum over the taps (z, r, s) whose input position lies within the input, of the group's channels c = c_first,
// c_first + c_step, ... < cpg: x at xn0 (image n, the group's first channel), w at wk0 (filter k)
__device__ __forceinline__ acc_t tap_sum(const data_t* __restrict__ xn0, const data_t* __restrict__ wk0, index_t od,
                                         index_t oh, index_t ow, index_t c_first, index_t c_step, index_t cpg,
                                         TAP_PARAMS)
{
    acc_t acc = 0;
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
                const data_t* xp = xn0 + id * xd + ih * xh + iw * xw;
                const data_t* wp = wk0 + z * wd + r * wh + s * ww;
                for(index_t c = c_first; c < cpg; c += c_step)
                    acc += to_acc(xp[c * xc]) * to_acc(wp[c * wc]);
            }
        }
    }
    return acc;
}

extern "C" __global__ void reference_conv_fwd(const data_t* __restrict__ x, const data_t* __restrict__ w,
                                              data_t* __restrict__ y, CONV_PARAMS)
{
    const index_t total = N * K * Do * Ho * Wo;
    const index_t cpg = C / G, kpg = K / G;
    for(index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
        i += (index_t)gridDim.x * blockDim.x)
    {
        index_t t = i, ow, oh, od, k, n;
        if(yc == 1 && K > 1)
        {
            k = t % K; t /= K;
            ow = t % Wo; t /= Wo;
            oh = t % Ho; t /= Ho;
            od = t % Do;
            n = t / Do;
        }
        else
        {
            ow = t % Wo; t /= Wo;
            oh = t % Ho; t /= Ho;
            od = t % Do; t /= Do;
            k = t % K;
            n = t / K;
        }
        const data_t* xn0 = x + n * xn + (k / kpg) * cpg * xc;
        const data_t* wk0 = w + k * wk;
        acc_t acc = tap_sum(xn0, wk0, od, oh, ow, 0, 1, cpg, TAP_ARGS);
        store_acc(&y[n * yn + k * yc + od * yd + oh * yh + ow * yw], acc);
    }
}

// Channels-last x and w with at least REFERENCE_FWD_WARP_CPG channels a group (the naive solver's
// get_solution(reference=True) chooses): a warp per y element, taken in y's memory order (k fastest), its lanes
// splitting the group's channels, which lie contiguously in both x and w, so that each of a warp's loads is one run;
// the lanes' sums are added by shuffles. Here a thread per element would read w at C*R*S apart from its neighbour's.
extern "C" __global__ void reference_conv_fwd_warp(const data_t* __restrict__ x, const data_t* __restrict__ w,
                                                   data_t* __restrict__ y, CONV_PARAMS)
{
    const index_t total = N * K * Do * Ho * Wo;
    const index_t cpg = C / G, kpg = K / G;
    const int lane = threadIdx.x & 31;
    const index_t warps = ((index_t)gridDim.x * blockDim.x) >> 5;
    for(index_t i = ((index_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < total; i += warps)
    {
        index_t t = i;
        const index_t k = t % K; t /= K;
        const index_t ow = t % Wo; t /= Wo;
        const index_t oh = t % Ho; t /= Ho;
        const index_t od = t % Do;
        const index_t n = t / Do;
        const data_t* xn0 = x + n * xn + (k / kpg) * cpg * xc;
        const data_t* wk0 = w + k * wk;
        acc_t acc = tap_sum(xn0, wk0, od, oh, ow, lane, 32, cpg, TAP_ARGS);
        for(int off = 16; off > 0; off >>= 1)
            acc += __shfl_down_sync(0xffffffffu, acc, off);
        if(lane == 0)
            store_acc(&y[n * yn + k * yc + od * yd + oh * yh + ow * yw], acc);
    }
}
