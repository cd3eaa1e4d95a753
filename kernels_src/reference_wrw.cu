// The float64 reference's backward weights for channels-last tensors (miofind.harness.Reference of kind naive; the
// naive backward-weights solver's get_solution(reference=True) where x is NHWC or NDHWC):
//   dw[k,c,t] = sum_{n, o : i(o,t) within the input} dy[n,k,o] * x[n, group start + c, o*stride - pad + t*dil].
// A block's 32 lanes take 32 consecutive dw elements in dw's channels-last memory order (c fastest, then the taps
// x, y, z, then k), so a warp reads 32 consecutive x elements of one pixel and shares its dy reads; the block's
// warps split the output rows (n, od, oh) among them and add their partial sums in shared memory. Within a row the
// output columns whose input column lies within [0, Wi) are found once per tap (ow in [lo, hi]), so the innermost
// loop has no bounds test. naive_conv_wrw, one block per element over the whole reduction, keeps channels-first.
#include "direct_naive.cu"

#define REF_WRW_WARPS (WRW_BLOCK / 32)

extern "C" __global__ void reference_conv_wrw(const data_t* __restrict__ dy, const data_t* __restrict__ x,
                                              data_t* __restrict__ dw_, CONV_PARAMS)
{
    __shared__ acc_t partial[REF_WRW_WARPS][32];
    const index_t cpg = C / G, kpg = K / G;
    const index_t total = K * cpg * Z * Y * X;
    const index_t rows = N * Do * Ho;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for(index_t e0 = (index_t)blockIdx.x * 32; e0 < total; e0 += (index_t)gridDim.x * 32)
    {
        const index_t e = e0 + lane;
        index_t c = 0, s = 0, r = 0, z = 0, k = 0;
        acc_t acc = 0;
        if(e < total)
        {
            index_t t = e;
            c = t % cpg; t /= cpg;
            s = t % X; t /= X;
            r = t % Y; t /= Y;
            z = t % Z;
            k = t / Z;
            // input column iw = ow*sw + off lies within [0, Wi) for ow in [lo, hi]
            const index_t off = s * dw - pw;
            const index_t lo = off >= 0 ? 0 : (sw - 1 - off) / sw;
            index_t hi = Wi - 1 - off < 0 ? -1 : (Wi - 1 - off) / sw;
            if(hi > Wo - 1) hi = Wo - 1;
            const index_t xk = ((k / kpg) * cpg + c) * xc;
            for(index_t row = warp; row < rows; row += REF_WRW_WARPS)
            {
                index_t u = row;
                const index_t oh = u % Ho; u /= Ho;
                const index_t od = u % Do;
                const index_t n = u / Do;
                const index_t id = od * sd - pd + z * dd;
                const index_t ih = oh * sh - ph + r * dh;
                if(id < 0 || id >= Di || ih < 0 || ih >= Hi) continue;
                const index_t xr = xk + n * xn + id * xd + ih * xh;
                const index_t yr = k * yc + n * yn + od * yd + oh * yh;
                for(index_t ow = lo; ow <= hi; ++ow)
                    acc += to_acc(x[xr + (ow * sw + off) * xw]) * to_acc(dy[yr + ow * yw]);
            }
        }
        partial[warp][lane] = acc;
        __syncthreads();
        if(warp == 0 && e < total)
        {
            acc_t sum = 0;
            for(int i = 0; i < REF_WRW_WARPS; ++i) sum += partial[i][lane];
            store_acc(&dw_[k * wk + c * wc + z * wd + r * wh + s * ww], sum);
        }
        __syncthreads();
    }
}
