// Implicit-GEMM convolution forward for Hopper with TF32 operands rounded to nearest (ConvImplicitGemmHopperFwdTf32Rn,
// and the backward data built on it): FP32 data, wgmma.mma_async m64nNk8 .tf32 with A from registers.
//
// y[m, k] = sum_kk A[m, kk] * w[k, kk], with m = (n, oh, ow) the output pixels, kk = ((r, s), c) and A the im2col
// gather of channels-last x, as implicit_gemm_hopper_fwd.cu. The wgmma reads an FP32 operand in shared memory truncated
// to TF32 (the low 13 mantissa bits ignored); cuDNN and cuBLAS round to nearest (cvt.rna), and truncation's bias toward
// zero compounds over a deep network. So here the A operand (x, BM pixels x 32 channels a K tile, by the copy engine's
// im2col box) goes through registers: ldmatrix gives each thread its fragment, cvt.rna.tf32.f32 rounds it, and the
// register-A (RS) wgmma multiplies it; the B operand (w, BN output channels x 32) is read from shared memory already
// rounded: igemm_tf32_round writes a rounded copy of w into the workspace first (or the backward data's filter
// rewrite rounds as it writes).
// Tiles: a tile is BM output pixels x BN output channels, both operands K-major and 128-byte swizzled (a 128-byte row
// is 32 FP32 channels of one tap, so a K tile is 32 deep and C % 32 == 0; 16-byte chunk c of row r at c ^ (r % 8),
// implicit_gemm_hopper.cuh).
//   CW = 2, WN = 1: BM = 128 WG_M; consumer warpgroup g takes pixel rows 64 WG_M g .. (WG_M m64 blocks) x all BN.
//   CW = 2, WN = 2: BM = 64 WG_M; each consumer takes every row x channels g BN / 2 .. (both read the A tile).
//   CW = 1: one consumer, BM = 64, BN 64 or 128 (one m64 block: its registers fit the 128 a thread of a 256-thread
//   block, two blocks to an SM where their shared memory fits, whose groups interleave as two consumers' do).
// A fragment (m64k8 .tf32, CUTLASS's ALayout_64x8): thread (warp wi, lane l) holds rows wi*16 + l/4 (+8) x columns
// l%4 (+4) of the k8 step: registers (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4). ldmatrix.x4's four 8 x 8 b16
// matrices are 8 rows x 16 bytes, lane l receiving word l%4 of row l/4 of each: matrices (rows 0-7, chunk 2 k8),
// (rows 8-15, chunk 2 k8), (rows 0-7, chunk 2 k8 + 1), (rows 8-15, chunk 2 k8 + 1), lane l addressing row l%8 of
// matrix l/8. The eight rows of a matrix sit in eight different 16-byte bank groups under the swizzle.
// Pipeline: persistent blocks; the producer warpgroup's first thread streams every (tile, K tile) position's two boxes
// through STAGES buffers (full mbarrier by transaction bytes); every consumer warpgroup works on every tile. A consumer
// loads and rounds a K tile's fragments (4 k8 steps x WG_M m64 blocks) into one of two register sets, issues its wgmma
// as one group, and waits for the group before it: that K tile's stage is then released (empty mbarrier, 128 CW
// arrivals) and its register set refilled by the next K tile while this one multiplies. ptxas serialises register-A
// wgmma where it cannot prove that no register of an in-flight group is written: so the register sets are named (K
// tiles in pairs, an odd count's first one peeled), each is kept live past the wait that covers its group, no branch
// separates the groups (the release is a predicated arrive), and the accumulators are zeroed in place. With CW = 2,
// setmaxnreg moves registers from the producer (40) to the consumers (232); ptxas compiles CW = 1 to its launch bound.
// Epilogue: FP32 pairs of consecutive channels straight to y (a quad of lanes writes 32 contiguous bytes of a pixel),
// while the producer already fills the next tile's stages. The kernel is launched as the programmatic dependent of the
// filter's rounding (or rewrite): its set-up overlaps that grid, and its producer waits for it before the first copy.
// Channels-last x, w (KYXC) and y; C % 32 == 0, K % 4 == 0.
#include "implicit_gemm_hopper.cuh"
#include "implicit_gemm_hopper_mbar.cuh"
#include "implicit_gemm_hopper_tma.cuh"
#include "implicit_gemm_hopper_pixels.cuh"
#include "implicit_gemm_hopper_tf32_rs.cuh"

#ifndef WG_M
#define WG_M 1          // m64 blocks of output pixels a consumer warpgroup takes in a tile
#endif
#ifndef BN
#define BN 128          // output channels of a tile: the wgmma N (64, 128, 256)
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef CW
#define CW 2           // consumer warpgroups: 2, or 1 (256-thread blocks, two to an SM where they fit)
#endif
#ifndef WN
#define WN 1           // consumer warpgroups along the output channels: 1 (each its own pixel rows), 2 (each BN / 2)
#endif

#define BM (64 * WG_M * (CW == 2 && WN == 1 ? 2 : 1))  // output pixels: 64 WG_M a consumer, or shared (WN = 2)
#define WG_N (BN / WN)                  // output channels of a consumer warpgroup: its wgmma N
#define BK 32                           // K tile depth: 32 FP32 channels of one tap, one 128-byte row
#define NT (128 * (CW + 1))             // the consumer warpgroups, then the producer
#define GEMM_M ((index_t)P_N * P_HO * P_WO)
#define KTILES (P_C * P_Y * P_X / BK)
#define KTILES_N ((P_K + BN - 1) / BN)  // channel tiles of the output
#define A_BYTES (BM * 128)
#define STAGE_BYTES (A_BYTES + BN * 128)

static_assert(WG_M == 1 || WG_M == 2, "WG_M in 1, 2");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN in 64, 128, 256");
static_assert(CW == 2 || (CW == 1 && WG_M == 1 && BN <= 128), "CW in 1, 2 (1: one m64 block, 64 accumulators)");
static_assert(WN == 1 || (WN == 2 && CW == 2 && BN >= 128), "WN in 1, 2 (2: two consumers, 64 or 128 channels each)");
static_assert(WG_M * WG_N <= 256, "at most 128 accumulators a thread");
static_assert(STAGES >= 2, "two stages at least");
static_assert(P_C % BK == 0, "K tiles of one tap");
static_assert(P_K % 4 == 0, "pairs of output channels, 16-byte rows of w");
static_assert(XS_C == 1 && WS_C == 1 && YS_C == 1, "channels-last x, w and y");
static_assert(WS_X == P_C && WS_Y == P_X * WS_X && WS_K == P_Y * WS_Y, "dense KYXC w");
static_assert(YS_W % 2 == 0 && YS_H % 2 == 0 && YS_N % 2 == 0, "8-byte aligned channel pairs of y");

// a thread's A fragment of one m64 block and k8 step, rounded: addr is its ldmatrix row address
__device__ __forceinline__ void load_a(u32 (&a)[4], u32 addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(addr) : "memory");
#pragma unroll
    for(int i = 0; i < 4; ++i) a[i] = tf32_rna(a[i]);
}

// K tile at stream position pos, warpgroup rows r0 ..: the A fragments of its WG_M m64 blocks and 4 k8 steps from the
// stage into register set a, rounded, then its 4 x WG_M wgmma as one group; returns once the group before (the
// previous K tile's, which read register set `other`) has completed, and then releases that K tile's stage (unless
// this is a tile's first K tile: `release`). No branch between the groups: ptxas serialises register-A wgmma across
// one.
__device__ __forceinline__ void k_tile(float (&acc)[WG_M][WG_N / 2], u32 (&a)[WG_M][4][4], u32 (&other)[WG_M][4][4],
                                       index_t pos, bool release, u32 sbase, u32 full0, u32 empty0, int r0, u32 boff,
                                       int achunk)
{
    const int s = (int)(pos % STAGES);
    mbar_wait(full0 + s * 8, (u32)((pos / STAGES) & 1));
    const u32 sn = sbase + s * STAGE_BYTES;
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int k8 = 0; k8 < 4; ++k8)
        {
            const int r = r0 + i * 64;
            load_a(a[i][k8], sn + (u32)(r * 128 + (((2 * k8 + achunk) ^ (r & 7)) << 4)));
        }
    rs_group<WG_N>(acc, a, other, sn + A_BYTES + boff);      // returns once the previous K tile's group has completed
    asm volatile("{\n.reg .pred q;\n.reg .b64 st;\nsetp.ne.u32 q, %1, 0;\n@q mbarrier.arrive.shared.b64 st, [%0];\n}\n"
                 ::"r"(empty0 + (u32)((pos + STAGES - 1) % STAGES) * 8), "r"((u32)release) : "memory");
}

extern "C" __global__ void __launch_bounds__(NT, CW == 1 ? 2 : 1)
igemm_hopper_fwd_tf32_rn(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                         const __grid_constant__ TmaMap tmx, const __grid_constant__ TmaMap tmw)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
    __shared__ __align__(8) u64 bars[2 * STAGES];    // full[0 .. STAGES), empty[0 .. STAGES)
    const u32 full0 = smem_u32(bars), empty0 = full0 + STAGES * 8;
    const int t = threadIdx.x, wg = t >> 7;
    if(t == 0)
    {
#pragma unroll
        for(int s = 0; s < STAGES; ++s)
        {
            mbar_init(full0 + s * 8, 1);
            mbar_init(empty0 + s * 8, 128 * CW);    // every consumer warpgroup reads a stage
        }
        fence_mbar_init();
    }
    __syncthreads();
    const index_t ntiles = (GEMM_M + BM - 1) / BM * KTILES_N;

    if(wg == CW)
    {
#if CW == 2
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
#endif
        if(t == 128 * CW)
        {
            grid_dep_wait();                    // the rounded filter (the launch before, a programmatic dependency)
            index_t i = 0;                      // stream position: (tile, K tile)
            for(index_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x)
            {
                const index_t m0 = tile / KTILES_N * BM;
                const int k0 = (int)(tile % KTILES_N) * BN;
                int wb, hb, nb;
                filter_base(m0, wb, hb, nb);
#pragma unroll 1
                for(int kt = 0; kt < KTILES; ++kt, ++i)
                {
                    const int s = producer_stage<STAGES>(empty0, i);
                    const u32 sn = sbase + s * STAGE_BYTES, bar = full0 + s * 8;
                    const int kk = kt * BK, tap = kk / P_C, c = kk - tap * P_C;
                    mbar_expect_tx(bar, STAGE_BYTES);
                    tma_im2col_4d(sn, &tmx, c, wb, hb, nb, (unsigned short)((tap % P_X) * P_DW),
                                  (unsigned short)((tap / P_X) * P_DH), bar);
                    tma_tile_2d(sn + A_BYTES, &tmw, kk, k0, bar);
                }
            }
        }
        return;
    }

#if CW == 2
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
#endif
    const int tw = t & 127, wi = tw >> 5, l = t & 31;
    // this lane's ldmatrix row in the warpgroup's first m64 block (row l%8 of matrix l/8: rows +8 for matrices 1 and 3)
    // and its chunk offset (+1 for matrices 2 and 3)
    const int wrow = WN == 1 ? wg * 64 * WG_M : 0, wch = WN == 2 ? wg * WG_N : 0;    // this warpgroup's part of a tile
    const int r0 = wrow + wi * 16 + ((l >> 3) & 1) * 8 + (l & 7), achunk = l >> 4;
    const u32 boff = (u32)wch * 128;                // its filter rows in the stage's B tile (a multiple of 8 rows)
    float acc[WG_M][WG_N / 2];
    u32 af0[WG_M][4][4], af1[WG_M][4][4];     // two K tiles' A fragments: [m64 block][k8 step][register]
    index_t pos = 0;
    for(index_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x)
    {
        const index_t m0 = tile / KTILES_N * BM + wrow;           // this warpgroup's rows and channels of the tile
        const int k0 = (int)(tile % KTILES_N) * BN + wch;
#pragma unroll
        for(int i = 0; i < WG_M; ++i)
#pragma unroll
            for(int jj = 0; jj < WG_N / 2; ++jj)
            {
                acc[i][jj] = 0.f;
                reg_fence(acc[i][jj]);          // each zero in its own register before the first group
            }
        // K tiles in pairs, so that each has its register set by name (K tile kt fills the one K tile kt - 2 read); an
        // odd count's first K tile before them
#if KTILES & 1
        k_tile(acc, af1, af0, pos, false, sbase, full0, empty0, r0, boff, achunk);
        ++pos;
#endif
#pragma unroll 1
        for(int kt = KTILES & 1; kt < KTILES; kt += 2, pos += 2)
        {
            k_tile(acc, af0, af1, pos, kt > 0, sbase, full0, empty0, r0, boff, achunk);
            k_tile(acc, af1, af0, pos + 1, true, sbase, full0, empty0, r0, boff, achunk);
        }
        wgmma_wait<0>();
        mbar_arrive(empty0 + (int)((pos - 1) % STAGES) * 8);
#pragma unroll
        for(int i = 0; i < WG_M; ++i)
#pragma unroll
            for(int jj = 0; jj < WG_N / 2; ++jj) reg_fence(acc[i][jj]);
        // acc[i][4jj + 2h + e]: pixel row i*64 + wi*16 + l/4 + 8h of the warpgroup's, channel 8jj + 2(l%4) + e
#pragma unroll
        for(int i = 0; i < WG_M; ++i)
#pragma unroll
            for(int h = 0; h < 2; ++h)
            {
                const index_t m = m0 + i * 64 + wi * 16 + (l >> 2) + 8 * h;
                if(m < GEMM_M)
                {
                    float* yp = y + y_pixel(m) + k0 + 2 * (l & 3);
#pragma unroll
                    for(int jj = 0; jj < WG_N / 8; ++jj)
                        if(k0 + 8 * jj + 2 * (l & 3) < P_K)
                            *reinterpret_cast<float2*>(yp + 8 * jj) =
                                make_float2(acc[i][4 * jj + 2 * h], acc[i][4 * jj + 2 * h + 1]);
                }
            }
    }
}

// w (N_W FP32 elements, a multiple of 4) rounded to TF32 (cvt.rna) into wr: a grid-stride loop over float4s
#define N_W ((long long)P_K * P_Y * P_X * P_C)
extern "C" __global__ void __launch_bounds__(256) igemm_tf32_round(const float* __restrict__ w, float* __restrict__ wr)
{
    grid_dep_launch();      // the convolution (a programmatic dependent) may start: its producer waits for this grid
    for(long long i = blockIdx.x * 256LL + threadIdx.x; i < N_W / 4; i += (long long)gridDim.x * 256)
    {
        uint4 v = reinterpret_cast<const uint4*>(w)[i];
        v.x = tf32_rna(v.x); v.y = tf32_rna(v.y); v.z = tf32_rna(v.z); v.w = tf32_rna(v.w);
        reinterpret_cast<uint4*>(wr)[i] = v;
    }
}
