// Hopper implicit GEMM, backward weights, stream-K (solvers/implicit_gemm_hopper_wrw_sk.py): the GEMM and
// operand staging of implicit_gemm_hopper_wrw.cu (included below with its copy-engine, producer-warpgroup
// path: WSPEC = 1, TMA = 1), scheduled over every SM evenly.
//
// Work units: u = tile * JTILES + jt, one 64-deep j tile of one BM x BN output tile, UNITS = TILES x JTILES in
// all (N tiles fastest within an M row of tiles). Block b of the G = SK_GRID blocks (at most one per SM, all
// resident) takes the contiguous units [u_begin(b), u_begin(b + 1)), u_begin(b) = floor(b * UNITS / G), so every
// block does the same number of j tiles to within one, whatever the tile count (no partial wave). Its units form
// at most a partial first segment (the tail of a tile), whole tiles, and a partial last segment (the head of
// a tile). A whole tile is written to dw from the accumulators. A partial segment's FP32 accumulators go to
// workspace slot 2b (the block's first tile) or 2b + 1 (its last), each thread's fragment pairs at consecutive
// 8-byte words (coalesced, no staging); igemm_hopper_wrw_sk_fix, the programmatic dependent launch, sums a
// split tile's slots in block order (deterministic) and writes it. The block holding unit u is
// b(u) = floor(((u + 1) * G - 1) / UNITS): the largest b with u_begin(b) <= u.
#ifndef WSPEC
#define WSPEC 1
#endif
#ifndef TMA
#define TMA 1
#endif
#include "implicit_gemm_hopper_wrw.cu"

#ifndef SK_GRID
#define SK_GRID 132     // blocks: at most the blocks resident at once, at most UNITS
#endif
#ifndef FIX_BLOCK
#define FIX_BLOCK 256   // threads of a fix-up block
#endif

#define SK_TILES_N ((GEMM_N + BN - 1) / BN)
#define SK_TILES ((long long)((GEMM_M + BM - 1) / BM) * SK_TILES_N)
#define SK_UNITS (SK_TILES * JTILES)
#define SK_PAIRS (BM * BN / 2)          // float2 accumulator pairs of a tile (= NT_MMA * WG_M * BN / 4)

static_assert(WSPEC && TMA && SPLITK == 1 && CLUSTER == 1, "stream-K: the copy-engine producer path, unsplit, no cluster");
static_assert(SK_GRID >= 1 && SK_GRID <= SK_UNITS, "every block has at least one unit");
static_assert(SK_PAIRS % FIX_BLOCK == 0 && FIX_BLOCK % 32 == 0, "fix-up blocks of whole warps covering a tile");

__device__ __forceinline__ long long sk_begin(long long b) { return b * SK_UNITS / SK_GRID; }
__device__ __forceinline__ long long sk_block_of(long long u) { return ((u + 1) * SK_GRID - 1) / SK_UNITS; }
// a block's partial segment of tile `tile`: slot 0 if it is the block's first tile, else slot 1
__device__ __forceinline__ long long sk_slot(long long b, long long tile)
{
    return 2 * b + (sk_begin(b) / JTILES == tile ? 0 : 1);
}

extern "C" __global__ void __launch_bounds__(NT, 1)
igemm_hopper_wrw_sk(const data_t* __restrict__ dy, const data_t* __restrict__ x, data_t* __restrict__ dw,
                    float* __restrict__ ws TMA_PARAM)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
    grid_dep_launch();      // the fix-up (a programmatic dependent) may start: it waits for this grid

    const int t = threadIdx.x;
    const int wg = t >> 7;
    const long long ub = sk_begin(blockIdx.x), ue = sk_begin(blockIdx.x + 1);

    __shared__ __align__(8) u64 bars[2 * STAGES];    // full[0 .. STAGES), empty[0 .. STAGES)
    const u32 full0 = smem_u32(bars), empty0 = full0 + STAGES * 8;
    if(t == 0)
    {
#pragma unroll
        for(int s = 0; s < STAGES; ++s)
        {
            mbar_init(full0 + s * 8, 1);
            mbar_init(empty0 + s * 8, NT_MMA);
        }
        fence_mbar_init();
    }
    __syncthreads();

    if(wg == WGS)       // the producer warpgroup: one thread issues every unit's boxes
    {
        if(t - NT_MMA == 0)
        {
#pragma unroll 1
            for(long long u = ub; u < ue; ++u)
            {
                const int s = producer_stage<STAGES>(empty0, u - ub);
                const u32 sn = sbase + s * STAGE_BYTES, bar = full0 + s * 8;
                const long long tile = u / JTILES;
                const index_t jt = (index_t)(u - tile * JTILES);
                const int m0 = (int)(tile / SK_TILES_N) * BM, n0 = (int)(tile % SK_TILES_N) * BN;
                // the j tile's first output pixel (n, oh, ow) as the first filter base (ow*sw - pw, oh*sh - ph, n)
                const index_t j0 = jt * BJ;
                const index_t q = j0 / P_WO;
                const int wb = (int)(j0 - q * P_WO) * P_SW - P_PW;
                const int hb = (int)(q % P_HO) * P_SH - P_PH;
                const int nb = (int)(q / P_HO);
                mbar_expect_tx(bar, STAGE_BYTES);
#pragma unroll
                for(int a = 0; a < BM / 64; ++a)
                    tma_tile_2d(sn + a * MNBLK, &tmdy, m0 + a * 64, (int)j0, bar);
#pragma unroll
                for(int b = 0; b < BN / 64; ++b)
                {
                    // a block past GEMM_N (never stored) reads tap 0 instead
                    const int colb = n0 + b * 64 < GEMM_N ? n0 + b * 64 : 0;
                    const int tap = colb / P_C, c = colb - tap * P_C;
                    tma_im2col_4d(sn + A_BYTES + b * MNBLK, &tmx, c, wb, hb, nb, (unsigned short)((tap % P_X) * P_DW),
                                  (unsigned short)((tap / P_X) * P_DH), bar);
                }
            }
        }
        return;
    }

    float acc[WG_M][BN / 2];
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;

    long long seg0 = ub;        // the first unit of the current segment
    bool pend = false;          // the previous unit's stage is still to be released
#pragma unroll 1
    for(long long u = ub; u < ue; ++u)
    {
        const long long i = u - ub;
        const int s = (int)(i % STAGES);
        mbar_wait(full0 + s * 8, (u32)((i / STAGES) & 1));
        const u32 sa = sbase + s * STAGE_BYTES;
        mma_tile(acc, sa, sa + A_BYTES, wg);
        wgmma_wait<1>();                 // the previous unit's wgmma has completed: release its stage
        if(pend)
            mbar_arrive(empty0 + (int)((i - 1) % STAGES) * 8);
        pend = true;
        const long long tile = u / JTILES;
        const long long jt = u - tile * JTILES;
        if(jt != JTILES - 1 && u != ue - 1)
            continue;
        // the segment [seg0, u] of `tile` ends: its accumulators are complete
        wgmma_wait<0>();
        mbar_arrive(empty0 + s * 8);
        pend = false;
#pragma unroll
        for(int a = 0; a < WG_M; ++a)
#pragma unroll
            for(int j = 0; j < BN / 2; ++j) reg_fence(acc[a][j]);
        if(seg0 == tile * JTILES && jt == JTILES - 1)
        {
            const int m0 = (int)(tile / SK_TILES_N) * BM, n0 = (int)(tile % SK_TILES_N) * BN;
            for_each_pair(acc, t, [&](int r, int c, float& v0, float& v1) {
                const int k = m0 + r, cl = n0 + c;
                if(k >= GEMM_M || cl >= GEMM_N)
                    return;
#if IS_BF16
                *reinterpret_cast<__nv_bfloat162*>(dw + (long long)k * GEMM_N + cl) = __floats2bfloat162_rn(v0, v1);
#else
                *reinterpret_cast<__half2*>(dw + (long long)k * GEMM_N + cl) = __floats2half2_rn(v0, v1);
#endif
            });
        }
        else
        {
            // pair p of thread t at word p * NT_MMA + t of the slot
            float2* slot = reinterpret_cast<float2*>(ws) + sk_slot(blockIdx.x, tile) * SK_PAIRS + t;
#pragma unroll
            for(int a = 0; a < WG_M; ++a)
#pragma unroll
                for(int p = 0; p < BN / 4; ++p)
                    slot[(a * (BN / 4) + p) * NT_MMA] = make_float2(acc[a][2 * p], acc[a][2 * p + 1]);
        }
#pragma unroll
        for(int a = 0; a < WG_M; ++a)
#pragma unroll
            for(int j = 0; j < BN / 2; ++j) acc[a][j] = 0.f;
        seg0 = u + 1;
    }
}

// Tile blockIdx.x, if split (its first and last units in different blocks): the sum of its blocks' slots in
// block order, written to dw. Thread i of the tile's pairs (blockIdx.y * FIX_BLOCK + threadIdx.x) is pair p of
// consumer thread t of the main kernel (i = p * NT_MMA + t), accumulator pair (a, q) = (p / (BN/4), p % (BN/4)):
// acc[a][2q], acc[a][2q + 1], i.e. row (wg*WG_M + a)*64 + wi*16 + l/4 + 8h, columns 8j + 2(l%4) (+1), q = 2j + h.
extern "C" __global__ void __launch_bounds__(FIX_BLOCK)
igemm_hopper_wrw_sk_fix(const float* __restrict__ ws, data_t* __restrict__ dw)
{
    grid_dep_wait();        // launched as the programmatic dependent of the stream-K kernel
    const long long tile = blockIdx.x;
    const long long b0 = sk_block_of(tile * JTILES), b1 = sk_block_of(tile * JTILES + JTILES - 1);
    if(b0 == b1)
        return;             // one block's whole tile: written by the main kernel
    const int i = blockIdx.y * FIX_BLOCK + threadIdx.x;
    const int t = i % NT_MMA, p = i / NT_MMA;
    const float2* w2 = reinterpret_cast<const float2*>(ws);
    float2 v = w2[sk_slot(b0, tile) * SK_PAIRS + i];
    // batches of 8 loads in flight, added in block order
#pragma unroll 1
    for(long long b = b0 + 1; b <= b1; b += 8)
    {
        float2 u[8];
#pragma unroll
        for(int e = 0; e < 8; ++e)
            if(b + e <= b1) u[e] = w2[sk_slot(b + e, tile) * SK_PAIRS + i];
#pragma unroll
        for(int e = 0; e < 8; ++e)
            if(b + e <= b1)
            {
                v.x += u[e].x;
                v.y += u[e].y;
            }
    }
    const int a = p / (BN / 4), q = p % (BN / 4), j = q >> 1, h = q & 1;
    const int wgi = t >> 7, wi = (t & 127) >> 5, l = t & 31;
    const int r = (wgi * WG_M + a) * 64 + wi * 16 + (l >> 2) + h * 8, c = j * 8 + (l & 3) * 2;
    const int k = (int)(tile / SK_TILES_N) * BM + r, cl = (int)(tile % SK_TILES_N) * BN + c;
    if(k >= GEMM_M || cl >= GEMM_N)
        return;
#if IS_BF16
    *reinterpret_cast<__nv_bfloat162*>(dw + (long long)k * GEMM_N + cl) = __floats2bfloat162_rn(v.x, v.y);
#else
    *reinterpret_cast<__half2*>(dw + (long long)k * GEMM_N + cl) = __floats2half2_rn(v.x, v.y);
#endif
}
