// Implicit-GEMM convolution forward for Hopper with the operands swapped (ConvImplicitGemmHopperFwdSwap): the filter is
// wgmma's A operand, the output pixels its N side. For narrow layers (few output channels), where the forward kernel's
// m64n64 steps re-read both operands for few multiplies.
//
// y^T[k, m] = sum_kk w[k, kk] * A[m, kk], with m, kk and A as in implicit_gemm_hopper_fwd.cu (m = (n, oh, ow),
// kk = ((r, s), c), A the im2col gather of channels-last x). A tile is 64 output channels k0 .. k0 + 63 (the m64 rows
// of one wgmma) x BM output pixels m0 .. m0 + BM - 1 (its N = BM columns). Both operands K-major, 128-byte swizzled
// (implicit_gemm_hopper.cuh): the BM x 64 im2col box of x is the forward kernel's A tile, the 64 x 64 box of w's KYXC
// rows its B tile, swapped in the instruction. Per k16 step a warpgroup reads (64 + BM) rows x 32 bytes for
// 64 x BM x 16 multiply-adds; the forward kernel's 256 x 64 tile reads 4 x 64 rows x 32 bytes per 64 x 64 x 16.
// Persistent, warp-specialised: the producer warpgroup's first thread streams every (tile, K tile) position's boxes by
// the copy engine (implicit_gemm_hopper_tma.cuh) through STAGES buffers, completing on the stage's full mbarrier; the
// two consumer warpgroups take alternate tiles of the block (ping-pong), their K loops in turn (named barriers 4, 5),
// so one's epilogue overlaps the other's multiplies; each releases a stage (empty mbarrier, 128 arrivals) once its
// wgmma that read it has completed. Block b takes tiles b, b + gridDim.x, ...; the channel tiles of a pixel tile are
// consecutive, so the blocks running together share x's rows in L2.
// Cooperative tiles (COOP = 1, for 65 to 128 output channels): a tile is BM pixels x 128 channels, the producer's w
// box 128 rows, and both consumer warpgroups multiply every tile, warpgroup g the channels k0 + 64g .. with the shared
// im2col box as its B operand: x is loaded once for both 64-channel halves. A stage is then released by 256 arrivals, and the
// epilogue is not overlapped (the producer's copies of the next tile are).
// Epilogue: thread (warp wi, lane l) of a warpgroup holds channels wi*16 + l/4 (+8) x pixels 8j + 2(l%4) (+1). Lanes
// l and l ^ 4 hold channel pairs (2q, 2q + 1): one shuffle gives each a pixel's pair, stored as 4 bytes into the
// warpgroup's output tile [BM][64] (128-byte rows, 16-byte chunk c of row r at c ^ (r % 8): no padding, no bank
// conflicts), then stored to y 16 bytes (8 channels of a pixel) at a time. C % 64 == 0 (a K tile is one tap's 64
// channels), K % 8 == 0, channels-last x, w (KYXC) and y.
#include "implicit_gemm_hopper.cuh"
#include "implicit_gemm_hopper_mbar.cuh"
#include "implicit_gemm_hopper_tma.cuh"
#include "implicit_gemm_hopper_pixels.cuh"

#ifndef BM
#define BM 256          // output pixels of a tile: the wgmma N (128 or 256)
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef COOP
#define COOP 0          // 1: both consumer warpgroups on each tile, 64 channels each
#endif

#define BK 64                           // K tile depth: one tap's 64 channels, one 128-byte row
#define NT 384                          // two consumer warpgroups, then the producer
#define GEMM_M ((index_t)P_N * P_HO * P_WO)
#define KTILES (P_C * P_Y * P_X / BK)
#define KO (64 * (1 + COOP))            // output channels of a tile
#define KTILES_N ((P_K + KO - 1) / KO)  // channel tiles of the output
#define X_BYTES (BM * 128)
#define STAGE_BYTES (X_BYTES + KO * 128)
#define OUT_BYTES (BM * 128)            // a warpgroup's output tile: BM pixels x 64 channels

static_assert(BM == 128 || BM == 256, "BM in 128, 256");
static_assert(STAGES >= 2, "two stages at least");
static_assert(P_C % BK == 0, "K tiles of one tap");
static_assert(P_K % 8 == 0, "16-byte chunks of output channels");
static_assert(XS_C == 1 && WS_C == 1 && YS_C == 1, "channels-last x, w and y");
static_assert(WS_X == P_C && WS_Y == P_X * WS_X && WS_K == P_Y * WS_Y, "dense KYXC w");
static_assert(YS_W >= P_K && YS_W % 8 == 0 && YS_H % 8 == 0 && YS_N % 8 == 0, "16-byte aligned channels-last y pixels");

// warpgroup wg's 128 threads (named barriers 2, 3)
__device__ __forceinline__ void wg_sync(int wg)
{
    if(wg == 0) bar_sync<2, 128>();
    else bar_sync<3, 128>();
}
// the K-loop order: warpgroup wg waits for the other's turn to end (named barriers 4, 5: 128 arrive, 128 wait)
__device__ __forceinline__ void turn_wait(int wg)
{
    if(wg == 0) bar_sync<4, 256>();
    else bar_sync<5, 256>();
}
__device__ __forceinline__ void turn_pass(int wg)
{
    if(wg == 0) bar_arrive<5, 256>();
    else bar_arrive<4, 256>();
}

__device__ __forceinline__ void wgmma_tile(float* d, u64 da, u64 db)
{
#if BM == 128
    wgmma_n128(d, da, db);
#else
    wgmma_n256(d, da, db);
#endif
}

// Stage sn's boxes of K tile kt of the tile at pixel m0 (first filter base (wb, hb, nb)) and channel k0: the im2col box
// of x at the tap's filter offset, channels c .. c + 63, at sn; w's 64 x KO box of rows k0 .. k0 + KO - 1 after it.
__device__ __forceinline__ void tma_fill(u32 sn, u32 bar, const TmaMap* tmx, const TmaMap* tmw, int wb, int hb, int nb,
                                         int kt, int k0)
{
    const int kk = kt * BK, tap = kk / P_C, c = kk - tap * P_C;
    mbar_expect_tx(bar, STAGE_BYTES);
    tma_im2col_4d(sn, tmx, c, wb, hb, nb, (unsigned short)((tap % P_X) * P_DW), (unsigned short)((tap / P_X) * P_DH), bar);
    tma_tile_2d(sn + X_BYTES, tmw, kk, k0, bar);
}

extern "C" __global__ void __launch_bounds__(NT, 1)
igemm_hopper_fwd_swap(const data_t* __restrict__ x, const data_t* __restrict__ w, data_t* __restrict__ y,
                      const __grid_constant__ TmaMap tmx, const __grid_constant__ TmaMap tmw)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
    unsigned char* sgen = smem_raw + (sbase - smem_u32(smem_raw));   // generic pointer to sbase
    __shared__ __align__(8) u64 bars[2 * STAGES];    // full[0 .. STAGES), empty[0 .. STAGES)
    const u32 full0 = smem_u32(bars), empty0 = full0 + STAGES * 8;
    const int t = threadIdx.x, wg = t >> 7;
    if(t == 0)
    {
#pragma unroll
        for(int s = 0; s < STAGES; ++s)
        {
            mbar_init(full0 + s * 8, 1);
            mbar_init(empty0 + s * 8, COOP ? 256 : 128);    // ping-pong: one consumer warpgroup reads a stage
        }
        fence_mbar_init();
    }
    __syncthreads();
    const index_t ntiles = (GEMM_M + BM - 1) / BM * KTILES_N;

    if(wg == 2)
    {
        if(t == 256)
        {
            index_t i = 0;                          // stream position: (tile, K tile)
            for(index_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x)
            {
                const index_t m0 = tile / KTILES_N * BM;
                const int k0 = (int)(tile % KTILES_N) * KO;
                int wb, hb, nb;
                filter_base(m0, wb, hb, nb);
#pragma unroll 1
                for(int kt = 0; kt < KTILES; ++kt, ++i)
                {
                    const int s = producer_stage<STAGES>(empty0, i);
                    tma_fill(sbase + s * STAGE_BYTES, full0 + s * 8, &tmx, &tmw, wb, hb, nb, kt, k0);
                }
            }
        }
        return;
    }

    unsigned char* cs = sgen + STAGES * STAGE_BYTES + wg * OUT_BYTES;     // this warpgroup's output tile
    const int tw = t & 127, wi = tw >> 5, l = t & 31;
    float acc[BM / 2];
#pragma unroll
    for(int j = 0; j < BM / 2; ++j) acc[j] = 0.f;
    const index_t mine = (index_t)blockIdx.x < ntiles ? (ntiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
#if COOP
    const u32 aoff = X_BYTES + wg * 64 * 128;       // this warpgroup's 64 filter rows
    for(index_t j = 0; j < mine; ++j)
    {
        const index_t tile = blockIdx.x + j * gridDim.x;
        const index_t m0 = tile / KTILES_N * BM;
        const int k0 = (int)(tile % KTILES_N) * KO + wg * 64;     // this warpgroup's channels
#else
    const u32 aoff = X_BYTES;
    for(index_t j = wg; j < mine; j += 2)
    {
        const index_t tile = blockIdx.x + j * gridDim.x;
        const index_t m0 = tile / KTILES_N * BM;
        const int k0 = (int)(tile % KTILES_N) * KO;
        if(j > 0)
            turn_wait(wg);                  // the other warpgroup has waited on every position of tile j - 1
#endif
        const index_t pos0 = j * KTILES;
#pragma unroll 1
        for(int kt = 0; kt < KTILES; ++kt)
        {
            const index_t pos = pos0 + kt;
            const int s = (int)(pos % STAGES);
            mbar_wait(full0 + s * 8, (u32)((pos / STAGES) & 1));
            const u32 sn = sbase + s * STAGE_BYTES;
            wgmma_fence();
#pragma unroll
            for(int k16 = 0; k16 < 4; ++k16)
                wgmma_tile(acc, desc_sw128(sn + aoff + k16 * 32), desc_sw128(sn + k16 * 32));
            wgmma_commit();
            wgmma_wait<1>();                // position pos - 1's wgmma has completed: release its stage
            if(kt > 0)
                mbar_arrive(empty0 + (int)((pos - 1) % STAGES) * 8);
        }
#if !COOP
        if(j + 1 < mine)
            turn_pass(wg);
#endif
        wgmma_wait<0>();
        mbar_arrive(empty0 + (int)((pos0 + KTILES - 1) % STAGES) * 8);
#pragma unroll
        for(int i = 0; i < BM / 2; ++i) reg_fence(acc[i]);
        wg_sync(wg);                        // this warpgroup's previous stores have read its output tile
        // acc[4jj + 2h + e]: channel kq = wi*16 + l/4 + 8h, pixel p = 8jj + 2(l%4) + e. An even l/4 lane keeps pixel
        // p0 = 8jj + 2(l%4) and takes channel kq + 1's value of it from lane l ^ 4; an odd one keeps p0 + 1.
        const bool odd = (l >> 2) & 1;
#pragma unroll
        for(int jj = 0; jj < BM / 8; ++jj)
#pragma unroll
            for(int h = 0; h < 2; ++h)
            {
                const float v0 = acc[4 * jj + 2 * h], v1 = acc[4 * jj + 2 * h + 1];
                const float got = __shfl_xor_sync(0xffffffffu, odd ? v0 : v1, 4);
                const int p = 8 * jj + 2 * (l & 3) + odd;
                const int kq = wi * 16 + 8 * h + ((l >> 2) & ~1);       // the even channel of the pair
                const u32 off = (u32)(p * 128 + (((kq >> 3) ^ (p & 7)) << 4) + (kq & 7) * 2);
                data_t* dst = reinterpret_cast<data_t*>(cs + off);
                if(odd) store_pair(dst, got, v1);
                else store_pair(dst, v0, got);
            }
        wg_sync(wg);
        // output tile -> y: 16-byte chunk c8 (channels k0 + 8 c8 ..) of pixel row r
#pragma unroll 4
        for(int q = tw; q < BM * 8; q += 128)
        {
            const int r = q >> 3, c8 = q & 7;
            const index_t m = m0 + r;
            if(m < GEMM_M && k0 + 8 * c8 < P_K)
                *reinterpret_cast<uint4*>(y + y_pixel(m) + k0 + 8 * c8) =
                    *reinterpret_cast<const uint4*>(cs + r * 128 + ((c8 ^ (r & 7)) << 4));
        }
#pragma unroll
        for(int i = 0; i < BM / 2; ++i) acc[i] = 0.f;
    }
}
