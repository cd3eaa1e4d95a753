// FFT convolution, step 1: activations into zero-padded real planes for cuFFT's in-place R2C.
//
// One plane per (n, channel), 2*FP floats each: rows of ROW = 2*LW2 floats (the in-place R2C
// layout, LW2 = LW/2 + 1 complex values per row), LD*LH rows, then 2*(FP - LD*LH*LW2) floats of
// tail that stay zero (the MAC kernel reads them as the padding frequencies F..FP-1):
//   buf[(n*CH + c)*PLANE + (d*LH + h)*ROW + w] = src[n, c, d, h, w] if d < SD, h < SH, w < SW, else 0.
// The source is NCHW/NCDHW or, with NHWC=1, NHWC/NDHWC (transposed through shared memory).
#include "common.cuh"

#ifndef NHWC
#define NHWC 0
#endif

#define ROW (2 * LW2)
#define PLANE (2 * FP)
#define ROWS (LD * LH)

#if !NHWC
// One thread per float2 of the buffer (ROW is even, so a float2 never straddles a row).
extern "C" __global__ void __launch_bounds__(256)
fft_pack(const data_t* __restrict__ src, float* __restrict__ buf)
{
    const int total = NB_ * CH * FP;
    for(int e = blockIdx.x * 256 + threadIdx.x; e < total; e += gridDim.x * 256)
    {
        const int plane = e / FP, r = e - plane * FP;
        const int row = r / LW2, w = 2 * (r - row * LW2);
        const int d = row / LH, h = row - d * LH;
        float2 v = make_float2(0.f, 0.f);
        if(d < SD && h < SH)  // tail rows have d >= LD >= SD
        {
            const data_t* s = src + (((index_t)plane * SD + d) * SH + h) * SW;
            if(w < SW) v.x = to_acc(s[w]);
            if(w + 1 < SW) v.y = to_acc(s[w + 1]);
        }
        reinterpret_cast<float2*>(buf)[e] = v;
    }
}
#else
// A block moves a 32 (w) x 32 (c) tile of one buffer row; block index = ((n*C_TILES + ct)*(ROWS + 1)
// + row)*W_TILES + wt, where row == ROWS zero-fills the plane tails.
#define C_TILES ((CH + 31) / 32)
#define W_TILES ((ROW + 31) / 32)
#define TAIL (PLANE - ROWS * ROW)

extern "C" __global__ void __launch_bounds__(256)
fft_pack(const data_t* __restrict__ src, float* __restrict__ buf)
{
    __shared__ float t[32][33];
    int b = blockIdx.x;
    const int wt = b % W_TILES;
    b /= W_TILES;
    const int row = b % (ROWS + 1);
    b /= ROWS + 1;
    const int c0 = (b % C_TILES) * 32, n = b / C_TILES;
    const int w0 = wt * 32, tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    if(row == ROWS)
    {
        for(int cc = ty; cc < 32; cc += 8)
            if(c0 + cc < CH)
                for(int w = w0 + tx; w < TAIL; w += W_TILES * 32)
                    buf[(index_t)(n * CH + c0 + cc) * PLANE + ROWS * ROW + w] = 0.f;
        return;
    }
    const int d = row / LH, h = row - d * LH;
    const bool live = d < SD && h < SH;
    for(int ww = ty; ww < 32; ww += 8)
    {
        const int w = w0 + ww, c = c0 + tx;
        float v = 0.f;
        if(live && w < SW && c < CH)
            v = to_acc(src[((((index_t)n * SD + d) * SH + h) * SW + w) * CH + c]);
        t[tx][ww] = v;
    }
    __syncthreads();
    for(int cc = ty; cc < 32; cc += 8)
    {
        const int c = c0 + cc, w = w0 + tx;
        if(c < CH && w < ROW)
            buf[(index_t)(n * CH + c) * PLANE + row * ROW + w] = t[cc][tx];
    }
}
#endif
