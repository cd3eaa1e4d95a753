// Hopper implicit-GEMM forward, persistent copy engine (implicit_gemm_hopper_fwd.cu with PERSIST = TMA = WSPEC = 1,
// unsplit, 16-bit, dense NHWC y), whose epilogue stores each output tile with the copy engine as well.
//
// The K loops, the producer's stream of (tile, K tile) positions and the ping-pong order are those of
// implicit_gemm_hopper_fwd.cu, included below. Only the epilogue differs. There the consumers stage a tile as
// [BM][BN + 8] rows and then each thread stores 16-byte pieces of it to y. Here they stage it as BN / 64
// boxes of [BM][64] elements, each 128-byte row swizzled as the operand tiles are (16-byte chunk c of row r at
// chunk c ^ (r % 8)), by stmatrix.x4 (acc_to_boxes: each of its 8 x 8 matrices is 8 rows of one chunk, which the
// swizzle spreads over all 32 banks), and one thread hands each box to the copy engine (cp.async.bulk.tensor store through a tiled map of y as an
// M x K matrix, box 64 x BM; rows past M and columns past K are not written). The consumers go on to the
// next tile at once. Their st.shared writes reach the copy engine's reads through fence.proxy.async, then the
// warpgroup's (ping-pong) or the consumers' barrier.
// A 32-wide tile (BN = 32) is one box of [BM][32] elements, 64-byte rows under the 64-byte swizzle (16-byte chunk c
// of row r at chunk c ^ ((r / 2) % 4)), stored through a map of 32-channel boxes with that swizzle. The K tiles may be
// 32 deep (ROW64): the loads and the K loop are implicit_gemm_hopper_fwd.cu's either way.
// OBUF output tiles per consumer group (the consumers; with ping-pong, each warpgroup), taken in turn: before the
// group stages into one again, the storing thread waits until the copy engine has read it, that is until at most
// OBUF - 1 of its later stores are still reading (cp.async.bulk.wait_group.read). With OBUF = 2 a tile's stores
// overlap the next tile's staging.
// Shared memory: [STAGES x (A tile, B tile)][(1 + PINGPONG) x OBUF output tiles of BM x BN elements].
#include "implicit_gemm_hopper_fwd.cu"

#ifndef OBUF
#define OBUF 1
#endif
#define OTILE_BYTES (BM * BN * (int)sizeof(data_t))
static_assert(PERSIST && TMA && WSPEC && SPLITK == 1 && !B_MN && !IS_TF32 && !EPI && Y_DENSE,
              "copy-engine stores: the persistent copy engine, unsplit, 16-bit, plain, dense y");
static_assert(OBUF == 1 || OBUF == 2, "one or two output tiles per consumer group");

#ifndef STMATRIX
#define STMATRIX 1      // 1: the staging by stmatrix.x4 (four 8 x 8 matrices an instruction); 0: 4-byte pair stores
#endif

// FP32 pair -> one 32-bit register of two data_t, round to nearest
__device__ __forceinline__ u32 pack_pair(float a, float b)
{
#if IS_BF16
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
#else
    __half2 v = __floats2half2_rn(a, b);
#endif
    return *reinterpret_cast<u32*>(&v);
}

#if BN < 64
// byte offset of 16-byte chunk c of row r in a box of 64-byte rows under the 64-byte swizzle
__device__ __forceinline__ u32 sw64o(int r, int c) { return (u32)(r * 64 + ((c ^ ((r >> 1) & 3)) << 4)); }
#endif

// Accumulators -> the output tile at cs in BN / 64 swizzled boxes of BM rows x 128 bytes (BN = 32: one box of 64-byte
// rows). Thread (warp wi, lane l)
// holds rows wi*16 + l/4 (+8: h) of its m64 blocks, columns 8j + 2(l%4) (+1): acc[i][4j + 2h], acc[i][4j + 2h + 1].
// That is, for each 8-column block j and half h, element (l/4, 2(l%4)) of an 8 x 8 matrix: the fragment of
// stmatrix. One stmatrix.x4 stores matrices (j, h = 0), (j, 1), (j + 1, 0), (j + 1, 1); lane l gives the row address
// of row l%8 of matrix l/8 (one 16-byte chunk: column block j + (l/8)/2 of row wi*16 + ((l/8)%2)*8 + l%8).
__device__ __forceinline__ void acc_to_boxes(float (&acc)[WG_M][BN / 2], unsigned char* cs, u32 cs_s, int t)
{
    const int wg = t >> 7, wi = (t & 127) >> 5, l = t & 31;
#if STMATRIX
    const int q = l >> 3;
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
    {
        const int r = (wg * WG_M + i) * 64 + wi * 16 + (q & 1) * 8 + (l & 7);
#pragma unroll
        for(int j = 0; j < BN / 8; j += 2)
        {
            const int jj = j + (q >> 1);
#if BN < 64
            const u32 addr = cs_s + sw64o(r, jj);
#else
            const u32 addr = cs_s + (u32)((jj >> 3) * (BM * 128)) + sw128(r, jj & 7);
#endif
            asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
                         ::"r"(addr), "r"(pack_pair(acc[i][4 * j], acc[i][4 * j + 1])),
                         "r"(pack_pair(acc[i][4 * j + 2], acc[i][4 * j + 3])),
                         "r"(pack_pair(acc[i][4 * j + 4], acc[i][4 * j + 5])),
                         "r"(pack_pair(acc[i][4 * j + 6], acc[i][4 * j + 7]))
                         : "memory");
        }
    }
    (void)cs;
#else
#pragma unroll
    for(int i = 0; i < WG_M; ++i)
#pragma unroll
        for(int h = 0; h < 2; ++h)
        {
            const int r = (wg * WG_M + i) * 64 + wi * 16 + (l >> 2) + h * 8;
#pragma unroll
            for(int j = 0; j < BN / 8; ++j)
#if BN < 64
                store_pair(reinterpret_cast<data_t*>(cs + sw64o(r, j) + (l & 3) * 4),
                           acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]);
#else
                store_pair(reinterpret_cast<data_t*>(cs + (j >> 3) * (BM * 128) + sw128(r, j & 7) + (l & 3) * 4),
                           acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]);
#endif
        }
    (void)cs_s;
#endif
}

// the box at shared address src -> y's elements (rows c1 .., columns c0 ..) through map
__device__ __forceinline__ void tma_store_2d(const TmaMap* map, u32 src, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
                 ::"l"(reinterpret_cast<unsigned long long>(map)), "r"(src), "r"(c0), "r"(c1)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// all but the N most recent committed stores have read their shared memory (it may be written again)
template <int N>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory"); }
// the committed stores are complete
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// the staged tile at shared address cs (output rows m0 .., channels n0 ..) to y, one copy per 64-channel box (BN = 32:
// its one box)
__device__ __forceinline__ void store_boxes(const TmaMap* tmy, u32 cs, index_t m0, int n0)
{
#if BN < 64
    tma_store_2d(tmy, cs, n0, (int)m0);
#else
#pragma unroll
    for(int j = 0; j < BN / 64; ++j)
        if(n0 + 64 * j < GEMM_N)
            tma_store_2d(tmy, cs + j * (BM * 128), n0 + 64 * j, (int)m0);
#endif
    bulk_commit();
}

extern "C" __global__ void __launch_bounds__(NT, MIN_BLOCKS)
igemm_hopper_fwd_tma_store(const data_t* __restrict__ x, const data_t* __restrict__ w, data_t* __restrict__ y
                           TMA_PARAM, const __grid_constant__ TmaMap tmy)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
    unsigned char* sgen = smem_raw + (sbase - smem_u32(smem_raw));   // generic pointer to sbase

    const int t = threadIdx.x;
    const int wg = t >> 7;
    float acc[WG_M][BN / 2];
    zero_acc(acc);
    __shared__ __align__(8) u64 bars[2 * STAGES];    // full[0 .. STAGES), empty[0 .. STAGES)
    const u32 full0 = smem_u32(bars), empty0 = full0 + STAGES * 8;
    if(t == 0)
    {
#pragma unroll
        for(int s = 0; s < STAGES; ++s)
        {
            mbar_init(full0 + s * 8, 1);
            mbar_init(empty0 + s * 8, PINGPONG ? 128 : NT_MMA);
        }
        fence_mbar_init();
    }
    __syncthreads();

    const index_t mtiles = (GEMM_M + BM - 1) / BM;
    const index_t ntiles = mtiles * NTILES_N;  // block b takes tiles b, b + gridDim.x, ...; N tiles fastest
    const u32 cs0 = sbase + STAGES * STAGE_BYTES;     // the output tiles (OTILE_BYTES: a multiple of 1024)
    if(wg == WGS)
    {
        if(t == NT_MMA)
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
                    tma_fill(sbase + s * STAGE_BYTES, full0 + s * 8, &tmx, &tmw, wb, hb, nb, kt * BK, n0);
                }
            }
        }
        return;
    }
#if PINGPONG
    const u32 csw = cs0 + wg * OBUF * OTILE_BYTES;    // this warpgroup's output tiles
    const int tw = t & 127;
    const index_t mine = (index_t)blockIdx.x < ntiles ? (ntiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    for(index_t j = wg; j < mine; j += 2)
    {
        const index_t tile = blockIdx.x + j * gridDim.x;
        const index_t m0 = (tile / NTILES_N) * BM;
        const int n0 = (int)(tile % NTILES_N) * BN;
        if(j > 0)
            turn_wait(wg);
        const index_t last = (j + 1) * KTILES - 1;
        consume_tile<false>(acc, full0, empty0, j * KTILES, KTILES, sbase, 0, 0);
        if(j + 1 < mine)
            turn_pass(wg);
        wgmma_wait<0>();
        mbar_arrive(empty0 + (int)(last % STAGES) * 8);
        fence_acc(acc);
        const u32 cs = csw + (u32)((j / 2) % OBUF) * OTILE_BYTES;
        if(tw == 0)
            bulk_wait_read<OBUF - 1>();        // this warpgroup's tile OBUF tiles back has left this output tile
        wg_sync(wg);
        acc_to_boxes(acc, sgen + (cs - sbase), cs, tw);
        fence_proxy_async();
        wg_sync(wg);
        if(tw == 0)
            store_boxes(&tmy, cs, m0, n0);
        zero_acc(acc);
    }
    if(tw == 0)
        bulk_wait();
#else
    index_t pos = 0;                           // stream position of the consumers
    int ob = 0;                                // the output tile of this tile
    for(index_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x)
    {
        const index_t m0 = (tile / NTILES_N) * BM;
        const int n0 = (int)(tile % NTILES_N) * BN;
        consume_tile<false>(acc, full0, empty0, pos, KTILES, sbase, 0, wg);
        pos += KTILES;
        wgmma_wait<0>();
        mbar_arrive(empty0 + (int)((pos - 1) % STAGES) * 8);
        fence_acc(acc);
        const u32 cs = cs0 + (u32)ob * OTILE_BYTES;
        if(t == 0)
            bulk_wait_read<OBUF - 1>();        // the tile OBUF tiles back has left this output tile
        consumer_sync();
        acc_to_boxes(acc, sgen + (cs - sbase), cs, t);
        fence_proxy_async();
        consumer_sync();
        if(t == 0)
            store_boxes(&tmy, cs, m0, n0);
        zero_acc(acc);
        ob = ob + 1 == OBUF ? 0 : ob + 1;
    }
    if(t == 0)
        bulk_wait();
#endif
}
