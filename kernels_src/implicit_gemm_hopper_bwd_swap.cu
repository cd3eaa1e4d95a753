// The filter rewrite of the swapped-operand Hopper backward data (solvers/implicit_gemm_hopper_bwd_swap.py): at stride 1,
// dx is the forward convolution of dy by w with its taps reversed and its channel roles exchanged, which
// implicit_gemm_hopper_fwd_swap.cu multiplies with the filter as wgmma's A operand, K-major: so w (FK x FY x FX x FC,
// KYXC, 16-bit) is first rewritten as that forward's dense KYXC filter, dx's channels out and dy's in,
//   wf[((c * FY + a) * FX + b) * FK + k] = w[k, FY-1-a, FX-1-b, c].
// Per tap, a transpose of the (k, c) plane: 32 x 32 tiles through shared memory, read along c and written along k,
// coalesced both ways; the padding column keeps the transposed reads free of bank conflicts.
#include "common.cuh"

// grid (ceil(FC / 32), ceil(FK / 32), FY * FX), block (32, 8)
extern "C" __global__ void __launch_bounds__(256) igemm_hopper_bwd_swap_flip(const data_t* __restrict__ w,
                                                                             data_t* __restrict__ wf)
{
    __shared__ data_t tile[32][33];
    const int tap = blockIdx.z, r = tap / FX, s = tap % FX;
    const int c0 = blockIdx.x * 32, k0 = blockIdx.y * 32;
    const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for(int j = 0; j < 32; j += 8)
    {
        const int k = k0 + ty + j, c = c0 + tx;
        if(k < FK && c < FC)
            tile[ty + j][tx] = w[((long long)k * FY * FX + tap) * FC + c];
    }
    __syncthreads();
    const int rt = (FY - 1 - r) * FX + (FX - 1 - s);        // the reversed tap
#pragma unroll
    for(int j = 0; j < 32; j += 8)
    {
        const int c = c0 + ty + j, k = k0 + tx;
        if(k < FK && c < FC)
            wf[((long long)c * FY * FX + rt) * FK + k] = tile[tx][ty + j];
    }
}
