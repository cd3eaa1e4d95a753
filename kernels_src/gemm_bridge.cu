// The bridge GEMM (miofind.lt_bridge): a plain strided-batched GEMM that runs a cuBLASLt-backed solution's
// matmuls while cuBLASLt sets itself up in a background thread (its first call in a process costs ~100 ms).
// Column-major, as cuBLAS: C[b] = op(A[b]) op(B[b]) (+ C[b] when beta), op(X) = X or X^T, for batch
// b < batch at element strides (sa, sb, sc); A, B in TA, C in TC, products summed in float.
//
// Tiles: a 64 x 64 block of C per thread block (grid.x over m, grid.y over n, grid.z strides over the
// batch), K in steps of 16 through shared memory. Thread t of 256 owns rows tx + 16 r and columns
// ty + 16 c (tx = t % 16, ty = t / 16, r, c < 4): a warp's 32 threads read 16 consecutive rows of the
// A tile and two columns of the B tile, so neither shared array has bank conflicts.
#include "common.cuh"

#ifndef BR_TILE
#define BR_TILE 64
#endif
#ifndef BR_K
#define BR_K 16
#endif
#define BR_THREADS 256

__device__ __forceinline__ void br_store(float* p, float v) { *p = v; }
__device__ __forceinline__ void br_store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void br_store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ float br_load(const float* p) { return *p; }
__device__ __forceinline__ float br_load(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float br_load(const __nv_bfloat16* p) { return __bfloat162float(*p); }

// One operand's K-slab into shared memory: Xs[l][p] = X(p0 + p, l0 + l) for p < BR_TILE, l < BR_K, zero
// outside extent x k, where X(p, l) = x[p + l ld] when p is the contiguous index (A untransposed, B
// transposed), else x[l + p ld]; consecutive threads walk the contiguous index (coalesced reads).
template <typename T>
__device__ __forceinline__ void br_tile(float (*Xs)[BR_TILE + 1], const T* __restrict__ x, long long ld, bool p_contig,
                                        int p0, int extent, int l0, int k)
{
    const int t = threadIdx.x;
    #pragma unroll
    for(int e = 0; e < 4; ++e)
    {
        int pp, ll;
        if(p_contig) { pp = t % BR_TILE; ll = t / BR_TILE + 4 * e; }
        else         { ll = t % BR_K;    pp = t / BR_K + 16 * e; }
        const int p = p0 + pp, l = l0 + ll;
        Xs[ll][pp] = (p < extent && l < k) ? br_load(x + (p_contig ? p + l * ld : l + p * ld)) : 0.f;
    }
}

template <typename TA, typename TC>
__device__ __forceinline__ void bridge_gemm(int ta, int tb, int m, int n, int k, const TA* __restrict__ A,
                                            long long lda, long long sa, const TA* __restrict__ B, long long ldb,
                                            long long sb, TC* __restrict__ C, long long ldc, long long sc, int batch,
                                            int beta)
{
    __shared__ float As[BR_K][BR_TILE + 1];
    __shared__ float Bs[BR_K][BR_TILE + 1];
    const int t = threadIdx.x, tx = t % 16, ty = t / 16;
    const int i0 = blockIdx.x * BR_TILE, j0 = blockIdx.y * BR_TILE;
    for(int bz = blockIdx.z; bz < batch; bz += gridDim.z)
    {
        const TA* a = A + (long long)bz * sa;
        const TA* b = B + (long long)bz * sb;
        TC* c = C + (long long)bz * sc;
        float acc[4][4] = {};
        for(int l0 = 0; l0 < k; l0 += BR_K)
        {
            // A(i, l) = a[i + l lda] (N) or a[l + i lda] (T); B(l, j) = b[l + j ldb] (N) or b[j + l ldb] (T)
            br_tile(As, a, lda, ta == 0, i0, m, l0, k);
            br_tile(Bs, b, ldb, tb != 0, j0, n, l0, k);
            __syncthreads();
            #pragma unroll
            for(int l = 0; l < BR_K; ++l)
            {
                float av[4], bv[4];
                #pragma unroll
                for(int r = 0; r < 4; ++r) av[r] = As[l][tx + 16 * r];
                #pragma unroll
                for(int q = 0; q < 4; ++q) bv[q] = Bs[l][ty + 16 * q];
                #pragma unroll
                for(int r = 0; r < 4; ++r)
                    #pragma unroll
                    for(int q = 0; q < 4; ++q) acc[r][q] = fmaf(av[r], bv[q], acc[r][q]);
            }
            __syncthreads();
        }
        #pragma unroll
        for(int q = 0; q < 4; ++q)
        {
            const int j = j0 + ty + 16 * q;
            if(j >= n) continue;
            #pragma unroll
            for(int r = 0; r < 4; ++r)
            {
                const int i = i0 + tx + 16 * r;
                if(i >= m) continue;
                TC* p = c + i + j * ldc;
                br_store(p, beta ? acc[r][q] + br_load(p) : acc[r][q]);
            }
        }
    }
}

#define BRIDGE(NAME, TA, TC)                                                                                        \
    extern "C" __global__ void __launch_bounds__(BR_THREADS)                                                        \
    NAME(const TA* A, const TA* B, TC* C, int ta, int tb, int m, int n, int k, long long lda, long long sa,         \
         long long ldb, long long sb, long long ldc, long long sc, int batch, int beta)                             \
    {                                                                                                               \
        bridge_gemm<TA, TC>(ta, tb, m, n, k, A, lda, sa, B, ldb, sb, C, ldc, sc, batch, beta);                      \
    }

BRIDGE(gemm_bridge_f32_f32, float, float)
BRIDGE(gemm_bridge_f16_f16, __half, __half)
BRIDGE(gemm_bridge_f16_f32, __half, float)
BRIDGE(gemm_bridge_bf16_bf16, __nv_bfloat16, __nv_bfloat16)
BRIDGE(gemm_bridge_bf16_f32, __nv_bfloat16, float)
