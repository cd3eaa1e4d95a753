// Hopper implicit GEMM, backward data (stride 1): dx is the forward convolution of dy with the
// flipped, transposed filter w'[c, r, s, k] = w[k, Y-1-r, X-1-s, c] and pads (Y-1)*dh - ph,
// (X-1)*dw - pw (implicit_gemm_hopper_fwd.cu, built for that forward problem). This file holds the
// filter copy into the workspace: one thread per element of w' (KYXC in, CYXK out), writes along k.
#include "common.cuh"

extern "C" __global__ void igemm_hopper_flip(const data_t* __restrict__ w, data_t* __restrict__ wf)
{
    const int total = FK * FY * FX * FC;
    for(int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x)
    {
        int q = i;
        const int k = q % FK; q /= FK;
        const int s = q % FX; q /= FX;
        const int r = q % FY;
        const int c = q / FY;
        wf[i] = w[((k * FY + (FY - 1 - r)) * FX + (FX - 1 - s)) * FC + c];
    }
}
