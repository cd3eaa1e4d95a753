// Implicit-GEMM convolution forward for Hopper: wgmma.mma_async (sm_90a), channels-last 16-bit.
//
// y[m, k] = sum_kk A[m, kk] * B[kk, k] (groups = 1, 2D) with
//   m  = (n, oh, ow)      M = N*Ho*Wo output pixels,
//   kk = ((r, s), c)      K = Y*X*C, channel-minor (channels-last x: a run of kk is a run of channels),
//   A[m, kk] = x[n, oh*sh - ph + r*dh, ow*sw - pw + s*dw, c] (0 outside),
//   B[kk, k] = w[k, r, s, c] (KYXC: row k of B is contiguous along kk).
// Both operands are K-major: BM x 64 and BN x 64 tiles, 128-byte swizzled (implicit_gemm_hopper.cuh),
// filled by 16-byte cp.async (8 channels of one tap; C % 8 == 0), zero-filled outside the image,
// past M, N or K. STAGES buffers, prefetch distance STAGES - 2: the wgmma of tile kt - 1 may still
// run while tile kt is issued, so a buffer is refilled only after the barrier that follows every
// warpgroup's wgmma_wait<1> of the tile two back.
// WGS warpgroups (128 threads each) all load; warpgroup g multiplies rows [g*64*WG_M, (g+1)*64*WG_M)
// of the block tile against all BN columns (WG_M m64 blocks of one m64nBNk16 each per k16 step).
// Grid: x = M tiles x N tiles, N tiles fastest. Output NHWC dense (y offset of (m, k) = m*K + k), FP32 rounded to data_t,
// staged in shared memory and stored 16 bytes at a time (K % 8 == 0).
#include "implicit_gemm_hopper.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef WGS
#define WGS 2
#endif
#ifndef STAGES
#define STAGES 4
#endif

#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1    // blocks per SM the register allocation must allow (the host sets 2 when shared memory does)
#endif

#define BK 64
#define NT (WGS * 128)
#define WG_M (BM / (64 * WGS))
#define GEMM_M ((index_t)P_N * P_HO * P_WO)
#define GEMM_N P_K
#define GEMM_K (P_C * P_Y * P_X)
#define KTILES ((GEMM_K + BK - 1) / BK)
#define NTILES_N ((GEMM_N + BN - 1) / BN)
#define A_BYTES (BM * 128)
#define B_BYTES (BN * 128)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define RSTEP (NT / 8)          // rows covered by one pass of the loaders (8 chunks per row)
#define AR (BM / RSTEP)
#define BR (BN / RSTEP)
#define BIG (1 << 29)

static_assert(BM % (64 * WGS) == 0 && (WG_M == 1 || WG_M == 2), "BM = 64 * WGS * (1 or 2)");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN in 64, 128, 256");
static_assert(WG_M * BN <= 256, "at most 128 accumulators per thread");
static_assert(STAGES >= 3, "prefetch distance STAGES - 2 >= 1");
static_assert(BM * (BN + 8) * 2 <= STAGES * STAGE_BYTES, "the staged output tile fits the pipeline's buffers");
static_assert(BM % RSTEP == 0 && BN % RSTEP == 0, "loader rows");
static_assert(P_C % 8 == 0, "16-byte chunks of channels");
static_assert(XS_C == 1 && WS_C == 1 && YS_C == 1, "channels-last x, w and y");
static_assert(YS_W == P_K && YS_H == P_WO * YS_W && YS_N == P_HO * YS_H, "dense NHWC y");
static_assert(WS_X == P_C && WS_Y == P_X * WS_X && WS_K == P_Y * WS_Y, "dense KYXC w");

__device__ __forceinline__ void wgmma_tile(float* d, u64 da, u64 db)
{
#if BN == 64
    wgmma_n64(d, da, db);
#elif BN == 128
    wgmma_n128(d, da, db);
#else
    wgmma_n256(d, da, db);
#endif
}

extern "C" __global__ void __launch_bounds__(NT, MIN_BLOCKS)
igemm_hopper_fwd(const data_t* __restrict__ x, const data_t* __restrict__ w, data_t* __restrict__ y)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;

    const int t = threadIdx.x;
    const int ch = t & 7;        // this thread's 16-byte chunk of every row it loads
    const int r0 = t >> 3;
    // N tiles vary fastest: blocks running together share their A rows (the large operand) in L2
    const index_t m0 = (index_t)(blockIdx.x / NTILES_N) * BM;
    const int n0 = (int)(blockIdx.x % NTILES_N) * BN;

    // per-row gather state of A (fixed over the K loop)
    index_t abase[AR];
    int ah0[AR], aw0[AR];
#pragma unroll
    for(int i = 0; i < AR; ++i)
    {
        const index_t m = m0 + r0 + i * RSTEP;
        if(m < GEMM_M)
        {
            index_t q = m;
            const int ow = (int)(q % P_WO); q /= P_WO;
            const int oh = (int)(q % P_HO);
            const index_t n = q / P_HO;
            ah0[i] = oh * P_SH - P_PH;
            aw0[i] = ow * P_SW - P_PW;
            abase[i] = n * XS_N + (index_t)ah0[i] * XS_H + (index_t)aw0[i] * XS_W;
        }
        else
        {
            ah0[i] = -BIG; aw0[i] = -BIG; abase[i] = 0;
        }
    }
    index_t bbase[BR];
    bool bok[BR];
#pragma unroll
    for(int i = 0; i < BR; ++i)
    {
        const int k = n0 + r0 + i * RSTEP;
        bok[i] = k < GEMM_N;
        bbase[i] = bok[i] ? (index_t)k * WS_K : 0;
    }

    auto load = [&](int kt, int st) {
        const u32 sa = sbase + st * STAGE_BYTES;
        const u32 sb = sa + A_BYTES;
        const int kk = kt * BK + ch * 8;
        const bool kok = kk < GEMM_K;
        const int tap = kk / P_C;
        const int c = kk - tap * P_C;
        const int dy = (tap / P_X) * P_DH;
        const int dx = (tap % P_X) * P_DW;
        const index_t coff = (index_t)c + (index_t)dy * XS_H + (index_t)dx * XS_W;
#pragma unroll
        for(int i = 0; i < AR; ++i)
        {
            const int r = r0 + i * RSTEP;
            const bool ok = kok && (unsigned)(ah0[i] + dy) < (unsigned)P_HI && (unsigned)(aw0[i] + dx) < (unsigned)P_WI;
            cp_async16(sa + sw128(r, ch), ok ? x + abase[i] + coff : x, ok);
        }
#pragma unroll
        for(int i = 0; i < BR; ++i)
        {
            const int r = r0 + i * RSTEP;
            const bool ok = kok && bok[i];
            cp_async16(sb + sw128(r, ch), ok ? w + bbase[i] + kk : w, ok);
        }
    };

#pragma unroll
    for(int s = 0; s < STAGES - 2; ++s)
    {
        if(s < KTILES) load(s, s);
        cp_async_commit();
    }

    float acc[WG_M][BN / 2];
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;

    const int wg = t >> 7;
    for(int kt = 0; kt < KTILES; ++kt)
    {
        cp_async_wait<STAGES - 3>();
        fence_proxy_async();
        __syncthreads();
        const int st = kt % STAGES;
        const u32 sa = sbase + st * STAGE_BYTES;
        const u32 sb = sa + A_BYTES;
        wgmma_fence();
#pragma unroll
        for(int k16 = 0; k16 < BK / 16; ++k16)
        {
            const u64 db = desc_sw128(sb + k16 * 32);
#pragma unroll
            for(int i = 0; i < WG_M; ++i)
                wgmma_tile(acc[i], desc_sw128(sa + (wg * WG_M + i) * 64 * 128 + k16 * 32), db);
        }
        wgmma_commit();
        const int nk = kt + STAGES - 2;
        if(nk < KTILES) load(nk, nk % STAGES);
        cp_async_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int j = 0; j < BN / 2; ++j) reg_fence(acc[i][j]);

    // epilogue: thread (warp wi, lane l) holds rows wi*16 + l/4 (+8), columns 8j + 2(l%4) (+1) of its
    // m64 blocks; the tile goes through shared memory (rows padded by 16 bytes: the 8 rows of a warp's
    // stores land in distinct banks) and leaves in 16-byte stores along k.
    __syncthreads();   // every warpgroup's last wgmma has read its stage
    data_t* cs = reinterpret_cast<data_t*>(smem_raw + (sbase - smem_u32(smem_raw)));
    constexpr int LDC = BN + 8;
    const int wi = (t & 127) >> 5, l = t & 31;
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int h = 0; h < 2; ++h)
        {
            const int r = (wg * WG_M + i) * 64 + wi * 16 + (l >> 2) + h * 8;
#pragma unroll
            for(int j = 0; j < BN / 8; ++j)
            {
#if IS_BF16
                *reinterpret_cast<__nv_bfloat162*>(cs + r * LDC + j * 8 + (l & 3) * 2) =
                    __floats2bfloat162_rn(acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]);
#else
                *reinterpret_cast<__half2*>(cs + r * LDC + j * 8 + (l & 3) * 2) =
                    __floats2half2_rn(acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]);
#endif
            }
        }
    __syncthreads();
    constexpr int CPR = BN / 8;    // 16-byte chunks per row
#pragma unroll
    for(int q = t; q < BM * CPR; q += NT)
    {
        const int r = q / CPR, c8 = (q % CPR) * 8;
        const index_t m = m0 + r;
        if(m < GEMM_M && n0 + c8 < GEMM_N)
            *reinterpret_cast<uint4*>(y + m * YS_W + n0 + c8) = *reinterpret_cast<const uint4*>(cs + r * LDC + c8);
    }
}
