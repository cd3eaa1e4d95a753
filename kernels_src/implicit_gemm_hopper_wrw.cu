// Implicit-GEMM convolution, backward weights, for Hopper: wgmma.mma_async (sm_90a), channels-last 16-bit.
//
// dw[k, col] = sum_j A[k, j] * B[col, j] (groups = 1, 2D) with
//   k   = output channel               M = K,
//   col = ((r, s), c)                   N = Y*X*C, channel-minor (dw is KYXC: row k of dw is contiguous),
//   j   = (n, oh, ow)                   the reduction, N*Ho*Wo output pixels,
//   A[k, j] = dy[n, oh, ow, k],  B[col, j] = x[n, oh*sh - ph + r*dh, ow*sw - pw + s*dw, c] (0 outside).
// Neither operand is contiguous along j: both are staged MN-major (a 64-element, 128-byte run of k, or
// of channels of one tap, per j) by 16-byte cp.async and multiplied with wgmma's transposed operands
// (imm-trans-a = imm-trans-b = 1). Shared tile of R MN-rows x 64 j: R/64 blocks of 64 j-rows x 128
// bytes, 16-byte chunk c of j-row r stored at chunk c ^ (r % 8) (the 128-byte swizzle); in the
// descriptor the leading byte offset steps to the next 64-wide MN block (8192 bytes), the stride byte
// offset to the next 8 j-rows (1024 bytes); a k16 step advances the start address by 16 rows.
// Split-K: grid.y = SPLITK chunks of JT_PER 64-deep j tiles; with SPLITK > 1 each writes its FP32
// partial tile to ws[split][k][col] and igemm_hopper_wrw_reduce sums the chunks in a fixed order (no
// atomics, deterministic) and converts; with SPLITK = 1 the GEMM writes dw. Pipeline as the forward kernel
// (implicit_gemm_hopper_fwd.cu): STAGES buffers, prefetch distance STAGES - 2.
// Cluster split (CLUSTER > 1): the CLUSTER blocks of a thread-block cluster (consecutive grid.y) share a chunk of
// the reduction, JT_R of its j tiles each; every rank stages its FP32 tile in shared memory, and rank q sums its
// BM / CLUSTER rows of all the ranks' tiles through distributed shared memory in rank order (deterministic) and
// writes them to dw (a reduce-scatter): no workspace, no partial round trip through global memory, no second
// launch. With SPLITK > 1 as well, grid.y = SPLITK x CLUSTER: cluster c takes chunk c and writes its sum to partial
// plane c, for the reduce kernel (fewer planes than the same blocks split by SPLITK alone).
// Warp specialisation (WSPEC = 1): one more warpgroup, the producer, issues every cp.async; the WGS
// consumer warpgroups only wait and multiply. Stage s has two mbarriers: full[s] (the 128 producer
// threads arrive once their copies of the stage completed, after fence.proxy.async: writer-side
// ordering of the cp.async writes before wgmma reads them) and empty[s] (each consumer thread arrives
// once its wgmma that read the stage has completed). The producer keeps LAG = STAGES - 2 stages of
// copies in flight before it signals the oldest; no block-wide barrier in the mainloop.
// Copy engine (TMA = 1; WSPEC; C % 64 == 0, or each tap's columns padded to 64-wide blocks: W_PAD): one producer
// thread fills a stage with tensor-map copies
// (implicit_gemm_hopper_tma.cuh): each 64-wide block of A as a 64 x 64 box of dy (channels k, pixels j:
// dy is a dense J x K matrix) and each 64-wide block of B as an im2col box of x (the j tile's 64 output
// pixels as filter bases from its first pixel's (ow*sw - pw, oh*sh - ph, n), the block's tap as the filter
// offset, its 64 channels); zeros outside the image and past J, K. The maps are the last two arguments. B_DENSE = 1
// (a 1x1 filter, stride 1, no padding: x is a dense J x C matrix): each 64-wide block of B is a 64 x 64 box of a
// tiled map of x, as A's of dy.
#define WG_TRANS "1, 1"
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
#ifndef SPLITK
#define SPLITK 1        // effective split count (grid.y); the host derives it from the tunable
#endif
#ifndef JT_PER
#define JT_PER JTILES   // 64-deep j tiles per split
#endif
#ifndef JT_R
#define JT_R JT_PER     // CLUSTER > 1: the j tiles of a split each rank of its cluster takes
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef RED_BLOCK
#define RED_BLOCK 256
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef WSPEC
#define WSPEC 0     // 1: a producer warpgroup loads, the WGS consumer warpgroups multiply
#endif
#ifndef TMA
#define TMA 0           // 1: the producer's copies by the copy engine (tensor maps, last two arguments)
#endif
#ifndef B_DENSE
#define B_DENSE 0       // 1 (TMA; 1x1, stride 1, unpadded): x read through a tiled map of the dense J x C matrix
#endif
#ifndef ST16
#define ST16 0          // 1 (unsplit, no cluster): dw staged in shared memory, stored 16 bytes (8 channels) at a time
#endif
#ifndef LBO_MN
#define LBO_MN 1        // 1: leading byte offset = MN-block stride, stride byte offset = 8 j-rows (CUTLASS's MN-major SW128)
#endif

#define BJ 64
#define NT_MMA (WGS * 128)              // the consumer (wgmma) threads: warpgroups 0 .. WGS - 1
#define NT (NT_MMA + WSPEC * 128)       // block threads; with WSPEC, warpgroup WGS is the producer
#define NT_LOAD (WSPEC ? 128 : NT)      // the threads that issue cp.async
#define LAG (STAGES - 2)                // WSPEC: stages of copies in flight before the oldest is signalled
#define WG_M (BM / (64 * WGS))
#define GEMM_M P_K
#define GEMM_N (P_C * P_Y * P_X)
#if TMA && P_C % 64
// copy engine with C % 64 != 0: each tap's columns rounded up to whole 64-wide blocks (TAP_C, GEMM_NP columns); the
// copy engine reads x's channels past C as zeros, the split's partial planes hold GEMM_NP columns, and dw gets a tap's
// first P_C of them (dw_col)
#define W_PAD 1
#define TAP_C ((P_C + 63) / 64 * 64)
#define GEMM_NP (P_Y * P_X * TAP_C)
#else
#define W_PAD 0
#define GEMM_NP GEMM_N
#endif
#define GEMM_J ((index_t)P_N * P_HO * P_WO)
#define JTILES ((GEMM_J + BJ - 1) / BJ)
#define A_BYTES (BM * 128)
#define B_BYTES (BN * 128)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define MNBLK (BJ * 128)         // bytes of one 64-wide MN block (64 j-rows)
#define CPR_A (BM / 8)           // 16-byte chunks per j-row of A
#define CPR_B (BN / 8)
#define JSTEP_A (NT_LOAD / CPR_A)
#define JSTEP_B (NT_LOAD / CPR_B)

static_assert(BM % (64 * WGS) == 0 && (WG_M == 1 || WG_M == 2), "BM = 64 * WGS * (1 or 2)");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN in 64, 128, 256");
static_assert(WG_M * BN <= 256, "at most 128 accumulators per thread");
static_assert(STAGES >= 3, "prefetch distance STAGES - 2 >= 1");
static_assert(TMA || (NT_LOAD % CPR_A == 0 && BJ % JSTEP_A == 0 && NT_LOAD % CPR_B == 0 && BJ % JSTEP_B == 0),
              "loader rows (the cp.async loaders; the copy engine takes any BM of 64-row boxes)");
static_assert(P_C % 8 == 0 && P_K % 8 == 0, "16-byte chunks of channels");
static_assert(XS_C == 1 && WS_C == 1 && YS_C == 1, "channels-last x, w and y");
static_assert(YS_W == P_K && YS_H == P_WO * YS_W && YS_N == P_HO * YS_H, "dense NHWC dy");
static_assert(WS_X == P_C && WS_Y == P_X * WS_X && WS_K == P_Y * WS_Y, "dense KYXC dw");
static_assert(CLUSTER <= 8, "portable cluster size");
#define LDF (BN + 8)            // FP32 staging row (floats): 8 rows of a warp's float2 stores 8 banks apart
static_assert(CLUSTER == 1 || BM * LDF * 4 <= STAGES * STAGE_BYTES, "the FP32 tile fits the pipeline's buffers");
#define LDH (BN + 8)            // data_t staging row of ST16: 8 rows of a warp's 4-byte stores 4 banks apart
static_assert(!ST16 || (SPLITK == 1 && CLUSTER == 1 && BM * LDH * 2 <= STAGES * STAGE_BYTES), "ST16: unsplit, fits the buffers");

// MN-major, 128-byte-swizzled operand descriptor
__device__ __forceinline__ u64 desc_mn(u32 saddr)
{
    u64 d = (u64)((saddr & 0x3FFFF) >> 4);
#if LBO_MN
    d |= (u64)(MNBLK >> 4) << 16;     // leading byte offset: next 64-wide MN block
    d |= (u64)(1024 >> 4) << 32;      // stride byte offset: next 8 j-rows
#else
    d |= (u64)(1024 >> 4) << 16;
    d |= (u64)(MNBLK >> 4) << 32;
#endif
    d |= (u64)1 << 62;                // 128-byte swizzle
    return d;
}

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

// byte offset of MN chunk cc (8 elements) of j-row r in an MN-major tile
__device__ __forceinline__ u32 mn_off(int r, int cc) { return (u32)((cc >> 3) * MNBLK + r * 128 + (((cc & 7) ^ (r & 7)) << 4)); }

// A tile jt: dy rows j, channels k0 + cc*8 .. +8 (one 16-byte run of dy per j). Addresses are formed
// branch-free from a clamped row (cp.async reads nothing when the size operand is 0).
__device__ __forceinline__ void load_a(const data_t* __restrict__ dy, index_t jt, u32 sa, int kc, bool kok, int cc, int jr0)
{
#pragma unroll
    for(int i = 0; i < BJ / JSTEP_A; ++i)
    {
        const int r = jr0 + i * JSTEP_A;
        const index_t j = jt * BJ + r;
        const bool ok = kok && j < GEMM_J;
        const index_t jc = j < GEMM_J ? j : GEMM_J - 1;
        cp_async16(sa + mn_off(r, cc), dy + jc * P_K + (kok ? kc : 0), ok);
    }
}

template <int S> struct UIdx { typedef unsigned type; };
template <> struct UIdx<8> { typedef unsigned long long type; };

// 1x1 filter, stride 1, no padding: pixel j of dy is pixel j of x (dense NHWC), no decode
#define X_IS_Y (P_Y == 1 && P_X == 1 && P_SH == 1 && P_SW == 1 && P_PH == 0 && P_PW == 0 && \
                P_HI == P_HO && P_WI == P_WO && XS_N == P_HI * XS_H)

// B tile jt: for each j, the 8 channels of this thread's column chunk (one tap) of x, 0 outside the image
__device__ __forceinline__ void load_b(const data_t* __restrict__ x, index_t jt, u32 sb, index_t coff, int hoff,
                                       int woff, bool colok, int cc, int jr0)
{
#pragma unroll
    for(int i = 0; i < BJ / JSTEP_B; ++i)
    {
        const int r = jr0 + i * JSTEP_B;
        const index_t j = jt * BJ + r;
        const index_t jc = j < GEMM_J ? j : GEMM_J - 1;
#if X_IS_Y
        const bool ok = colok && j < GEMM_J;
        cp_async16(sb + mn_off(r, cc), x + jc * XS_W + (colok ? coff : 0), ok);
#else
        // unsigned division by the compile-time output sizes (cheaper than signed)
        typedef UIdx<sizeof(index_t)>::type uidx;
        const uidx q = (uidx)jc;
        const unsigned ow = (unsigned)(q % P_WO);
        const uidx q2 = q / P_WO;
        const unsigned oh = (unsigned)(q2 % P_HO);
        const uidx n = q2 / P_HO;
        const int ih = (int)oh * P_SH + hoff, iw = (int)ow * P_SW + woff;
        const bool ok = colok && j < GEMM_J && (unsigned)ih < (unsigned)P_HI && (unsigned)iw < (unsigned)P_WI;
        const index_t off = ok ? (index_t)n * XS_N + (index_t)ih * XS_H + (index_t)iw * XS_W + coff : 0;
        cp_async16(sb + mn_off(r, cc), x + off, ok);
#endif
    }
}

// One 64-deep j tile: warpgroup wg's WG_M m64 blocks x BN, 4 k16 steps of 16 j-rows (2048 bytes)
__device__ __forceinline__ void mma_tile(float (&acc)[WG_M][BN / 2], u32 sa, u32 sb, int wg)
{
    wgmma_fence();
#pragma unroll
    for(int k16 = 0; k16 < BJ / 16; ++k16)
    {
        const u64 db = desc_mn(sb + k16 * 2048);
#pragma unroll
        for(int i = 0; i < WG_M; ++i)
            wgmma_tile(acc[i], desc_mn(sa + (wg * WG_M + i) * MNBLK + k16 * 2048), db);
    }
    wgmma_commit();
}

// f(row, col, a0, a1) for each accumulator pair of thread t: it holds rows wi*16 + l/4 (+8) of its
// warpgroup's m64 blocks (warp wi, lane l), columns 8j + 2(l%4) (+1), a pair of consecutive columns of
// the tile (of dw, of a partial tile, of a rank's staged tile)
template <class F>
__device__ __forceinline__ void for_each_pair(float (&acc)[WG_M][BN / 2], int t, F f)
{
    const int wg = t >> 7, wi = (t & 127) >> 5, l = t & 31;
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int h = 0; h < 2; ++h)
#pragma unroll
            for(int j = 0; j < BN / 8; ++j)
                f((wg * WG_M + i) * 64 + wi * 16 + (l >> 2) + h * 8, j * 8 + (l & 3) * 2, acc[i][4 * j + 2 * h],
                  acc[i][4 * j + 2 * h + 1]);
}

#if WSPEC
#include "implicit_gemm_hopper_mbar.cuh"
#endif
#if TMA
#include "implicit_gemm_hopper_tma.cuh"
static_assert(WSPEC, "TMA: a producer warpgroup; 64-wide column blocks of one tap (padded past C: W_PAD)");
#endif
#if W_PAD
// column cl of the padded GEMM (tap cl / TAP_C, channel cl % TAP_C) as dw's column, or -1 for a channel past C
__device__ __forceinline__ int dw_col(int cl)
{
    const int tap = cl / TAP_C, c = cl - tap * TAP_C;
    return c < P_C ? tap * P_C + c : -1;
}
#endif
static_assert(!B_DENSE || (TMA && P_Y == 1 && P_X == 1 && P_SH == 1 && P_SW == 1 && P_PH == 0 && P_PW == 0 &&
                           P_HI == P_HO && P_WI == P_WO), "B_DENSE: copy engine, 1x1 filter, stride 1, no padding");
#if TMA
#define TMA_PARAM , const __grid_constant__ TmaMap tmdy, const __grid_constant__ TmaMap tmx
#else
#define TMA_PARAM
#endif

#if CLUSTER > 1
__device__ __forceinline__ u32 cluster_rank() { u32 r; asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r)); return r; }
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// the address of shared location saddr in the block of cluster rank r
__device__ __forceinline__ u32 peer_addr(u32 saddr, u32 r)
{
    u32 out;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(saddr), "r"(r));
    return out;
}
__device__ __forceinline__ float4 ld_peer4(u32 addr)
{
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr) : "memory");
    return v;
}
// pieces of a rank's rows each consumer thread sums at once (every rank's loads in flight together)
#define CL_U (16 / CLUSTER > 0 ? 16 / CLUSTER : 1)
#define CLUSTER_DIMS __cluster_dims__(1, CLUSTER, 1)
#else
#define CLUSTER_DIMS
#endif

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(NT, MIN_BLOCKS)
igemm_hopper_wrw(const data_t* __restrict__ dy, const data_t* __restrict__ x, data_t* __restrict__ dw,
                 float* __restrict__ ws TMA_PARAM)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
    grid_dep_launch();      // the split's reduce (a programmatic dependent) may start: it waits for this grid

    const int t = threadIdx.x;
    const int wg = t >> 7;
    const int m0 = (int)(blockIdx.x / ((GEMM_NP + BN - 1) / BN)) * BM;
    const int n0 = (int)(blockIdx.x % ((GEMM_NP + BN - 1) / BN)) * BN;
#if CLUSTER > 1
    // split blockIdx.y / CLUSTER's j tiles [cs0, ce), this rank's share of them (none past the split's end)
    const index_t cs0 = (index_t)(blockIdx.y / CLUSTER) * JT_PER;
    const index_t ce = cs0 + JT_PER < JTILES ? cs0 + JT_PER : JTILES;
    const index_t jt0 = cs0 + (index_t)(blockIdx.y % CLUSTER) * JT_R;
    const index_t jt1 = jt0 + JT_R < ce ? jt0 + JT_R : ce;
    const int nt = jt1 > jt0 ? (int)(jt1 - jt0) : 0;
#else
    const index_t jt0 = (index_t)blockIdx.y * JT_PER;
    const index_t jt1 = jt0 + JT_PER < JTILES ? jt0 + JT_PER : JTILES;
    const int nt = (int)(jt1 - jt0);
#endif

    // loader roles: a fixed 16-byte chunk of the MN rows, j-rows jr0 + i * JSTEP (WSPEC: the producer's threads)
    const int tl = WSPEC ? t - NT_MMA : t;
    const int cca = tl % CPR_A, jra = tl / CPR_A;
    const int kc = m0 + cca * 8;
    const bool kok = kc < GEMM_M;
    const int ccb = tl % CPR_B, jrb = tl / CPR_B;
    const int col = n0 + ccb * 8;
    const bool colok = col < GEMM_N;
    const int tap = colok ? col / P_C : 0;
    const int c = col - tap * P_C;
    const int hoff = (tap / P_X) * P_DH - P_PH, woff = (tap % P_X) * P_DW - P_PW;
    const index_t coff = c;

    float acc[WG_M][BN / 2];
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;

#if WSPEC
    __shared__ __align__(8) u64 bars[2 * STAGES];    // full[0 .. STAGES), empty[0 .. STAGES)
    const u32 full0 = smem_u32(bars), empty0 = full0 + STAGES * 8;
    if(t == 0)
    {
#pragma unroll
        for(int s = 0; s < STAGES; ++s)
        {
            mbar_init(full0 + s * 8, TMA ? 1 : NT_LOAD);
            mbar_init(empty0 + s * 8, NT_MMA);
        }
#if TMA
        fence_mbar_init();
#endif
    }
    __syncthreads();
    const bool producer = wg == WGS;
    if(producer)
    {
#if TMA
        if(tl == 0)
        {
#pragma unroll 1
            for(int i = 0; i < nt; ++i)
            {
                const int s = producer_stage<STAGES>(empty0, i);
                const u32 sn = sbase + s * STAGE_BYTES, bar = full0 + s * 8;
                const index_t j0 = (jt0 + i) * BJ;
#if !B_DENSE
                // the j tile's first output pixel (n, oh, ow) as the first filter base (ow*sw - pw, oh*sh - ph, n)
                const index_t q = j0 / P_WO;
                const int wb = (int)(j0 - q * P_WO) * P_SW - P_PW;
                const int hb = (int)(q % P_HO) * P_SH - P_PH;
                const int nb = (int)(q / P_HO);
#endif
                mbar_expect_tx(bar, STAGE_BYTES);
#pragma unroll
                for(int a = 0; a < BM / 64; ++a)
                    tma_tile_2d(sn + a * MNBLK, &tmdy, m0 + a * 64, (int)j0, bar);
#pragma unroll
                for(int b = 0; b < BN / 64; ++b)
                {
                    // a block past GEMM_N (never stored) reads tap 0 instead
                    const int colb = n0 + b * 64 < GEMM_NP ? n0 + b * 64 : 0;
#if B_DENSE
                    tma_tile_2d(sn + A_BYTES + b * MNBLK, &tmx, colb, (int)j0, bar);
#else
#if W_PAD
                    const int tap = colb / TAP_C, c = colb - tap * TAP_C;
#else
                    const int tap = colb / P_C, c = colb - tap * P_C;
#endif
                    tma_im2col_4d(sn + A_BYTES + b * MNBLK, &tmx, c, wb, hb, nb, (unsigned short)((tap % P_X) * P_DW),
                                  (unsigned short)((tap / P_X) * P_DH), bar);
#endif
                }
            }
        }
#else
        // tile i goes to stage i % STAGES, filled for the (i / STAGES)-th time: it waits for the consumers'
        // release of the previous filling (phase i / STAGES - 1 of empty)
#pragma unroll 1
        for(int i = 0; i < nt; ++i)
        {
            const int s = producer_stage<STAGES>(empty0, i);
            const u32 sn = sbase + s * STAGE_BYTES;
            load_a(dy, jt0 + i, sn, kc, kok, cca, jra);
            load_b(x, jt0 + i, sn + A_BYTES, coff, hoff, woff, colok, ccb, jrb);
            cp_async_commit();
            if(i >= LAG)
            {
                cp_async_wait<LAG>();        // tile i - LAG's copies (this thread's) have landed
                fence_proxy_async();
                mbar_arrive(full0 + ((i - LAG) % STAGES) * 8);
            }
        }
        cp_async_wait<0>();
        fence_proxy_async();
#pragma unroll 1
        for(int i = nt - LAG > 0 ? nt - LAG : 0; i < nt; ++i)
            mbar_arrive(full0 + (i % STAGES) * 8);
#endif
    }
    else
    {
#pragma unroll 1
        for(int kt = 0; kt < nt; ++kt)
        {
            const int s = kt % STAGES;
            mbar_wait(full0 + s * 8, (u32)((kt / STAGES) & 1));
            const u32 sa = sbase + s * STAGE_BYTES;
            mma_tile(acc, sa, sa + A_BYTES, wg);
            wgmma_wait<1>();                 // tile kt - 1's wgmma has completed: release its stage
            if(kt > 0)
                mbar_arrive(empty0 + ((kt - 1) % STAGES) * 8);
        }
        wgmma_wait<0>();
    }
#else
    const bool producer = false;
#pragma unroll
    for(int s = 0; s < STAGES - 2; ++s)
    {
        if(s < nt)
        {
            load_a(dy, jt0 + s, sbase + s * STAGE_BYTES, kc, kok, cca, jra);
            load_b(x, jt0 + s, sbase + s * STAGE_BYTES + A_BYTES, coff, hoff, woff, colok, ccb, jrb);
        }
        cp_async_commit();
    }
    for(int kt = 0; kt < nt; ++kt)
    {
        cp_async_wait<STAGES - 3>();
        fence_proxy_async();
        __syncthreads();
        const u32 sa = sbase + (kt % STAGES) * STAGE_BYTES;
        mma_tile(acc, sa, sa + A_BYTES, wg);
        // refill the buffer of tile kt - 2: every warpgroup waited for its wgmma before the barrier above
        const int nk = kt + STAGES - 2;
        if(nk < nt)
        {
            const u32 sn = sbase + (nk % STAGES) * STAGE_BYTES;
            load_a(dy, jt0 + nk, sn, kc, kok, cca, jra);
            load_b(x, jt0 + nk, sn + A_BYTES, coff, hoff, woff, colok, ccb, jrb);
        }
        cp_async_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    cp_async_wait<0>();
#endif
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int j = 0; j < BN / 2; ++j) reg_fence(acc[i][j]);

#if CLUSTER > 1
    {
        // every rank stages its FP32 tile at the same place of its shared memory ([BM][LDF] floats from sbase); then
        // rank q sums rows [q * BM / CLUSTER, (q + 1) * BM / CLUSTER) (floors: any cluster size) of the CLUSTER tiles in
        // rank order (deterministic) through distributed shared memory and writes them to dw: each block reads
        // 1 / CLUSTER of the tiles (a reduce-scatter), all blocks at once
        const u32 rank = cluster_rank();
        const int row0 = (int)rank * BM / CLUSTER;
        const int items = (((int)rank + 1) * BM / CLUSTER - row0) * (BN / 4);    // float4 pieces of the block's rows
        __syncthreads();       // the pipeline's buffers are free (each thread waited for its copies above)
        if(!producer)
            for_each_pair(acc, t, [&](int r, int c, float& a0, float& a1) {
                asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(sbase + (u32)(r * LDF + c) * 4), "f"(a0), "f"(a1)
                             : "memory");
            });
        cluster_sync();        // the ranks' tiles are written and visible cluster-wide
        if(!producer)
        {
            u32 base[CLUSTER];
#pragma unroll
            for(int q = 0; q < CLUSTER; ++q)
                base[q] = peer_addr(sbase, (u32)q);
#pragma unroll 1
            for(int it0 = t; it0 < items; it0 += CL_U * NT_MMA)
            {
                // CL_U pieces (row r, columns c .. c + 3) of every rank's tile loaded first, then summed in rank order
                float4 v[CL_U][CLUSTER];
#pragma unroll
                for(int u = 0; u < CL_U; ++u)
                {
                    const int it = it0 + u * NT_MMA < items ? it0 + u * NT_MMA : it0;
                    const u32 off = (u32)((row0 + it / (BN / 4)) * LDF + (it % (BN / 4)) * 4) * 4;
#pragma unroll
                    for(int q = 0; q < CLUSTER; ++q)
                        v[u][q] = ld_peer4(base[q] + off);
                }
#pragma unroll
                for(int u = 0; u < CL_U; ++u)
                {
                    const int it = it0 + u * NT_MMA;
                    float4 a = v[u][0];
#pragma unroll
                    for(int q = 1; q < CLUSTER; ++q)
                    {
                        a.x += v[u][q].x; a.y += v[u][q].y; a.z += v[u][q].z; a.w += v[u][q].w;
                    }
                    const int k = m0 + row0 + it / (BN / 4), cl = n0 + (it % (BN / 4)) * 4;
                    if(it < items && k < GEMM_M && cl < GEMM_NP)     // GEMM_NP % 8 == 0: all 4 columns in range
                    {
#if SPLITK > 1
                        *reinterpret_cast<float4*>(ws + ((long long)(blockIdx.y / CLUSTER) * GEMM_M + k) * GEMM_NP + cl) = a;
#elif W_PAD
                        const int d = dw_col(cl);       // TAP_C % 8 == P_C % 8 == 0: the 4 columns in one tap's
                        if(d >= 0)
                        {
                            store_pair(dw + (long long)k * GEMM_N + d, a.x, a.y);
                            store_pair(dw + (long long)k * GEMM_N + d + 2, a.z, a.w);
                        }
#else
                        store_pair(dw + (long long)k * GEMM_N + cl, a.x, a.y);
                        store_pair(dw + (long long)k * GEMM_N + cl + 2, a.z, a.w);
#endif
                    }
                }
            }
        }
        cluster_sync();        // every rank has read its rows of every tile: the blocks may exit
        return;
    }
#endif
    if(producer)
        return;
#if ST16
    {
        // the consumers' last wgmma have read their stages (each waited for its own; named barrier 1 joins them):
        // the tile as data_t in the pipeline's buffers, then each thread stores 16-byte runs of a dw row
        data_t* cs = reinterpret_cast<data_t*>(smem_raw + (sbase - smem_u32(smem_raw)));
        bar_sync<1, NT_MMA>();
        for_each_pair(acc, t, [&](int r, int c, float& v0, float& v1) { store_pair(cs + r * LDH + c, v0, v1); });
        bar_sync<1, NT_MMA>();
        constexpr int CPR = BN / 8;
#pragma unroll 4
        for(int q = t; q < BM * CPR; q += NT_MMA)
        {
            const int r = q / CPR, c8 = (q % CPR) * 8;
            const int k = m0 + r, cl = n0 + c8;
#if W_PAD
            const int d = cl < GEMM_NP ? dw_col(cl) : -1;       // 8 columns in one tap's
            if(k < GEMM_M && d >= 0)
                *reinterpret_cast<uint4*>(dw + (long long)k * GEMM_N + d) = *reinterpret_cast<const uint4*>(cs + r * LDH + c8);
#else
            if(k < GEMM_M && cl < GEMM_N)
                *reinterpret_cast<uint4*>(dw + (long long)k * GEMM_N + cl) = *reinterpret_cast<const uint4*>(cs + r * LDH + c8);
#endif
        }
        return;
    }
#endif
    for_each_pair(acc, t, [&](int r, int c, float& v0, float& v1) {
        const int k = m0 + r, cl = n0 + c;
        if(k >= GEMM_M || cl >= GEMM_NP)
            return;
#if SPLITK > 1
        *reinterpret_cast<float2*>(ws + ((long long)blockIdx.y * GEMM_M + k) * GEMM_NP + cl) = make_float2(v0, v1);
#elif W_PAD
        const int d = dw_col(cl);      // a pair of columns in one tap's
        if(d >= 0)
            store_pair(dw + (long long)k * GEMM_N + d, v0, v1);
#else
        store_pair(dw + (long long)k * GEMM_N + cl, v0, v1);
#endif
    });
}

// dw = sum over the SPLITK partial tiles in split order: a block covers RED_BLOCK / RED_GROUPS float4
// columns (4 elements each, GEMM_N % 8 == 0); RED_GROUPS thread groups sum consecutive ranges of splits
// (8 loads in flight each), and group 0 adds the group sums in order (deterministic).
static_assert(RED_BLOCK % RED_GROUPS == 0, "reduce block of whole groups");
#ifndef RED_GROUPS
#define RED_GROUPS 4
#endif
#define RED_COLS (RED_BLOCK / RED_GROUPS)
extern "C" __global__ void __launch_bounds__(RED_BLOCK)
igemm_hopper_wrw_reduce(const float* __restrict__ ws, data_t* __restrict__ dw)
{
    grid_dep_wait();        // launched as the programmatic dependent of the partials' kernel
    __shared__ float4 part[RED_GROUPS - 1][RED_COLS];
    constexpr long long total4 = (long long)GEMM_M * GEMM_NP / 4;
    constexpr int per = (SPLITK + RED_GROUPS - 1) / RED_GROUPS;
    const int g = threadIdx.x / RED_COLS, col = threadIdx.x % RED_COLS;
    const long long i = blockIdx.x * (long long)RED_COLS + col;
    const int p0 = g * per, p1 = p0 + per < SPLITK ? p0 + per : SPLITK;
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    if(i < total4)
    {
#pragma unroll 8
        for(int p = p0; p < p1; ++p)
        {
            const float4 v = reinterpret_cast<const float4*>(ws)[p * total4 + i];
            s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
        }
    }
    if(g > 0) part[g - 1][col] = s;
    __syncthreads();
    if(g > 0 || i >= total4) return;
#pragma unroll
    for(int q = 0; q < RED_GROUPS - 1; ++q)
    {
        const float4 v = part[q][col];
        s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
#if IS_BF16
    __nv_bfloat162 lo = __floats2bfloat162_rn(s.x, s.y), hi = __floats2bfloat162_rn(s.z, s.w);
#else
    __half2 lo = __floats2half2_rn(s.x, s.y), hi = __floats2half2_rn(s.z, s.w);
#endif
    uint2 o;
    o.x = *reinterpret_cast<unsigned*>(&lo);
    o.y = *reinterpret_cast<unsigned*>(&hi);
#if W_PAD
    // element 4i of the padded M x GEMM_NP planes: row k, column cl; 4 columns in one tap's (TAP_C % 4 == P_C % 4 == 0)
    const long long e = 4 * i, k = e / GEMM_NP;
    const int d = dw_col((int)(e - k * GEMM_NP));
    if(d >= 0)
        *reinterpret_cast<uint2*>(dw + k * GEMM_N + d) = o;
#else
    reinterpret_cast<uint2*>(dw)[i] = o;
#endif
}
