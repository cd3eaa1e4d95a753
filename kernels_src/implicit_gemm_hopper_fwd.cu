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
// WGS warpgroups (128 threads each) all load (unless WSPEC, below); warpgroup g multiplies rows
// [g*64*WG_M, (g+1)*64*WG_M) of the block tile against all BN columns (WG_M m64 blocks of one
// m64nBNk16 each per k16 step). BN is 64, 128 or 256, or 32 for 16-bit narrow outputs (wgmma_n32; with B_MN
// on the copy engine only), or 192 for 16-bit data on the copy engine (wgmma_n192; one m64 block a warpgroup; B_MN:
// three MN-major blocks).
// With padded K tiles (TMA, P_C % 64 != 0) a tap's last K tile multiplies only the k16 steps that hold live channels
// (mma_steps<LIVE_K16>).
// PERSIST = 1 (N <= BN): the grid is at most the blocks that fit the GPU at once; each block loads all
// of B (KTILES x BN x 64) into shared memory once, then streams A through STAGES buffers over its M
// tiles (blockIdx.x, + gridDim.x, ...) without draining the pipeline between tiles; a tile's output
// goes through its own shared buffer while the next tile's loads are in flight.
// Grid (PERSIST = 0): x = M tiles x N tiles, N tiles fastest. Output channels-last, FP32 rounded to data_t,
// staged in shared memory and stored 16 bytes at a time (K % 8 == 0): dense NHWC (y offset of (m, k) =
// m*K + k), or with pixel strides YS_N/YS_H/YS_W of a larger tensor (y_offset: one stride phase of a
// strided backward-data problem's dx, solvers/implicit_gemm_hopper_bwd.py).
// Split-K (PERSIST = 0 only): grid.y = SPLITK chunks of KT_PER consecutive K tiles (the last may be
// shorter, none empty). With SPLITK > 1 a block stages its FP32 partial tile in shared memory and
// stores it 16 bytes at a time to ws[chunk][m][k] (an M x K plane per chunk, 64-bit offsets), and
// igemm_hopper_fwd_reduce sums the chunks in chunk order (deterministic, no atomics) and writes y.
// SPLITK = 1 builds the unsplit kernel (chunk = all K tiles, direct epilogue; ws is not touched).
// B_MN = 1 (a stride phase of backward data): w is the backward-data filter itself, P_C x BW_FY x BW_FX
// x P_K (KYXC: dy's channels, its taps, dx's channels = the GEMM's N), and B[kk, n] = w[k, r, s, n]
// for kk = (tap (a, b), k) with r = BW_R0 + (P_Y-1-a)*BW_SH, s = BW_S0 + (P_X-1-b)*BW_SW (the phase's
// taps, reversed). Rows kk are then contiguous along n, so the B tile is staged MN-major (64-wide n
// blocks of 64 kk rows x 128 bytes, 8192 bytes apart, 128-byte swizzle) and multiplied with
// imm-trans-b = 1: no flipped copy of w.
// Warp specialisation (WSPEC = 1): one more warpgroup, the producer, issues every cp.async; the WGS
// consumer warpgroups only wait and multiply, with no block-wide barrier in the mainloop. Stage s has a
// full and an empty mbarrier (implicit_gemm_hopper_mbar.cuh): the 128 producer threads arrive on full[s]
// once their copies of the stage have landed, after fence.proxy.async (writer-side ordering of the
// cp.async writes before wgmma reads them); each consumer thread arrives on empty[s] once its wgmma that
// read the stage has completed. The producer keeps LAG = STAGES - 2 stages of copies in flight before it
// signals the oldest. PERSIST: the stages carry one stream of (tile, K tile) positions, the resident B is
// in the producer's first copy group, and the consumers alone stage and store each output tile, between
// two named barriers of their NT_MMA threads.
// Copy engine (TMA = 1; WSPEC; C % 64 == 0, or unsplit 16-bit with each tap's K tiles padded: TAP_K): one producer
// thread fills a stage with tensor-map copies (implicit_gemm_hopper_tma.cuh): the A tile as an im2col box of x (BM
// consecutive output pixels m0 .. m0 + BM - 1 as filter bases from m0's (ow*sw - pw, oh*sh - ph, n), the K tile's
// tap as the filter offset, its 64 channels; zeros outside the image and past M) and the B tile as a 64 x BN box of
// w's KYXC rows, or with B_MN as BN / 64 boxes of 64 n x 64 kk rows of the reversed tap's (n, k) plane of the
// backward-data filter, each landing as one MN-major block; the stage's full mbarrier completes on their bytes. The
// maps are the last two arguments. A_DENSE = 1 (a 1x1 filter, stride 1, no padding: A is x as a dense M x C matrix,
// or dy for a backward-data phase of the same form): the A tile is a 64 x BM box of a tiled map of it, from row m0
// (the same bytes, in the same swizzled layout, without the im2col traversal).
// Persistent copy engine (TMA = 1, PERSIST = 1; any N): the grid is at most the blocks that fit the GPU at
// once; block b takes output tiles b, b + gridDim.x, ... (N tiles fastest) and its producer thread streams
// every (tile, K tile) position's A and B boxes through the STAGES buffers without draining between tiles,
// while the consumers stage and store each finished tile through a shared output tile of its own
// ([BM][BN + 8] after the stages): the next tile's copies overlap that epilogue.
// Resident B on the copy engine (PERSIST = 2: TMA, all of N in one tile, not ping-pong): every K tile of B (with B_MN
// each as its MN-major blocks) lands once, at the front of shared memory ([KTILES][B tile][STAGES][A tile][output
// tile]), with the stream's first A box and on its full barrier; the stages then carry A boxes only, and B is not read
// from L2 again.
// Ping-pong (PINGPONG = 1; persistent copy engine, WGS = 2): each consumer warpgroup multiplies whole BM x BN
// tiles (BM / 64 m64 blocks), warpgroup g the block's tiles j = g, g + 2, ... (tile blockIdx.x + j * gridDim.x),
// each through an output tile of its own ([2][BM][BN + 8]), so one warpgroup's epilogue overlaps the other's
// K loop. The K loops alternate (named barriers 4 and 5): warpgroup g waits on the full barrier of its tile's
// first position only after the other has waited on every position of the tile before, so each position's
// wait falls in the phase that position fills (an mbarrier tells phases apart only by parity).
// TF32 (IS_TF32 = 1; forward, not B_MN): FP32 x, w and y, multiplied as TF32 by m64nNk8 wgmma
// (implicit_gemm_hopper_tf32.cuh). A 128-byte tile row then holds 32 elements: K tiles are BK = 32 deep, a 16-byte
// chunk is EPC = 4 channels, and the output is staged and stored as FP32; the byte layout of every tile, its
// descriptors and its copies are the 16-bit kernels'.
// 32-deep 16-bit K tiles (ROW64 = 1; copy engine, unsplit): K-major rows of 64 bytes (32 channels of one tap) under the
// 64-byte swizzle (16-byte chunk c of row r at chunk c ^ ((r / 2) % 4), 8-row groups 512 bytes apart), two k16 steps a
// tile; the maps' boxes are 32 channels wide. A 32-channel tap is then one whole tile, with half the bytes a stage.
// With B_MN the filter tile stays MN-major and 128-byte swizzled, its 64-wide n blocks 32 kk rows (MNBLK) apart.
// Backward data with BN = 32 (copy engine only): the MN-major filter tile is one block of 64-byte rows of 32 n under
// the 64-byte swizzle (desc_mn's layout 2, 8-row groups 512 bytes apart).
// Fused epilogue (ConvImplicitGemmHopperFwdFused): EPI_BIAS = 1 adds bias[k] (data_t, one per output
// channel) to the FP32 sum, EPI_ACT then applies ReLU (1) or the exact GELU v * Phi(v) (2), before the
// rounding to data_t; split, the reduce kernel applies it. The kernels then take the bias pointer last.
#ifndef B_MN
#define B_MN 0
#endif
#ifndef A_DENSE
#define A_DENSE 0
#endif
#if B_MN
#define WG_TRANS "0, 1"
#endif
#include "implicit_gemm_hopper.cuh"
#ifndef IS_TF32
#define IS_TF32 0
#endif
#if IS_TF32
#include "implicit_gemm_hopper_tf32.cuh"
#endif
#ifndef WSPEC
#define WSPEC 0         // 1: a producer warpgroup loads, the WGS consumer warpgroups multiply
#endif
#if WSPEC
#include "implicit_gemm_hopper_mbar.cuh"
#endif
#ifndef TMA
#define TMA 0           // 1: the producer's copies by the copy engine (tensor maps, last two arguments)
#endif
#if TMA
#include "implicit_gemm_hopper_tma.cuh"
#define TMA_PARAM , const __grid_constant__ TmaMap tmx, const __grid_constant__ TmaMap tmw
#else
#define TMA_PARAM
#endif

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
#define B_RES (PERSIST == 2)    // persistent copy engine with all of B resident (N <= BN)

#ifndef PINGPONG
#define PINGPONG 0      // 1: the two consumer warpgroups take alternate tiles (persistent copy engine only)
#endif

#ifndef SPLITK
#define SPLITK 1        // effective reduction chunks (grid.y); the host derives it from the tunable
#endif
#ifndef KT_PER
#define KT_PER KTILES   // 64-deep K tiles per chunk (SPLITK > 1)
#endif
#ifndef RED_BLOCK
#define RED_BLOCK 256   // threads of a reduce block
#endif

#ifndef EPI_BIAS
#define EPI_BIAS 0
#endif
#ifndef EPI_ACT
#define EPI_ACT 0       // 0 none, 1 ReLU, 2 GELU (erf)
#endif
#define EPI (EPI_BIAS || EPI_ACT)
#if EPI
// the fused kernels' extra argument and its use in the epilogue helpers
#define EPI_PARAM , const data_t* __restrict__ bias
#define EPI_ARGS , const data_t* __restrict__ bias, int n0
#define EPI_PASS(n0) , bias, n0
#else
#define EPI_PARAM
#define EPI_ARGS
#define EPI_PASS(n0)
#endif

#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1    // blocks per SM the register allocation must allow (the host sets 2 when shared memory does)
#endif

#ifndef ROW64
#define ROW64 0         // 1: 16-bit K tiles 32 deep, 64-byte rows and swizzle (copy engine only)
#endif
#define ROWB (ROW64 ? 64 : 128)         // bytes of a K tile's row
#define BK (IS_TF32 || ROW64 ? 32 : 64) // K tile depth: the elements of one row
#define EPC (IS_TF32 ? 4 : 8)           // elements of a 16-byte chunk
#define KSTEPS (ROWB / 32)              // 32-byte wgmma k steps of a K tile (k16 of 16-bit data, k8 of TF32)
#define NT_MMA (WGS * 128)              // the consumer (wgmma) threads: warpgroups 0 .. WGS - 1
#define NT (NT_MMA + WSPEC * 128)       // block threads; with WSPEC, warpgroup WGS is the producer
#define NT_LOAD (WSPEC ? 128 : NT)      // the threads that issue cp.async
#define LAG (STAGES - 2)                // WSPEC: stages of copies in flight before the oldest is signalled
#define WG_M (PINGPONG ? BM / 64 : BM / (64 * WGS))     // m64 blocks a warpgroup multiplies
#define GEMM_M ((index_t)P_N * P_HO * P_WO)
#define GEMM_N P_K
#define GEMM_K (P_C * P_Y * P_X)
#if TMA && P_C % BK
// copy engine with channels not a multiple of BK: a tap's K extent rounded up to whole K tiles (TAP_K), each tile
// one tap's channels c .. c + BK - 1; the copy engine writes zeros for channels past P_C in both operands
#define TAP_K ((P_C + BK - 1) / BK * BK)
#define KTILES (P_Y * P_X * TAP_K / BK)
// a tap's last K tile holds P_C % BK live channels: its k16 steps past them multiply zeros and are skipped
#define TAP_TILES (TAP_K / BK)
#define LIVE_K16 ((P_C % BK + 15) / 16)
#else
#define KTILES ((GEMM_K + BK - 1) / BK)
#endif
#define NTILES_N ((GEMM_N + BN - 1) / BN)
#define A_BYTES (BM * ROWB)
#define B_BYTES (BN * ROWB)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define RSTEP (NT_LOAD / 8)     // rows covered by one pass of the loaders (8 chunks per row)
#define AR (BM / RSTEP)
#define BR (BN / RSTEP)
#define BIG (1 << 29)

static_assert(BM % (64 * (PINGPONG ? 1 : WGS)) == 0 && (WG_M == 1 || WG_M == 2), "BM = 64 * WGS * (1 or 2), ping-pong 64 * (1 or 2)");
static_assert(!PINGPONG || (PERSIST && TMA && WGS == 2), "ping-pong: persistent copy engine, two consumer warpgroups");
static_assert(BN == 64 || BN == 128 || BN == 256 || (BN == 32 && !IS_TF32 && (!B_MN || TMA)) ||
              (BN == 192 && !IS_TF32 && TMA && !PINGPONG),
              "BN in 64, 128, 256; 32 for 16-bit narrow outputs (backward data: copy engine); 192 for 16-bit data on "
              "the copy engine");
static_assert(WG_M * BN <= 256, "at most 128 accumulators per thread");
static_assert(STAGES >= 3, "prefetch distance STAGES - 2 >= 1");
static_assert(!IS_TF32 || !B_MN, "TF32 operands K-major only (no backward-data MN-major filter)");
static_assert(!ROW64 || (TMA && !IS_TF32 && SPLITK == 1), "32-deep 16-bit K tiles: copy engine, 16-bit, unsplit");
static_assert(PERSIST || BM * (BN + 8) * (int)sizeof(data_t) <= STAGES * STAGE_BYTES, "the staged output tile fits the pipeline's buffers");
static_assert(!PERSIST || TMA || NTILES_N == 1, "persistent blocks with resident B cover all of N");
static_assert(!B_RES || (TMA && !PINGPONG && NTILES_N == 1), "resident B: copy engine, all of N in one tile");
static_assert(SPLITK >= 1 && (SPLITK == 1 || !PERSIST), "split-K with non-persistent blocks only");
static_assert(SPLITK == 1 || (KT_PER >= 1 && (SPLITK - 1) * KT_PER < KTILES && SPLITK * KT_PER >= KTILES),
              "SPLITK chunks of KT_PER K tiles cover the K tiles, none empty");
static_assert(SPLITK == 1 || BM * (BN + 8) * 4 <= STAGES * STAGE_BYTES, "the staged FP32 partial tile fits the pipeline's buffers");
static_assert(P_K % EPC == 0, "16-byte chunks of output channels");
static_assert(BM % RSTEP == 0 && BN % RSTEP == 0, "loader rows");
static_assert(P_C % EPC == 0, "16-byte chunks of channels");
static_assert(XS_C == 1 && WS_C == 1 && YS_C == 1, "channels-last x, w and y");
static_assert(YS_W >= P_K && YS_W % EPC == 0 && YS_H % EPC == 0 && YS_N % EPC == 0, "16-byte aligned channels-last y pixels");
static_assert(B_MN || (WS_X == P_C && WS_Y == P_X * WS_X && WS_K == P_Y * WS_Y), "dense KYXC w");
static_assert(!TMA || (WSPEC && (P_C % BK == 0 || (SPLITK == 1 && !IS_TF32))), "TMA: a producer warpgroup, K tiles of one tap");
static_assert(!A_DENSE || (TMA && P_Y == 1 && P_X == 1 && P_SH == 1 && P_SW == 1 && P_PH == 0 && P_PW == 0 &&
                             XS_W == P_C && XS_H == P_WI * XS_W && XS_N == P_HI * XS_H && P_HI == P_HO && P_WI == P_WO),
              "A_DENSE: copy engine, 1x1 filter, stride 1, no padding, dense channels-last A");

#define Y_DENSE (YS_W == P_K && YS_H == P_WO * YS_W && YS_N == P_HO * YS_H)

// y offset of output pixel m = (n, oh, ow)
__device__ __forceinline__ index_t y_offset(index_t m)
{
#if Y_DENSE
    return m * P_K;
#else
    const int ow = (int)(m % P_WO); m /= P_WO;
    const int oh = (int)(m % P_HO);
    return (m / P_HO) * YS_N + (index_t)oh * YS_H + (index_t)ow * YS_W;
#endif
}

#if ROW64 || (B_MN && BN == 32)
// Shared-memory matrix descriptor under the 64-byte swizzle, 8-row groups 512 bytes apart (stride byte offset): a
// K-major tile of 64-byte rows (ROW64), or backward data's MN-major filter tile of 32 n, one 64-byte row a kk row
// (BN = 32: a single block, so no leading byte offset)
__device__ __forceinline__ u64 desc_sw64(u32 saddr)
{
    u64 d = (u64)((saddr & 0x3FFFF) >> 4);
    d |= (u64)1 << 16;
    d |= (u64)(512 >> 4) << 32;
    d |= (u64)2 << 62;
    return d;
}
#endif
#if ROW64
#define desc_k desc_sw64
#else
#define desc_k desc_sw128
#endif

#if BN == 32
// m64n32k16 (16-bit, K-major A and B): 16 FP32 accumulators a thread, fragments as the wider wgmma's
__device__ __forceinline__ void wgmma_n32(float* d, u64 da, u64 db)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32." WG_AB "." WG_AB " "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, " WG_TRANS ";\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(da), "l"(db), "n"(1));
}
#endif

#if BN == 192
// m64n192k16 (16-bit, K-major A and B): 96 FP32 accumulators a thread, fragments as the other widths' (a tile of three
// 64-wide column blocks for N a multiple of 192, which 128- and 256-wide tiles would cover with a third idle)
__device__ __forceinline__ void wgmma_n192(float* d, u64 da, u64 db)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32." WG_AB "." WG_AB " "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, " WG_TRANS ";\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "l"(da), "l"(db), "n"(1));
}
#endif

__device__ __forceinline__ void wgmma_tile(float* d, u64 da, u64 db)
{
#if IS_TF32 && BN == 64
    wgmma_tf32_n64(d, da, db);
#elif IS_TF32 && BN == 128
    wgmma_tf32_n128(d, da, db);
#elif IS_TF32
    wgmma_tf32_n256(d, da, db);
#elif BN == 64
    wgmma_n64(d, da, db);
#elif BN == 128
    wgmma_n128(d, da, db);
#elif BN == 32
    wgmma_n32(d, da, db);
#elif BN == 192
    wgmma_n192(d, da, db);
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
    const int kk = kt * BK + ch * EPC;
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

#if B_MN
#define MNBLK (BK * 128)        // bytes of one 64-wide n block (BK kk rows)
#define CPR_B (BN / 8)          // 16-byte chunks per kk row
#define KSTEP_B (NT_LOAD / CPR_B)    // kk rows per pass of the loaders
static_assert(TMA || (NT_LOAD % CPR_B == 0 && BK % KSTEP_B == 0), "MN-major B loader rows (cp.async)");
#define BW_WS_K ((index_t)BW_FY * BW_FX * P_K)

// byte offset of n chunk cc (8 elements) of kk row r in the MN-major tile
__device__ __forceinline__ u32 mn_off(int r, int cc) { return (u32)((cc >> 3) * MNBLK + r * 128 + (((cc & 7) ^ (r & 7)) << 4)); }

#if BN == 32
// 32 wide (copy engine only): a kk row is one 64-byte row of n under the 64-byte swizzle, one block
#define MN_ROWB 64
#define desc_mn desc_sw64
#else
// MN-major, 128-byte-swizzled descriptor: leading byte offset = next 64-wide n block, stride byte
// offset = next 8 kk rows (as implicit_gemm_hopper_wrw.cu's operands)
#define MN_ROWB 128
__device__ __forceinline__ u64 desc_mn(u32 saddr)
{
    u64 d = (u64)((saddr & 0x3FFFF) >> 4);
    d |= (u64)(MNBLK >> 4) << 16;
    d |= (u64)(1024 >> 4) << 32;
    d |= (u64)1 << 62;
    return d;
}
#endif

// B tile kt (64 kk rows x BN n from n0) read in place from the backward-data filter: each kk row is
// one (tap, k), a run of BN channels of w; chunk cc = t % CPR_B of rows t / CPR_B + i * KSTEP_B.
__device__ __forceinline__ void load_b(const data_t* __restrict__ w, int n0, int kt, u32 sb, int r0, int ch)
{
    const int t = r0 * 8 + ch;
    const int cc = t % CPR_B;
    const int n = n0 + cc * 8;
    const bool nok = n < GEMM_N;
#pragma unroll
    for(int i = 0; i < BK / KSTEP_B; ++i)
    {
        const int row = t / CPR_B + i * KSTEP_B;
        const int kk = kt * BK + row;
        const bool ok = nok && kk < GEMM_K;
        const int tap = kk / P_C;
        const int k = kk - tap * P_C;
        const int a = tap / P_X, b = tap - (tap / P_X) * P_X;
        const int r = BW_R0 + (P_Y - 1 - a) * BW_SH, s = BW_S0 + (P_X - 1 - b) * BW_SW;
        cp_async16(sb + mn_off(row, cc), w + (ok ? (index_t)k * BW_WS_K + (index_t)(r * BW_FX + s) * P_K + n : 0), ok);
    }
}
#else
// B tile kt (BN rows k from n0 x 64 kk) into the swizzled buffer at sb.
__device__ __forceinline__ void load_b(const data_t* __restrict__ w, int n0, int kt, u32 sb, int r0, int ch)
{
    const int kk = kt * BK + ch * EPC;
#pragma unroll
    for(int i = 0; i < BR; ++i)
    {
        const int k = n0 + r0 + i * RSTEP;
        const bool ok = kk < GEMM_K && k < GEMM_N;
        cp_async16(sb + sw128(r0 + i * RSTEP, ch), w + (ok ? (index_t)k * WS_K + kk : 0), ok);
    }
}
#endif

// The first STEPS 32-byte k steps of one K tile: warpgroup wg's WG_M m64 blocks x BN (asynchronous; the caller
// commits).
template <int STEPS>
__device__ __forceinline__ void mma_steps(float (&acc)[WG_M][BN / 2], u32 sa, u32 sb, int wg)
{
    wgmma_fence();
#pragma unroll
    for(int k16 = 0; k16 < STEPS; ++k16)
    {
#if B_MN
        const u64 db = desc_mn(sb + k16 * 16 * MN_ROWB);      // 16 kk rows further
#else
        const u64 db = desc_k(sb + k16 * 32);
#endif
#pragma unroll
        for(int i = 0; i < WG_M; ++i)
            wgmma_tile(acc[i], desc_k(sa + (wg * WG_M + i) * 64 * ROWB + k16 * 32), db);
    }
    wgmma_commit();
}

// One K tile: all KSTEPS k steps.
__device__ __forceinline__ void mma_tile(float (&acc)[WG_M][BN / 2], u32 sa, u32 sb, int wg)
{
    mma_steps<KSTEPS>(acc, sa, sb, wg);
}

#if TMA && P_C % BK
// stage s's K tile at consume_tile's kt (padded configs are unsplit: kt is the tile's index in the reduction); a tap's
// last K tile (padded K tiles) multiplies its first LIVE_K16 k steps only, the rest being zeros
#define MMA_STAGE(kt, a, b) do { if((kt) % TAP_TILES == TAP_TILES - 1) mma_steps<LIVE_K16>(acc, a, b, wg); \
                                 else mma_tile(acc, a, b, wg); } while(0)
#else
#define MMA_STAGE(kt, a, b) mma_tile(acc, a, b, wg)
#endif

#if EPI
// v + bias[k] (k < GEMM_N: bias has GEMM_N elements), then the activation, in FP32
__device__ __forceinline__ float epi(float v, const data_t* __restrict__ bias, int k)
{
#if EPI_BIAS
    if(k < GEMM_N) v += (float)bias[k];
#endif
#if EPI_ACT == 1
    v = fmaxf(v, 0.f);
#elif EPI_ACT == 2
    v = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
#endif
    return v;
}
#define EPI_V(v, k) epi(v, bias, k)
#else
#define EPI_V(v, k) (v)
#endif

// FP32 pair -> two consecutive output elements at p (8-byte aligned for FP32, 4-byte for 16-bit)
__device__ __forceinline__ void store_out(data_t* p, float a, float b)
{
#if IS_TF32
    *reinterpret_cast<float2*>(p) = make_float2(a, b);
#else
    store_pair(p, a, b);
#endif
}

// Accumulators -> shared output tile cs ([BM][BN + 8] data_t): thread (warp wi, lane l) holds rows
// wi*16 + l/4 (+8) of its m64 blocks, columns 8j + 2(l%4) (+1); the 16-byte row padding puts the
// 8 rows of a warp's stores in distinct banks.
#define LDC (BN + 8)
__device__ __forceinline__ void acc_to_smem(float (&acc)[WG_M][BN / 2], data_t* cs, int t EPI_ARGS)
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
                const int c = j * 8 + (l & 3) * 2;
                store_out(cs + r * LDC + c, EPI_V(acc[i][4 * j + 2 * h], n0 + c), EPI_V(acc[i][4 * j + 2 * h + 1], n0 + c + 1));
            }
        }
}

// Shared output tile -> y, 16 bytes (EPC channels) per store.
template <int THREADS>
__device__ __forceinline__ void store_tile(data_t* __restrict__ y, const data_t* cs, index_t m0, int n0, int t)
{
    constexpr int CPR = BN / EPC;
#pragma unroll
    for(int q = t; q < BM * CPR; q += THREADS)
    {
        const int r = q / CPR, c8 = (q % CPR) * EPC;
        const index_t m = m0 + r;
        if(m < GEMM_M && n0 + c8 < GEMM_N)
            *reinterpret_cast<uint4*>(y + y_offset(m) + n0 + c8) = *reinterpret_cast<const uint4*>(cs + r * LDC + c8);
    }
}

// Split-K: accumulators -> shared FP32 tile cf ([BM][BN + 8] floats; same fragment walk as acc_to_smem).
// With the 8-float row padding the float2 stores of a half-warp (rows l/4 of 0..3) hit 32 distinct banks.
#define LDF (BN + 8)
__device__ __forceinline__ void acc_to_smem_f32(float (&acc)[WG_M][BN / 2], float* cf, int t)
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
                *reinterpret_cast<float2*>(cf + r * LDF + j * 8 + (l & 3) * 2) =
                    make_float2(acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]);
        }
}

// Shared FP32 tile -> this chunk's partial plane (M x K floats, row m at m * K), 16 bytes (4 channels)
// per store: consecutive threads take consecutive 16-byte pieces of a row (BN / 4 per row).
__device__ __forceinline__ void store_partial(float* __restrict__ part, const float* cf, index_t m0, int n0, int t)
{
    constexpr int CPR = BN / 4;
#pragma unroll
    for(int q = t; q < BM * CPR; q += NT)
    {
        const int r = q / CPR, c4 = (q % CPR) * 4;
        const long long m = (long long)m0 + r;
        if(m < GEMM_M && n0 + c4 < GEMM_N)
            *reinterpret_cast<float4*>(part + m * GEMM_N + n0 + c4) = *reinterpret_cast<const float4*>(cf + r * LDF + c4);
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

#if WSPEC
// the NT_MMA consumer threads only (named barrier 1; the producer warpgroup keeps loading)
__device__ __forceinline__ void consumer_sync() { bar_sync<1, NT_MMA>(); }

// One tile's K loop of a consumer warpgroup over stream positions pos0 .. pos0 + nkt - 1 (stage pos % STAGES, its
// full barrier's phase parity (pos / STAGES) % 2): A in the stage at sa0, B after it, or (B_RESIDENT) B's K tile kt
// resident at sb0 + kt * B_BYTES and A at sa0 + stage * A_BYTES. A stage is released once the wgmma after it is
// issued and its own has completed; the last position's wgmma is left in flight, its stage held (the caller's).
template <bool B_RESIDENT>
__device__ __forceinline__ void consume_tile(float (&acc)[WG_M][BN / 2], u32 full0, u32 empty0, index_t pos0, int nkt,
                                             u32 sa0, u32 sb0, int wg)
{
#pragma unroll 1
    for(int kt = 0; kt < nkt; ++kt)
    {
        const index_t pos = pos0 + kt;
        const int s = (int)(pos % STAGES);
        mbar_wait(full0 + s * 8, (u32)((pos / STAGES) & 1));
        if(B_RESIDENT)
            MMA_STAGE(kt, sa0 + s * A_BYTES, sb0 + kt * B_BYTES);
        else
            MMA_STAGE(kt, sa0 + s * STAGE_BYTES, sa0 + s * STAGE_BYTES + A_BYTES);
        wgmma_wait<1>();                 // position pos - 1's wgmma has completed: release its stage
        if(kt > 0)
            mbar_arrive(empty0 + (int)((pos - 1) % STAGES) * 8);
    }
}
#endif
#if PINGPONG
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
#endif

#if TMA
// The A box's origin for the tile from output pixel m0: the pixel (n, oh, ow) as the first filter base
// (ow*sw - pw, oh*sh - ph, n) of the im2col map, or with A_DENSE the row m0 of the dense map (M < 2^31)
__device__ __forceinline__ void tile_base(index_t m0, int& wb, int& hb, int& nb)
{
#if A_DENSE
    wb = (int)m0;
    hb = nb = 0;
#else
    const index_t q = m0 / P_WO;
    wb = (int)(m0 - q * P_WO) * P_SW - P_PW;
    hb = (int)(q % P_HO) * P_SH - P_PH;
    nb = (int)(q / P_HO);
#endif
}

#if B_MN || P_C % BK
// the filter's K tile of channels c .. c + BK - 1 of tap `tap` to dst, completing on bar: B_MN, the reversed tap's
// MN-major blocks of 64 n from n0 (one box of 32 n when BN = 32); else (padded taps) a box of w's 3-D map (C, Y*X, K)
__device__ __forceinline__ void tma_filter_tile(u32 dst, const TmaMap* tmw, int tap, int c, int n0, u32 bar)
{
#if B_MN
    const int a = tap / P_X, b = tap - a * P_X;
    const int wt = (BW_R0 + (P_Y - 1 - a) * BW_SH) * BW_FX + BW_S0 + (P_X - 1 - b) * BW_SW;
#pragma unroll
    for(int j = 0; j < (BN + 63) / 64; ++j)
        tma_tile_3d(dst + j * MNBLK, tmw, n0 + 64 * j, wt, c, bar);
#else
    tma_tile_3d(dst, tmw, c, tap, n0, bar);     // zeros past P_C
#endif
}
#endif

// Stage sn's copies of the K tile at kk (tap kk / C = (r, s), channels c .. c + 63), completing on bar: A as the
// im2col box from the tile's first filter base (wb, hb, nb) at the tap's filter offset; B as the 64 x BN box of w's
// rows n0 .. n0 + BN - 1, or (B_MN) as BN / 64 boxes of 64 n x 64 kk rows of the reversed tap's plane of the
// backward-data filter (a 3-D map: n, filter tap, k), each one MN-major block of MNBLK bytes. B_RES: the A box only,
// the barrier's phase waiting for `tx` bytes (tma_fill_b's too at the stream's first position).
__device__ __forceinline__ void tma_fill(u32 sn, u32 bar, const TmaMap* tmx, const TmaMap* tmw, int wb, int hb, int nb,
                                         int kk, int n0
#if B_RES
                                         , u32 tx
#endif
                                         )
{
#if P_C % BK
    const int tap = kk / TAP_K, c = kk - tap * TAP_K;
#else
    const int tap = kk / P_C, c = kk - tap * P_C;
#endif
#if B_RES
    mbar_expect_tx(bar, tx);
#else
    mbar_expect_tx(bar, STAGE_BYTES);
#endif
#if A_DENSE
    (void)c;
    tma_tile_2d(sn, tmx, kk, wb, bar);          // rows wb .. wb + BM - 1 (the tile's first row: tile_base), channels kk ..
#else
    tma_im2col_4d(sn, tmx, c, wb, hb, nb, (unsigned short)((tap % P_X) * P_DW), (unsigned short)((tap / P_X) * P_DH),
                  bar);
#endif
#if B_RES
    (void)tmw; (void)n0;
#elif B_MN || P_C % BK
    tma_filter_tile(sn + A_BYTES, tmw, tap, c, n0, bar);
#else
    tma_tile_2d(sn + A_BYTES, tmw, kk, n0, bar);
#endif
}

#if B_RES
// every K tile kt of B (64 x BN boxes of w's rows 0 .. BN - 1; padded taps: tile kt % TAP_TILES of tap kt / TAP_TILES;
// B_MN: the tile's BN / 64 MN-major blocks, as tma_fill's) to sb0 + kt * B_BYTES, completing on bar
__device__ __forceinline__ void tma_fill_b(u32 sb0, u32 bar, const TmaMap* tmw)
{
#pragma unroll 1
    for(int kt = 0; kt < KTILES; ++kt)
    {
#if P_C % BK
        const int tap = kt / TAP_TILES, c = (kt - tap * TAP_TILES) * BK;
        tma_filter_tile(sb0 + kt * B_BYTES, tmw, tap, c, 0, bar);
#elif B_MN
        const int tap = kt * BK / P_C, c = kt * BK - tap * P_C;
        tma_filter_tile(sb0 + kt * B_BYTES, tmw, tap, c, 0, bar);
#else
        tma_tile_2d(sb0 + kt * B_BYTES, tmw, kt * BK, 0, bar);
#endif
    }
}
#endif
#endif

extern "C" __global__ void __launch_bounds__(NT, MIN_BLOCKS)
igemm_hopper_fwd(const data_t* __restrict__ x, const data_t* __restrict__ w, data_t* __restrict__ y,
                 float* __restrict__ ws EPI_PARAM TMA_PARAM)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
    unsigned char* sgen = smem_raw + (sbase - smem_u32(smem_raw));   // generic pointer to sbase

    grid_dep_launch();      // a programmatic dependent (the next stride phase, the reduce) may start
    const int t = threadIdx.x;
    const int tl = WSPEC ? t - NT_MMA : t;      // this thread's place among the loaders (WSPEC: the producer's)
    const int ch = tl & 7;       // its 16-byte chunk of every row it loads
    const int r0 = tl >> 3;
    const int wg = t >> 7;
    float acc[WG_M][BN / 2];
    zero_acc(acc);
#if WSPEC
    __shared__ __align__(8) u64 bars[2 * STAGES];    // full[0 .. STAGES), empty[0 .. STAGES)
    const u32 full0 = smem_u32(bars), empty0 = full0 + STAGES * 8;
    if(t == 0)
    {
#pragma unroll
        for(int s = 0; s < STAGES; ++s)
        {
            mbar_init(full0 + s * 8, TMA ? 1 : NT_LOAD);
            mbar_init(empty0 + s * 8, PINGPONG ? 128 : NT_MMA);   // ping-pong: one warpgroup reads a stage
        }
#if TMA
        fence_mbar_init();
#endif
    }
    __syncthreads();
    const bool producer = wg == WGS;
#endif

#if !PERSIST
    // N tiles vary fastest: blocks running together share their A rows (the large operand) in L2
    const index_t m0 = (index_t)(blockIdx.x / NTILES_N) * BM;
    const int n0 = (int)(blockIdx.x % NTILES_N) * BN;
#if SPLITK > 1
    // this block's chunk: K tiles [kt0, kt0 + nkt)
    const int kt0 = (int)blockIdx.y * KT_PER;
    const int nkt = KTILES - kt0 < KT_PER ? KTILES - kt0 : KT_PER;
#else
    constexpr int kt0 = 0;
    constexpr int nkt = KTILES;
#endif

#if WSPEC
    if(producer)
    {
#if TMA
        if(tl == 0)
        {
            int wb, hb, nb;
            tile_base(m0, wb, hb, nb);
#pragma unroll 1
            for(int i = 0; i < nkt; ++i)
            {
                const int s = producer_stage<STAGES>(empty0, i);
                tma_fill(sbase + s * STAGE_BYTES, full0 + s * 8, &tmx, &tmw, wb, hb, nb, (kt0 + i) * BK, n0);
            }
        }
#else
        ARows ar;
        ar.init(m0, r0);
#pragma unroll 1
        for(int i = 0; i < nkt; ++i)
        {
            const int s = producer_stage<STAGES>(empty0, i);
            const u32 sn = sbase + s * STAGE_BYTES;
            load_a(x, ar, kt0 + i, sn, r0, ch);
            load_b(w, n0, kt0 + i, sn + A_BYTES, r0, ch);
            cp_async_commit();
            if(i >= LAG)
            {
                cp_async_wait<LAG>();        // K tile i - LAG's copies (this thread's) have landed
                fence_proxy_async();
                mbar_arrive(full0 + ((i - LAG) % STAGES) * 8);
            }
        }
        cp_async_wait<0>();
        fence_proxy_async();
#pragma unroll 1
        for(int i = nkt - LAG > 0 ? nkt - LAG : 0; i < nkt; ++i)
            mbar_arrive(full0 + (i % STAGES) * 8);
#endif
    }
    else
    {
        consume_tile<false>(acc, full0, empty0, 0, nkt, sbase, 0, wg);
        wgmma_wait<0>();
    }
#else
    ARows ar;
    ar.init(m0, r0);
#pragma unroll
    for(int s = 0; s < STAGES - 2; ++s)
    {
        if(s < nkt)
        {
            load_a(x, ar, kt0 + s, sbase + s * STAGE_BYTES, r0, ch);
            load_b(w, n0, kt0 + s, sbase + s * STAGE_BYTES + A_BYTES, r0, ch);
        }
        cp_async_commit();
    }
    for(int kt = 0; kt < nkt; ++kt)
    {
        cp_async_wait<STAGES - 3>();
        fence_proxy_async();
        __syncthreads();
        const u32 sa = sbase + (kt % STAGES) * STAGE_BYTES;
        mma_tile(acc, sa, sa + A_BYTES, wg);
        // refill the buffer of tile kt - 2: every warpgroup waited for its wgmma before the barrier above
        const int nk = kt + STAGES - 2;
        if(nk < nkt)
        {
            const u32 sn = sbase + (nk % STAGES) * STAGE_BYTES;
            load_a(x, ar, kt0 + nk, sn, r0, ch);
            load_b(w, n0, kt0 + nk, sn + A_BYTES, r0, ch);
        }
        cp_async_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
#endif
    fence_acc(acc);
    __syncthreads();   // every warpgroup's last wgmma has read its stage (WSPEC: every copy has landed)
#if SPLITK > 1
    float* cf = reinterpret_cast<float*>(sgen);
    if(t < NT_MMA)
        acc_to_smem_f32(acc, cf, t);
    __syncthreads();
    store_partial(ws + (long long)blockIdx.y * ((long long)GEMM_M * GEMM_N), cf, m0, n0, t);
#else
    data_t* cs = reinterpret_cast<data_t*>(sgen);
    if(t < NT_MMA)
        acc_to_smem(acc, cs, t EPI_PASS(n0));
    __syncthreads();
    store_tile<NT>(y, cs, m0, n0, t);
#endif
#else
    const index_t mtiles = (GEMM_M + BM - 1) / BM;
    const index_t ntiles = mtiles * NTILES_N;  // block b takes tiles b, b + gridDim.x, ...; N tiles fastest
#if TMA && B_RES
    // shared memory: [B, all K tiles][A, STAGES buffers][output tile]
    const u32 sb0 = sbase;
    const u32 sa0 = sbase + KTILES * B_BYTES;
    data_t* cs = reinterpret_cast<data_t*>(sgen + KTILES * B_BYTES + STAGES * A_BYTES);
#elif TMA
    // shared memory: [STAGES x (A tile, B tile)][output tile] (ping-pong: one per consumer warpgroup)
    data_t* cs = reinterpret_cast<data_t*>(sgen + STAGES * STAGE_BYTES);
#else
    // shared memory: [B, all K tiles][A, STAGES buffers][output tile]; N = one tile (NTILES_N = 1)
    const u32 sb0 = sbase;
    const u32 sa0 = sbase + KTILES * B_BYTES;
    data_t* cs = reinterpret_cast<data_t*>(sgen + KTILES * B_BYTES + STAGES * A_BYTES);
    const index_t mine = (index_t)blockIdx.x < mtiles ? (mtiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    const index_t total = mine * KTILES;      // this block's (tile, kt) stream
#endif

#if WSPEC
    if(producer)
    {
#if TMA
        if(tl == 0)
        {
            index_t i = 0;                     // stream position: (tile, K tile)
            for(index_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x)
            {
                const index_t m0 = (tile / NTILES_N) * BM;
                const int n0 = (int)(tile % NTILES_N) * BN;
                int wb, hb, nb;
                tile_base(m0, wb, hb, nb);
#pragma unroll 1
                for(int kt = 0; kt < KTILES; ++kt, ++i)
                {
                    const int s = producer_stage<STAGES>(empty0, i);
#if B_RES
                    // the stream's first position also brings all of B
                    tma_fill(sa0 + s * A_BYTES, full0 + s * 8, &tmx, &tmw, wb, hb, nb, kt * BK, n0,
                             i == 0 ? A_BYTES + KTILES * B_BYTES : A_BYTES);
                    if(i == 0)
                        tma_fill_b(sb0, full0, &tmw);
#else
                    tma_fill(sbase + s * STAGE_BYTES, full0 + s * 8, &tmx, &tmw, wb, hb, nb, kt * BK, n0);
#endif
                }
            }
        }
#else
        // loader position in the stream: (its tile's rows, kt), advanced one K tile per load
        ARows ar;
        index_t ltile = blockIdx.x;
        int lkt = 0;
        ar.init(ltile * BM, r0);
        for(int kt = 0; kt < KTILES; ++kt) load_b(w, 0, kt, sb0 + kt * B_BYTES, r0, ch);   // in the first group
#pragma unroll 1
        for(index_t i = 0; i < total; ++i)
        {
            const int s = producer_stage<STAGES>(empty0, i);
            load_a(x, ar, lkt, sa0 + s * A_BYTES, r0, ch);
            if(++lkt == KTILES)
            {
                lkt = 0;
                ltile += gridDim.x;
                ar.init(ltile * BM, r0);
            }
            cp_async_commit();
            if(i >= LAG)
            {
                cp_async_wait<LAG>();        // position i - LAG's copies (and B's, older) have landed
                fence_proxy_async();
                mbar_arrive(full0 + (int)((i - LAG) % STAGES) * 8);
            }
        }
        cp_async_wait<0>();
        fence_proxy_async();
#pragma unroll 1
        for(index_t i = total - LAG > 0 ? total - LAG : 0; i < total; ++i)
            mbar_arrive(full0 + (int)(i % STAGES) * 8);
#endif
        return;
    }
#if PINGPONG
    data_t* csw = cs + wg * (BM * LDC);        // this warpgroup's output tile
    const int tw = t & 127;
    const index_t mine = (index_t)blockIdx.x < ntiles ? (ntiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    for(index_t j = wg; j < mine; j += 2)
    {
        const index_t tile = blockIdx.x + j * gridDim.x;
        const index_t m0 = (tile / NTILES_N) * BM;
        const int n0 = (int)(tile % NTILES_N) * BN;
        if(j > 0)
            turn_wait(wg);                     // the other warpgroup has waited on every position of tile j - 1
        const index_t last = (j + 1) * KTILES - 1;    // stream position of tile j's last K tile
        consume_tile<false>(acc, full0, empty0, j * KTILES, KTILES, sbase, 0, 0);
        if(j + 1 < mine)
            turn_pass(wg);
        wgmma_wait<0>();
        mbar_arrive(empty0 + (int)(last % STAGES) * 8);
        fence_acc(acc);
        wg_sync(wg);                           // this warpgroup's previous stores have read its output tile
        acc_to_smem(acc, csw, tw EPI_PASS(n0));
        wg_sync(wg);
        store_tile<128>(y, csw, m0, n0, tw);
        zero_acc(acc);
    }
#else
    index_t pos = 0;                           // stream position of the consumers
    for(index_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x)
    {
        const index_t m0 = (tile / NTILES_N) * BM;
        const int n0 = (int)(tile % NTILES_N) * BN;
#if TMA && B_RES
        consume_tile<true>(acc, full0, empty0, pos, KTILES, sa0, sb0, wg);
#elif TMA
        consume_tile<false>(acc, full0, empty0, pos, KTILES, sbase, 0, wg);
#else
        consume_tile<true>(acc, full0, empty0, pos, KTILES, sa0, sb0, wg);
#endif
        pos += KTILES;
        wgmma_wait<0>();
        mbar_arrive(empty0 + (int)((pos - 1) % STAGES) * 8);
        fence_acc(acc);
        consumer_sync();                      // the previous tile's stores have read the output buffer
        acc_to_smem(acc, cs, t EPI_PASS(n0));
        consumer_sync();
        store_tile<NT_MMA>(y, cs, m0, n0, t);
        zero_acc(acc);
    }
#endif
#else
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
        acc_to_smem(acc, cs, t EPI_PASS(0));
        __syncthreads();
        store_tile<NT>(y, cs, tile * BM, 0, t);
        zero_acc(acc);
    }
    cp_async_wait<0>();
#endif
#endif
    // launched as the programmatic dependent of the stride phase before (its pixels disjoint from this one's):
    // this grid completes only after that one, so stream order holds for whatever follows
    grid_dep_wait();
}

#if SPLITK > 1
// y = sum of the SPLITK partial planes in chunk order, FP32 -> data_t. A warp covers 256 consecutive
// floats of every plane: lane l loads float4 l and 32 + l (each load instruction reads 512 contiguous
// bytes), sums over the chunks, then lanes 2i and 2i + 1 swap halves so that each holds 8 consecutive
// sums and stores them as one 16-byte piece of y (element e = m*K + k of the plane goes to y_offset(m) + k).
// M x K is a multiple of 8 (K % 8 == 0), so a lane pair's float4s are both in range or both past it. TF32 (FP32 y,
// K % 4 == 0): each lane stores its own two float4s.
__device__ __forceinline__ void add4(float4& a, const float4 b) { a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w; }
__device__ __forceinline__ float4 shfl_xor4(const float4 v, int mask)
{
    return make_float4(__shfl_xor_sync(0xffffffffu, v.x, mask), __shfl_xor_sync(0xffffffffu, v.y, mask),
                       __shfl_xor_sync(0xffffffffu, v.z, mask), __shfl_xor_sync(0xffffffffu, v.w, mask));
}
__device__ __forceinline__ unsigned pack2(float a, float b)
{
#if IS_BF16
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
#else
    __half2 v = __floats2half2_rn(a, b);
#endif
    return *reinterpret_cast<unsigned*>(&v);
}

static_assert(RED_BLOCK % 32 == 0, "reduce block of whole warps");
extern "C" __global__ void __launch_bounds__(RED_BLOCK)
igemm_hopper_fwd_reduce(const float* __restrict__ ws, data_t* __restrict__ y EPI_PARAM)
{
    grid_dep_wait();        // launched as the programmatic dependent of the partials' kernel
    constexpr long long total4 = (long long)GEMM_M * GEMM_N / 4;      // float4s of one plane (even unless TF32)
    const int l = threadIdx.x & 31;
    const long long base = (blockIdx.x * (long long)RED_BLOCK + (threadIdx.x & ~31)) * 2;   // the warp's first float4
    const long long i0 = base + l, i1 = base + 32 + l;
    const bool ok0 = i0 < total4, ok1 = i1 < total4;
    const float4* p = reinterpret_cast<const float4*>(ws);
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f), b = a;
#pragma unroll 4
    for(int s = 0; s < SPLITK; ++s)
    {
        if(ok0) add4(a, __ldcs(p + s * total4 + i0));     // read once: streaming loads
        if(ok1) add4(b, __ldcs(p + s * total4 + i1));
    }
#if IS_TF32
    // FP32 y: each float4 (plane elements 4i .. 4i + 3, one pixel's channels: K % 4 == 0) stored as it is
#pragma unroll
    for(int h = 0; h < 2; ++h)
    {
        const long long i = h ? i1 : i0;
        float4 v = h ? b : a;
        if(!(h ? ok1 : ok0))
            continue;
        const long long e = i * 4;
#if EPI
        const int k0 = (int)(e % P_K);
        v = make_float4(epi(v.x, bias, k0), epi(v.y, bias, k0 + 1), epi(v.z, bias, k0 + 2), epi(v.w, bias, k0 + 3));
#endif
        *reinterpret_cast<float4*>(y + y_offset((index_t)(e / P_K)) + (int)(e % P_K)) = v;
    }
#else
    // even lane 2i: floats 8i..8i+3 (a) + its partner's a; odd lane 2i + 1: its partner's b + its own b
    const bool odd = l & 1;
    const float4 got = shfl_xor4(odd ? a : b, 1);
    const float4 lo = odd ? got : a, hi = odd ? b : got;
    const long long e = (odd ? (i1 - 1) / 2 : i0 / 2) * 8;            // first plane element of the 16-byte piece
#if EPI
    const int k0 = (int)(e % P_K);
    if(odd ? ok1 : ok0)
        *reinterpret_cast<uint4*>(y + y_offset((index_t)(e / P_K)) + k0) =
            make_uint4(pack2(epi(lo.x, bias, k0), epi(lo.y, bias, k0 + 1)), pack2(epi(lo.z, bias, k0 + 2), epi(lo.w, bias, k0 + 3)),
                       pack2(epi(hi.x, bias, k0 + 4), epi(hi.y, bias, k0 + 5)), pack2(epi(hi.z, bias, k0 + 6), epi(hi.w, bias, k0 + 7)));
#else
    if(odd ? ok1 : ok0)
        *reinterpret_cast<uint4*>(y + y_offset((index_t)(e / P_K)) + (int)(e % P_K)) =
            make_uint4(pack2(lo.x, lo.y), pack2(lo.z, lo.w), pack2(hi.x, hi.y), pack2(hi.z, hi.w));
#endif
#endif
}
#endif
