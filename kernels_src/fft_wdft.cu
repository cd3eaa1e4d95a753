// FFT convolution: the spectrum of the (dilated) filters on the padded LD x LH x LW grid, computed
// directly from the taps instead of through cuFFT (a filter has few taps, its padded plane many zeros).
//
//   out[(k*CG + c)*FP + (fd*LH + fh)*LW2 + fw] =
//       SCALE * sum_{q,r,s} w[k, c, q, r, s] * e^{SIGN*2*pi*i*(fd*q*DLZ/LD + fh*r*DLY/LH + fw*s*DLX/LW)}
// for fw < LW2 (the half spectrum R2C keeps), zero for the tail frequencies F..FP-1.
// SIGN = +1 gives conj(DFT(w)): the forward convolution is a cross-correlation, Y = X * conj(W).
// SIGN = -1 gives DFT(w) for backward data, a true convolution dX = dY * W.
// SCALE = 1/(LD*LH*LW) is the inverse FFT's normalization, folded in here once per filter.
//
// Separable evaluation: G[q][r][fw] = sum_s w[q,r,s] e^{..fw s..} (a chunk of FWC columns fw at a
// time, in shared memory), then each output is a sum over (q, r) of G times the (fd, fh) twiddle.
// Twiddles come from per-axis tables e^{SIGN*2*pi*i*m/L}, m < L, indexed by (f*tap*dilation) mod L.
// A block walks filter planes (k, c) with a grid-stride loop; weights are KCZYX or, with W_NHWC=1, KZYXC.
#include "common.cuh"

#ifndef W_NHWC
#define W_NHWC 0
#endif

#define NT 256
#define TAPS (FZ * FY * FX)
#define F_ (LD * LH * LW2)

__device__ __forceinline__ float2 twiddle(int m, int l)
{
    float s, c;
    sincospif((float)(2 * m) / (float)l, &s, &c);
    return make_float2(c, SIGN * s);
}

__device__ __forceinline__ float2 cmul(float2 a, float2 b)
{
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

extern "C" __global__ void __launch_bounds__(NT)
fft_wdft(const data_t* __restrict__ w, float2* __restrict__ out)
{
    __shared__ float2 twd[LD], twh[LH], tww[LW];
    __shared__ float tap[TAPS];
    __shared__ float2 gs[FZ * FY][FWC];
    const float scale = 1.f / ((float)LD * (float)LH * (float)LW);

    for(int m = threadIdx.x; m < LW; m += NT) tww[m] = twiddle(m, LW);
    for(int m = threadIdx.x; m < LH; m += NT) twh[m] = twiddle(m, LH);
    for(int m = threadIdx.x; m < LD; m += NT) twd[m] = twiddle(m, LD);

    for(int plane = blockIdx.x; plane < KK * CG; plane += gridDim.x)
    {
        const int k = plane / CG, c = plane - k * CG;
        __syncthreads();  // the previous plane is done with tap[] and gs[]
        for(int t = threadIdx.x; t < TAPS; t += NT)
        {
#if W_NHWC
            const float v = to_acc(w[((index_t)k * TAPS + t) * CG + c]);
#else
            const float v = to_acc(w[(index_t)plane * TAPS + t]);
#endif
            tap[t] = v * scale;
        }
        float2* o = out + (index_t)plane * FP;
        for(int fw0 = 0; fw0 < LW2; fw0 += FWC)
        {
            __syncthreads();  // tap[] written / the previous chunk's gs[] consumed
            for(int e = threadIdx.x; e < FZ * FY * FWC; e += NT)
            {
                const int j = e % FWC, qr = e / FWC, fw = fw0 + j;
                float2 acc = make_float2(0.f, 0.f);
                if(fw < LW2)
                {
                    const int step = (fw * DLX) % LW;
                    int m = 0;
                    for(int s = 0; s < FX; ++s)
                    {
                        const float v = tap[qr * FX + s];
                        acc.x = fmaf(v, tww[m].x, acc.x);
                        acc.y = fmaf(v, tww[m].y, acc.y);
                        m += step;
                        if(m >= LW) m -= LW;
                    }
                }
                gs[qr][j] = acc;
            }
            __syncthreads();
            for(int e = threadIdx.x; e < LD * LH * FWC; e += NT)
            {
                const int j = e % FWC, row = e / FWC, fw = fw0 + j;
                if(fw >= LW2) continue;
                const int fh = row % LH, fd = row / LH;
                const int steph = (fh * DLY) % LH, stepd = (fd * DLZ) % LD;
                float2 acc = make_float2(0.f, 0.f);
                int md = 0;
                for(int q = 0; q < FZ; ++q)
                {
                    const float2 a = twd[md];
                    int mh = 0;
                    for(int r = 0; r < FY; ++r)
                    {
                        const float2 t = FZ == 1 ? twh[mh] : cmul(a, twh[mh]);
                        const float2 gv = gs[q * FY + r][j];
                        acc.x = fmaf(t.x, gv.x, fmaf(-t.y, gv.y, acc.x));
                        acc.y = fmaf(t.x, gv.y, fmaf(t.y, gv.x, acc.y));
                        mh += steph;
                        if(mh >= LH) mh -= LH;
                    }
                    md += stepd;
                    if(md >= LD) md -= LD;
                }
                o[row * LW2 + fw] = acc;
            }
        }
        for(int f = F_ + threadIdx.x; f < FP; f += NT) o[f] = make_float2(0.f, 0.f);
    }
}
