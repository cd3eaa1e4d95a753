// FFT convolution, last step: the valid region of the inverse-transformed planes into the output.
//
// The C2R output is circular: output position o of an axis of length L sits at (o + SHIFT) mod L
// (forward: SHIFT = -pad, the input was packed without its leading zeros; backward data:
// SHIFT = +pad). |SHIFT| < L and o + SHIFT < L by the choice of L, so one conditional wrap suffices:
//   out[n, c, d, h, w] = buf[(n*CH + c)*PLANE + (wrap(d + SHD)*LH + wrap(h + SHH))*ROW + wrap(w + SHW)]
// The inverse FFT's 1/(LD*LH*LW) is already folded into the weight spectrum.
// The output is NCHW/NCDHW or, with NHWC=1, NHWC/NDHWC (transposed through shared memory).
#include "common.cuh"

#ifndef NHWC
#define NHWC 0
#endif

#define ROW (2 * LW2)
#define PLANE (2 * FP)

__device__ __forceinline__ int wrap(int i, int l) { return i < 0 ? i + l : (i >= l ? i - l : i); }

__device__ __forceinline__ int buf_offset(int d, int h, int w)
{
    return (wrap(d + SHD, LD) * LH + wrap(h + SHH, LH)) * ROW + wrap(w + SHW, LW);
}

#if !NHWC
extern "C" __global__ void __launch_bounds__(256)
fft_crop(const float* __restrict__ buf, data_t* __restrict__ out)
{
    const index_t total = (index_t)NB_ * CH * OD * OH * OW;
    for(index_t e = (index_t)blockIdx.x * 256 + threadIdx.x; e < total; e += (index_t)gridDim.x * 256)
    {
        const int w = (int)(e % OW);
        index_t r = e / OW;
        const int h = (int)(r % OH);
        r /= OH;
        const int d = (int)(r % OD);
        const index_t plane = r / OD;
        store_acc(&out[e], buf[plane * PLANE + buf_offset(d, h, w)]);
    }
}
#else
// A block moves a 32 (w) x 32 (c) tile of one output row (n, d, h); block index =
// ((n*OD + d)*OH + h)*C_TILES*W_TILES + ct*W_TILES + wt.
#define C_TILES ((CH + 31) / 32)
#define W_TILES ((OW + 31) / 32)

extern "C" __global__ void __launch_bounds__(256)
fft_crop(const float* __restrict__ buf, data_t* __restrict__ out)
{
    __shared__ float t[32][33];
    int b = blockIdx.x;
    const int w0 = (b % W_TILES) * 32;
    b /= W_TILES;
    const int c0 = (b % C_TILES) * 32;
    b /= C_TILES;
    const int h = b % OH;
    b /= OH;
    const int d = b % OD, n = b / OD;
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    for(int cc = ty; cc < 32; cc += 8)
    {
        const int c = c0 + cc, w = w0 + tx;
        if(c < CH && w < OW)
            t[cc][tx] = buf[(index_t)(n * CH + c) * PLANE + buf_offset(d, h, w)];
    }
    __syncthreads();
    for(int ww = ty; ww < 32; ww += 8)
    {
        const int w = w0 + ww, c = c0 + tx;
        if(c < CH && w < OW)
            store_acc(&out[((((index_t)n * OD + d) * OH + h) * OW + w) * CH + c], t[tx][ww]);
    }
}
#endif
