// The float64 reference's backward data (miofind.harness.Reference of kind naive; the naive backward-data solver's
// get_solution(reference=True)): naive_conv_bwd's sum with the filter taps outermost. A tap t = (z, r, s) reaches
// dx[n, c, i] through dy[n, k, o] with o = (i + p - t*d) / stride where that is whole and within the output, so a
// tap's test (three divisions by the stride) depends on (i, t) alone: here it is made once per tap, then the tap's
// K/G products run as one loop, where naive_conv_bwd makes it once per (k, t). The sum is
//   dx[n,c,i] = sum_{valid t} sum_{k in c's group} dy[n,k,o(i,t)] * w[k, c - group start, t],
// taken tap by tap, output channel by output channel within each.
#include "direct_naive.cu"

extern "C" __global__ void reference_conv_bwd(const data_t* __restrict__ dy, const data_t* __restrict__ w,
                                              data_t* __restrict__ dx, CONV_PARAMS)
{
    const index_t total = N * C * Di * Hi * Wi;
    const index_t cpg = C / G, kpg = K / G;
    for(index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
        i += (index_t)gridDim.x * blockDim.x)
    {
        // element i of dx in its memory order: channels-last (xc == 1) has c fastest, so a warp's threads read
        // consecutive weights (wc == 1 there too), share their dy reads and store consecutive dx elements
        index_t t = i, iw, ih, id, c, n;
        if(xc == 1 && C > 1)
        {
            c = t % C; t /= C;
            iw = t % Wi; t /= Wi;
            ih = t % Hi; t /= Hi;
            id = t % Di;
            n = t / Di;
        }
        else
        {
            iw = t % Wi; t /= Wi;
            ih = t % Hi; t /= Hi;
            id = t % Di; t /= Di;
            c = t % C;
            n = t / C;
        }
        const index_t k0 = (c / cpg) * kpg, cg = c % cpg;
        const data_t* dyn = dy + n * yn + k0 * yc;
        const data_t* wc0 = w + k0 * wk + cg * wc;
        acc_t acc = 0;
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
                    const data_t* dyp = dyn + od * yd + oh * yh + ow * yw;
                    const data_t* wp = wc0 + z * wd + r * wh + s * ww;
                    for(index_t kk = 0; kk < kpg; ++kk)
                        acc += to_acc(dyp[kk * yc]) * to_acc(wp[kk * wk]);
                }
            }
        }
        store_acc(&dx[n * xn + c * xc + id * xd + ih * xh + iw * xw], acc);
    }
}
