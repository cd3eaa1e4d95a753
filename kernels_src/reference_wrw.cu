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

// Channels-first x: a block per dw element, as naive_conv_wrw, its threads splitting the output pixels with ow fastest
// (consecutive threads read consecutive dy and x elements), but a thread walks its pixels by adding its stride
// WRW_BLOCK, taken once as (n, od, oh, ow) digits, with carries, where naive_conv_wrw divides each pixel index by Wo,
// Ho and Do: each digit stays below its size after one subtraction, as both addends do.
extern "C" __global__ void reference_conv_wrw_cf(const data_t* __restrict__ dy, const data_t* __restrict__ x,
                                                 data_t* __restrict__ dw_, CONV_PARAMS)
{
    __shared__ acc_t partial[WRW_BLOCK / 32];
    const index_t cpg = C / G, kpg = K / G;
    const index_t wtotal = K * cpg * Z * Y * X;
    const index_t red = N * Do * Ho * Wo;
    index_t u = threadIdx.x;
    const index_t ow0 = u % Wo; u /= Wo;
    const index_t oh0 = u % Ho; u /= Ho;
    const index_t od0 = u % Do;
    const index_t n0 = u / Do;
    u = WRW_BLOCK;
    const index_t sow = u % Wo; u /= Wo;
    const index_t soh = u % Ho; u /= Ho;
    const index_t sod = u % Do;
    const index_t sn = u / Do;
    for(index_t e = blockIdx.x; e < wtotal; e += gridDim.x)
    {
        index_t t = e;
        const index_t s = t % X; t /= X;
        const index_t r = t % Y; t /= Y;
        const index_t z = t % Z; t /= Z;
        const index_t c = t % cpg;
        const index_t k = t / cpg;
        const data_t* xc0 = x + ((k / kpg) * cpg + c) * xc;
        const data_t* yk0 = dy + k * yc;
        acc_t acc = 0;
        index_t ow = ow0, oh = oh0, od = od0, n = n0;
        for(index_t j = threadIdx.x; j < red; j += WRW_BLOCK)
        {
            const index_t id = od * sd - pd + z * dd;
            const index_t ih = oh * sh - ph + r * dh;
            const index_t iw = ow * sw - pw + s * dw;
            if(id >= 0 && id < Di && ih >= 0 && ih < Hi && iw >= 0 && iw < Wi)
                acc += to_acc(xc0[n * xn + id * xd + ih * xh + iw * xw]) *
                       to_acc(yk0[n * yn + od * yd + oh * yh + ow * yw]);
            ow += sow;
            index_t carry = ow >= Wo;
            if(carry) ow -= Wo;
            oh += soh + carry;
            carry = oh >= Ho;
            if(carry) oh -= Ho;
            od += sod + carry;
            carry = od >= Do;
            if(carry) od -= Do;
            n += sn + carry;
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
