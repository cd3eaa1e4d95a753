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
// PERSIST = 1 (N <= BN): the grid is at most the blocks that fit the GPU at once; each block loads all
// of B (KTILES x BN x 64) into shared memory once, then streams A through STAGES buffers over its M
// tiles (blockIdx.x, + gridDim.x, ...) without draining the pipeline between tiles; a tile's output
// goes through its own shared buffer while the next tile's loads are in flight.
// Grid (PERSIST = 0): x = M tiles x N tiles, N tiles fastest. Output NHWC dense (y offset of (m, k) = m*K + k), FP32 rounded to data_t,
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
#ifndef PERSIST
#define PERSIST 0       // 1: persistent blocks over M tiles, all of B resident in shared memory (N <= BN)
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
static_assert(PERSIST || BM * (BN + 8) * 2 <= STAGES * STAGE_BYTES, "the staged output tile fits the pipeline's buffers");
static_assert(!PERSIST || NTILES_N == 1, "persistent blocks cover all of N");
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

// Gather state of the A rows a thread loads (rows r0 + i*RSTEP of the tile at m0).
struct ARows
{
    index_t base[AR];
    int h0[AR], w0[AR];
    __device__ __forceinline__ void init(index_t m0, int r0)
    {
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
                h0[i] = oh * P_SH - P_PH;
                w0[i] = ow * P_SW - P_PW;
                base[i] = n * XS_N + (index_t)h0[i] * XS_H + (index_t)w0[i] * XS_W;
            }
            else
            {
                h0[i] = -BIG; w0[i] = -BIG; base[i] = 0;
            }
        }
    }
};

// A tile kt (BM rows x 64 kk) into the swizzled buffer at sa; chunk ch of rows r0 + i*RSTEP.
__device__ __forceinline__ void load_a(const data_t* __restrict__ x, const ARows& ar, int kt, u32 sa, int r0, int ch)
{
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
        const bool ok = kok && (unsigned)(ar.h0[i] + dy) < (unsigned)P_HI && (unsigned)(ar.w0[i] + dx) < (unsigned)P_WI;
        cp_async16(sa + sw128(r0 + i * RSTEP, ch), x + (ok ? ar.base[i] + coff : 0), ok);   // branch-free select
    }
}

// B tile kt (BN rows k from n0 x 64 kk) into the swizzled buffer at sb.
__device__ __forceinline__ void load_b(const data_t* __restrict__ w, int n0, int kt, u32 sb, int r0, int ch)
{
    const int kk = kt * BK + ch * 8;
#pragma unroll
    for(int i = 0; i < BR; ++i)
    {
        const int k = n0 + r0 + i * RSTEP;
        const bool ok = kk < GEMM_K && k < GEMM_N;
        cp_async16(sb + sw128(r0 + i * RSTEP, ch), w + (ok ? (index_t)k * WS_K + kk : 0), ok);
    }
}

// One 64-deep K tile: warpgroup wg's WG_M m64 blocks x BN, 4 k16 steps (asynchronous; the caller commits).
__device__ __forceinline__ void mma_tile(float (&acc)[WG_M][BN / 2], u32 sa, u32 sb, int wg)
{
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
}

// Accumulators -> shared output tile cs ([BM][BN + 8] data_t): thread (warp wi, lane l) holds rows
// wi*16 + l/4 (+8) of its m64 blocks, columns 8j + 2(l%4) (+1); the 16-byte row padding puts the
// 8 rows of a warp's stores in distinct banks.
#define LDC (BN + 8)
__device__ __forceinline__ void acc_to_smem(float (&acc)[WG_M][BN / 2], data_t* cs, int t)
{
    const int wg = t >> 7, wi = (t & 127) >> 5, l = t & 31;
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
}

// Shared output tile -> y, 16 bytes (8 channels) per store.
__device__ __forceinline__ void store_tile(data_t* __restrict__ y, const data_t* cs, index_t m0, int n0, int t)
{
    constexpr int CPR = BN / 8;
#pragma unroll
    for(int q = t; q < BM * CPR; q += NT)
    {
        const int r = q / CPR, c8 = (q % CPR) * 8;
        const index_t m = m0 + r;
        if(m < GEMM_M && n0 + c8 < GEMM_N)
            *reinterpret_cast<uint4*>(y + m * YS_W + n0 + c8) = *reinterpret_cast<const uint4*>(cs + r * LDC + c8);
    }
}

__device__ __forceinline__ void zero_acc(float (&acc)[WG_M][BN / 2])
{
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;
}

__device__ __forceinline__ void fence_acc(float (&acc)[WG_M][BN / 2])
{
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int j = 0; j < BN / 2; ++j) reg_fence(acc[i][j]);
}

extern "C" __global__ void __launch_bounds__(NT, MIN_BLOCKS)
igemm_hopper_fwd(const data_t* __restrict__ x, const data_t* __restrict__ w, data_t* __restrict__ y)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
    unsigned char* sgen = smem_raw + (sbase - smem_u32(smem_raw));   // generic pointer to sbase

    const int t = threadIdx.x;
    const int ch = t & 7;        // this thread's 16-byte chunk of every row it loads
    const int r0 = t >> 3;
    const int wg = t >> 7;
    float acc[WG_M][BN / 2];
    zero_acc(acc);

#if !PERSIST
    // N tiles vary fastest: blocks running together share their A rows (the large operand) in L2
    const index_t m0 = (index_t)(blockIdx.x / NTILES_N) * BM;
    const int n0 = (int)(blockIdx.x % NTILES_N) * BN;
    ARows ar;
    ar.init(m0, r0);

#pragma unroll
    for(int s = 0; s < STAGES - 2; ++s)
    {
        if(s < KTILES)
        {
            load_a(x, ar, s, sbase + s * STAGE_BYTES, r0, ch);
            load_b(w, n0, s, sbase + s * STAGE_BYTES + A_BYTES, r0, ch);
        }
        cp_async_commit();
    }
    for(int kt = 0; kt < KTILES; ++kt)
    {
        cp_async_wait<STAGES - 3>();
        fence_proxy_async();
        __syncthreads();
        const u32 sa = sbase + (kt % STAGES) * STAGE_BYTES;
        mma_tile(acc, sa, sa + A_BYTES, wg);
        // refill the buffer of tile kt - 2: every warpgroup waited for its wgmma before the barrier above
        const int nk = kt + STAGES - 2;
        if(nk < KTILES)
        {
            const u32 sn = sbase + (nk % STAGES) * STAGE_BYTES;
            load_a(x, ar, nk, sn, r0, ch);
            load_b(w, n0, nk, sn + A_BYTES, r0, ch);
        }
        cp_async_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    fence_acc(acc);
    __syncthreads();   // every warpgroup's last wgmma has read its stage
    data_t* cs = reinterpret_cast<data_t*>(sgen);
    acc_to_smem(acc, cs, t);
    __syncthreads();
    store_tile(y, cs, m0, n0, t);
#else
    // shared memory: [B, all K tiles][A, STAGES buffers][output tile]
    const u32 sb0 = sbase;
    const u32 sa0 = sbase + KTILES * B_BYTES;
    data_t* cs = reinterpret_cast<data_t*>(sgen + KTILES * B_BYTES + STAGES * A_BYTES);
    const index_t mtiles = (GEMM_M + BM - 1) / BM;
    const index_t mine = (index_t)blockIdx.x < mtiles ? (mtiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    const index_t total = mine * KTILES;      // this block's (tile, kt) stream

    // loader position in the stream: (its tile's rows, kt), advanced one K tile per load
    ARows ar;
    index_t ltile = blockIdx.x;
    int lkt = 0;
    ar.init(ltile * BM, r0);
    auto load_next = [&](int st) {
        load_a(x, ar, lkt, sa0 + st * A_BYTES, r0, ch);
        if(++lkt == KTILES)
        {
            lkt = 0;
            ltile += gridDim.x;
            ar.init(ltile * BM, r0);
        }
    };

    for(int kt = 0; kt < KTILES; ++kt) load_b(w, 0, kt, sb0 + kt * B_BYTES, r0, ch);   // in the first group
#pragma unroll
    for(int s = 0; s < STAGES - 2; ++s)
    {
        if(s < total) load_next(s);
        cp_async_commit();
    }
    index_t left = total;          // stream positions not yet loaded after the prologue's
    left -= left < STAGES - 2 ? left : STAGES - 2;
    int st = 0, lst = (STAGES - 2) % STAGES;
    for(index_t tile = blockIdx.x; tile < mtiles; tile += gridDim.x)
    {
        for(int kt = 0; kt < KTILES; ++kt)
        {
            cp_async_wait<STAGES - 3>();
            fence_proxy_async();
            __syncthreads();
            mma_tile(acc, sa0 + st * A_BYTES, sb0 + kt * B_BYTES, wg);
            if(left > 0)                  // into the buffer of position - 2 (waited for before the barrier)
            {
                load_next(lst);
                --left;
            }
            cp_async_commit();
            if(++st == STAGES) st = 0;
            if(++lst == STAGES) lst = 0;
            wgmma_wait<1>();
        }
        // tile done: the output buffer's last reads (the previous tile's stores) precede the barriers above
        wgmma_wait<0>();
        fence_acc(acc);
        acc_to_smem(acc, cs, t);
        __syncthreads();
        store_tile(y, cs, tile * BM, 0, t);
        zero_acc(acc);
    }
    cp_async_wait<0>();
#endif
}
