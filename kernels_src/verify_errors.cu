// One pass of verification (miofind.verify.errors_of): an output in its storage type against its
// float64 reference. With e = out - ref over the block's grid-stride share of the n elements,
//   part[4b .. 4b+3] = (sum e^2, max|e|, sum ref^2, max|ref|)
// reduced in a fixed order (warp shuffles, then one thread over the warps' partials), so the result
// is deterministic. A NaN output element (poison left unwritten) makes sum e^2 NaN; fmax ignores
// NaN, so the maxima stay those of the finite elements.
#include "common.cuh"

#ifndef ERR_BLOCK
#define ERR_BLOCK 256
#endif

extern "C" __global__ void __launch_bounds__(ERR_BLOCK)
output_errors(const data_t* __restrict__ out, const double* __restrict__ ref, long long n,
              double* __restrict__ part)
{
    __shared__ double warp_part[4][ERR_BLOCK / 32];
    double v[4] = {0.0, 0.0, 0.0, 0.0};
    for(long long i = (long long)blockIdx.x * ERR_BLOCK + threadIdx.x; i < n;
        i += (long long)gridDim.x * ERR_BLOCK)
    {
        const double r = ref[i];
        const double e = (double)to_acc(out[i]) - r;
        v[0] += e * e;
        v[1] = fmax(v[1], fabs(e));
        v[2] += r * r;
        v[3] = fmax(v[3], fabs(r));
    }
    for(int off = 16; off > 0; off >>= 1)
    {
        v[0] += __shfl_down_sync(0xffffffffu, v[0], off);
        v[1] = fmax(v[1], __shfl_down_sync(0xffffffffu, v[1], off));
        v[2] += __shfl_down_sync(0xffffffffu, v[2], off);
        v[3] = fmax(v[3], __shfl_down_sync(0xffffffffu, v[3], off));
    }
    if((threadIdx.x & 31) == 0)
        for(int j = 0; j < 4; ++j) warp_part[j][threadIdx.x >> 5] = v[j];
    __syncthreads();
    if(threadIdx.x == 0)
    {
        double s[4] = {0.0, 0.0, 0.0, 0.0};
        for(int w = 0; w < ERR_BLOCK / 32; ++w)
        {
            s[0] += warp_part[0][w];
            s[1] = fmax(s[1], warp_part[1][w]);
            s[2] += warp_part[2][w];
            s[3] = fmax(s[3], warp_part[3][w]);
        }
        for(int j = 0; j < 4; ++j) part[4 * blockIdx.x + j] = s[j];
    }
}
