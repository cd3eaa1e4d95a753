// Implicit-GEMM convolution, backward weights, for Hopper with TF32 operands rounded to nearest
// (ConvImplicitGemmHopperWrwTf32Rn): FP32 data, channels-last, wgmma.mma_async m64nNk8 .tf32, A from registers.
//
// dw[k, col] = sum_j A[k, j] * B[col, j] (groups = 1, 2D), as implicit_gemm_hopper_wrw.cu:
//   k = output channel (M = K), col = ((r, s), c) (N = Y*X*C, dw is KYXC), j = (n, oh, ow) (the N*Ho*Wo reduction),
//   A[k, j] = dy[n, oh, ow, k],  B[col, j] = x[n, oh*sh - ph + r*dh, ow*sw - pw + s*dw, c] (0 outside).
// Neither operand is contiguous along j, and TF32 wgmma has no transposed (MN-major) form. So the copy engine lands
// both MN-major, as the 16-bit kernel's TMA path does: a stage is BJ = 32 j-rows of each operand, in blocks of 32
// MN elements (one 128-byte row a j: a tiled 32 x 32 box of dy, an im2col box of 32 pixels x one tap's 32 channels of
// x; 16-byte chunk c of j-row r at c ^ (r % 8)); then the consumer warpgroups
//   - load A's fragments straight from the MN-major tile into registers (scalar loads; register-A wgmma), and
//   - transpose their columns of B into a K-major tile (rows = columns of dw, 32 j a 128-byte row, the same
//     swizzle), 4 x 4 blocks through registers: four 16-byte loads of 4 columns x 1 j, four 16-byte stores of
//     1 column x 4 j;
// rounding every element by cvt.rna on the way (cuDNN's and cuBLAS's TF32 rounding; wgmma reading shared memory
// would truncate). The raw stage is released as soon as it is read; the wgmma reads only registers and the consumer's
// own K-major tile.
// Tiles: BM = 64 WG_M rows of dw (output channels) x BN columns; consumer warpgroup g takes every row and columns
// g BN/2 .. (its wgmma N = BN / 2), so each transposes and reads only its own B tile, double-buffered (the group that
// read a buffer has completed before it is written again: wgmma.wait_group 1 a K tile). Register sets of A fragments
// are named in pairs of K tiles (ptxas serialises register-A wgmma where a register of an in-flight group may be
// written), so a chunk of the reduction runs an even count of K tiles: an odd chunk (the last) ends with one more whose
// dy rows lie past J (zeros from the copy engine; its B box reads the chunk's first pixels, finite values times 0).
// Split-K: grid.y = SPLITK chunks of JT_PER (even) K tiles; each writes its FP32 partial tile to ws[split][k][col] and
// igemm_hopper_wrw_tf32_reduce sums the chunks in split order (deterministic), a programmatic dependent launch.
// Unsplit, the accumulators go straight to dw. Producer: one thread of the last warpgroup issues the boxes (full
// mbarrier by transaction bytes); setmaxnreg moves registers from it (40) to the consumers (232).
// Channels-last x, dy (dense), dw (dense KYXC); C % 32 == 0 (an im2col box is one tap's 32 channels), K % 4 == 0.
#include "implicit_gemm_hopper.cuh"
#include "implicit_gemm_hopper_mbar.cuh"
#include "implicit_gemm_hopper_tma.cuh"
#include "implicit_gemm_hopper_tf32_rs.cuh"

#ifndef WG_M
#define WG_M 1          // m64 blocks of dw rows (output channels): BM = 64 WG_M, every consumer on all of them
#endif
#ifndef BN
#define BN 128          // columns of dw a tile: BN / 2 a consumer warpgroup (its wgmma N)
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef SPLITK
#define SPLITK 1        // effective split count (grid.y); the host derives it from the tunable
#endif
#ifndef JT_PER
#define JT_PER 2        // K tiles a split (even); the last split may have fewer
#endif
#ifndef RED_BLOCK
#define RED_BLOCK 256
#endif

#define BM (64 * WG_M)
#define WG_N (BN / 2)
#define BJ 32                           // K tile: 32 j (output pixels), one 128-byte K-major row of FP32
#define NT 384                          // two consumer warpgroups, then the producer's
#define GEMM_M P_K
#define GEMM_N (P_C * P_Y * P_X)
#define GEMM_J ((index_t)P_N * P_HO * P_WO)
#define JTILES ((GEMM_J + BJ - 1) / BJ)
#define MNBLK (BJ * 128)                // bytes of a 32-wide MN block of a raw stage (32 j-rows)
#define A_BYTES (BM * BJ * 4)
#define STAGE_BYTES ((BM + BN) * BJ * 4)
#define KB_BYTES (WG_N * 128)           // a consumer's K-major B tile: WG_N rows of 32 j
#define UNITS (WG_N / 64)               // 4 x 4 transpose blocks a consumer thread moves a K tile

static_assert(WG_M == 1 || WG_M == 2, "WG_M in 1, 2");
static_assert(BN == 128 || BN == 256, "BN in 128, 256 (a consumer's wgmma N 64 or 128)");
static_assert(STAGES >= 2, "two stages at least");
static_assert(JT_PER % 2 == 0, "K tiles of a split in pairs");
static_assert(P_C % 32 == 0 && P_K % 4 == 0, "one tap's 32 channels an im2col box; 16-byte rows of dy");
static_assert(XS_C == 1 && WS_C == 1 && YS_C == 1, "channels-last x, dw and dy");
static_assert(YS_W == P_K && YS_H == P_WO * YS_W && YS_N == P_HO * YS_H, "dense NHWC dy");
static_assert(WS_X == P_C && WS_Y == P_X * WS_X && WS_K == P_Y * WS_Y, "dense KYXC dw");

__device__ __forceinline__ u32 lds32(u32 addr)
{
    u32 v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ uint4 lds128(u32 addr)
{
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr)
                 : "memory");
    return v;
}
__device__ __forceinline__ void sts128(u32 addr, u32 a, u32 b, u32 c, u32 d)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// Per-thread offsets of the K tile's shared-memory traffic (bytes within a stage or a K-major tile).
struct Offsets
{
    u32 a[2][2];            // A fragment register (g + 8h, t + 4e) of m64 block 0, k8 step 0: a[h][e]
    u32 src[UNITS];         // transpose block u: its first 16-byte load in the raw stage's B (j-rows 4jq .. + 3)
    u32 dst[UNITS];         // its first 16-byte store in the K-major tile (rows 4cq .. + 3)
    u32 jq8[UNITS];         // its j quad jq (the stores' swizzle) | its column chunk cq % 8 << 8 (the loads')
};

// The raw MN-major tile: element (mn, j) at block mn / 32, j-row j, chunk ((mn % 32) / 4) ^ (j % 8), word mn % 4.
// A fragment (warp wi, lane l): rows mn = wi*16 + l/4 + 8h, j = l%4 + 4e (+ 64 i rows, + 8 k8 j: whole blocks and
// swizzle periods, added as constants).
// Transpose block (cq, jq) of a consumer: its columns 4cq .. + 3 x j 4jq .. + 3. Unit q takes i = q % 8, a shift
// s = (q / 8) % 8 and a 32-column block q / 64: cq = 8 (q / 64) + i, jq = (i + s) % 8, so each block's 8 x 8 (cq, jq)
// pairs are taken once, and the 8 lanes of a phase (one i each, one s) hit 8 distinct 16-byte bank groups both ways:
// the loads (j-row 4jq + e, chunk i ^ (4 (jq % 2) + e)) and the stores (row 4cq + w, chunk jq ^ (4 (i % 2) + w)), each
// XOR of a permutation of i with a term that flips only bit 2 between lanes of unlike parity.
__device__ __forceinline__ Offsets make_offsets(int wg, int tw)
{
    Offsets o;
    const int wi = tw >> 5, l = tw & 31;
#pragma unroll
    for(int h = 0; h < 2; ++h)
#pragma unroll
        for(int e = 0; e < 2; ++e)
        {
            const int mn = wi * 16 + (l >> 2) + 8 * h, j = (l & 3) + 4 * e;
            o.a[h][e] = (u32)((mn >> 5) * MNBLK + j * 128 + ((((mn & 31) >> 2) ^ (j & 7)) << 4) + (mn & 3) * 4);
        }
#pragma unroll
    for(int u = 0; u < UNITS; ++u)
    {
        const int q = tw + 128 * u;
        const int cq = ((q >> 6) << 3) | (q & 7);              // column quad of the consumer's WG_N columns
        const int jq = ((q & 7) + (q >> 3)) & 7;               // j quad of the K tile
        const int cqg = wg * (WG_N / 4) + cq;                   // column quad of the tile
        o.src[u] = (u32)(A_BYTES + (cqg >> 3) * MNBLK + 4 * jq * 128);
        o.dst[u] = (u32)(4 * cq * 128);
        o.jq8[u] = (u32)(jq | ((cqg & 7) << 8));
    }
    return o;
}

// One K tile at stream position pos: wait for the stage, transpose (rounded) this consumer's B columns into K-major
// tile kb, load (rounded) the A fragments into register set a, release the stage, then the 4 x WG_M wgmma as one
// group; returns once the group before (which read register set `other` and the other K-major tile) has completed.
__device__ __forceinline__ void k_tile(float (&acc)[WG_M][WG_N / 2], u32 (&a)[WG_M][4][4], u32 (&other)[WG_M][4][4],
                                       int pos, u32 sbase, u32 kb, u32 full0, u32 empty0, const Offsets& o, int wg)
{
    const int s = pos % STAGES;
    mbar_wait(full0 + s * 8, (u32)((pos / STAGES) & 1));
    const u32 sn = sbase + s * STAGE_BYTES;
#pragma unroll
    for(int u = 0; u < UNITS; ++u)
    {
        const int cq8 = (int)(o.jq8[u] >> 8), jq = (int)(o.jq8[u] & 0xFF);
        uint4 v[4];
#pragma unroll
        for(int e = 0; e < 4; ++e)      // j-row 4jq + e: its chunk of the block's 4 columns
            v[e] = lds128(sn + o.src[u] + e * 128 + ((cq8 ^ ((4 * jq + e) & 7)) << 4));
        // row 4cq + w of the K-major tile: j 4jq .. + 3 of column w
        const u32 r0 = o.dst[u];
        const int rw = (int)(r0 >> 7) & 7;
        sts128(kb + r0 + 0 * 128 + ((jq ^ ((rw + 0) & 7)) << 4), tf32_rna(v[0].x), tf32_rna(v[1].x), tf32_rna(v[2].x), tf32_rna(v[3].x));
        sts128(kb + r0 + 1 * 128 + ((jq ^ ((rw + 1) & 7)) << 4), tf32_rna(v[0].y), tf32_rna(v[1].y), tf32_rna(v[2].y), tf32_rna(v[3].y));
        sts128(kb + r0 + 2 * 128 + ((jq ^ ((rw + 2) & 7)) << 4), tf32_rna(v[0].z), tf32_rna(v[1].z), tf32_rna(v[2].z), tf32_rna(v[3].z));
        sts128(kb + r0 + 3 * 128 + ((jq ^ ((rw + 3) & 7)) << 4), tf32_rna(v[0].w), tf32_rna(v[1].w), tf32_rna(v[2].w), tf32_rna(v[3].w));
    }
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int k8 = 0; k8 < 4; ++k8)
#pragma unroll
            for(int r = 0; r < 4; ++r)      // register r: (g + 8 (r & 1), t + 4 (r >> 1))
                a[i][k8][r] = tf32_rna(lds32(sn + i * 2 * MNBLK + k8 * 1024 + o.a[r & 1][r >> 1]));
    fence_proxy_async();                    // this thread's K-major stores -> the wgmma's (async proxy) reads
    bar_sync<1, 256>();                     // both consumers' K-major tiles are written (no branch between groups)
    mbar_arrive(empty0 + s * 8);            // the raw stage has been read
    rs_group<WG_N>(acc, a, other, kb);      // returns once the previous K tile's group has completed
}

extern "C" __global__ void __launch_bounds__(NT, 1)
igemm_hopper_wrw_tf32_rn(const float* __restrict__ dy, const float* __restrict__ x, float* __restrict__ dw,
                         float* __restrict__ ws, const __grid_constant__ TmaMap tmdy, const __grid_constant__ TmaMap tmx)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
    __shared__ __align__(8) u64 bars[2 * STAGES];    // full[0 .. STAGES), empty[0 .. STAGES)
    const u32 full0 = smem_u32(bars), empty0 = full0 + STAGES * 8;
    grid_dep_launch();      // the split's reduce (a programmatic dependent) may start: it waits for this grid
    const int t = threadIdx.x, wg = t >> 7;
    if(t == 0)
    {
#pragma unroll
        for(int s = 0; s < STAGES; ++s)
        {
            mbar_init(full0 + s * 8, 1);
            mbar_init(empty0 + s * 8, 256);     // both consumer warpgroups read a stage
        }
        fence_mbar_init();
    }
    __syncthreads();
    const int m0 = (int)(blockIdx.x / ((GEMM_N + BN - 1) / BN)) * BM;
    const int n0 = (int)(blockIdx.x % ((GEMM_N + BN - 1) / BN)) * BN;
    const index_t jt0 = (index_t)blockIdx.y * JT_PER;
    const index_t jt1 = jt0 + JT_PER < JTILES ? jt0 + JT_PER : JTILES;
    const int nt = (int)(jt1 - jt0 + 1) & ~1;          // in pairs: an odd count ends with a tile of zeros

    if(wg == 2)
    {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if(t == 256)
        {
#pragma unroll 1
            for(int i = 0; i < nt; ++i)
            {
                const int s = producer_stage<STAGES>(empty0, i);
                const u32 sn = sbase + s * STAGE_BYTES, bar = full0 + s * 8;
                const index_t jt = jt0 + i;
                // past the reduction (the pair's filler): dy's rows from J on are zeros; x's box from the chunk's start
                const index_t j0 = (jt < JTILES ? jt : jt0) * BJ;
                const int jdy = (int)(jt < JTILES ? jt * BJ : GEMM_J);
                // the K tile's first output pixel (n, oh, ow) as the first filter base (ow*sw - pw, oh*sh - ph, n)
                const index_t q = j0 / P_WO;
                const int wb = (int)(j0 - q * P_WO) * P_SW - P_PW;
                const int hb = (int)(q % P_HO) * P_SH - P_PH;
                const int nb = (int)(q / P_HO);
                mbar_expect_tx(bar, STAGE_BYTES);
#pragma unroll
                for(int b = 0; b < BM / 32; ++b)
                    tma_tile_2d(sn + b * MNBLK, &tmdy, m0 + b * 32, jdy, bar);
#pragma unroll
                for(int b = 0; b < BN / 32; ++b)
                {
                    // a block past GEMM_N (never stored) reads tap 0 instead
                    const int colb = n0 + b * 32 < GEMM_N ? n0 + b * 32 : 0;
                    const int tap = colb / P_C, c = colb - tap * P_C;
                    tma_im2col_4d(sn + A_BYTES + b * MNBLK, &tmx, c, wb, hb, nb, (unsigned short)((tap % P_X) * P_DW),
                                  (unsigned short)((tap / P_X) * P_DH), bar);
                }
            }
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int tw = t & 127, wi = tw >> 5, l = t & 31;
    const Offsets o = make_offsets(wg, tw);
    const u32 kb0 = sbase + STAGES * STAGE_BYTES + (u32)wg * 2 * KB_BYTES;     // this consumer's two K-major tiles
    float acc[WG_M][WG_N / 2];
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int jj = 0; jj < WG_N / 2; ++jj)
        {
            acc[i][jj] = 0.f;
            reg_fence(acc[i][jj]);
        }
    u32 af0[WG_M][4][4], af1[WG_M][4][4];     // two K tiles' A fragments: [m64 block][k8 step][register]
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int k8 = 0; k8 < 4; ++k8)
#pragma unroll
            for(int e = 0; e < 4; ++e) af1[i][k8][e] = 0u;
#pragma unroll 1
    for(int kt = 0; kt < nt; kt += 2)
    {
        k_tile(acc, af0, af1, kt, sbase, kb0, full0, empty0, o, wg);
        k_tile(acc, af1, af0, kt + 1, sbase, kb0 + KB_BYTES, full0, empty0, o, wg);
    }
    wgmma_wait<0>();
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int jj = 0; jj < WG_N / 2; ++jj) reg_fence(acc[i][jj]);
    // acc[i][4jj + 2h + e]: dw row i*64 + wi*16 + l/4 + 8h of the tile, column wg*WG_N + 8jj + 2(l%4) + e
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int h = 0; h < 2; ++h)
        {
            const int k = m0 + i * 64 + wi * 16 + (l >> 2) + 8 * h;
            if(k >= GEMM_M)
                continue;
            const int c0 = n0 + wg * WG_N + 2 * (l & 3);
#if SPLITK > 1
            float* out = ws + ((long long)blockIdx.y * GEMM_M + k) * GEMM_N;
#else
            float* out = dw + (long long)k * GEMM_N;
#endif
#pragma unroll
            for(int jj = 0; jj < WG_N / 8; ++jj)
                if(c0 + 8 * jj < GEMM_N)
                    *reinterpret_cast<float2*>(out + c0 + 8 * jj) = make_float2(acc[i][4 * jj + 2 * h], acc[i][4 * jj + 2 * h + 1]);
        }
}

// dw = the SPLITK partial tiles summed in split order: one float4 of dw a thread (GEMM_N % 4 == 0)
extern "C" __global__ void __launch_bounds__(RED_BLOCK)
igemm_hopper_wrw_tf32_reduce(const float* __restrict__ ws, float* __restrict__ dw)
{
    grid_dep_wait();        // launched as the programmatic dependent of the partials' kernel
    constexpr long long total4 = (long long)GEMM_M * GEMM_N / 4;
    const long long i = blockIdx.x * (long long)RED_BLOCK + threadIdx.x;
    if(i >= total4)
        return;
    float4 s = reinterpret_cast<const float4*>(ws)[i];
#pragma unroll 4
    for(int p = 1; p < SPLITK; ++p)
    {
        const float4 v = reinterpret_cast<const float4*>(ws)[p * total4 + i];
        s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    reinterpret_cast<float4*>(dw)[i] = s;
}
