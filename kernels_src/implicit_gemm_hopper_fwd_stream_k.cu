// Hopper implicit-GEMM forward, stream-K (implicit_gemm_hopper_fwd.cu with PERSIST = TMA = WSPEC = 1, unsplit,
// no ping-pong, 16-bit, plain problems).
//
// The persistent forward gives block b whole output tiles b, b + G, ... (G = gridDim.x), so when the tiles are not a
// multiple of G the last wave leaves SMs idle: 196 tiles of 128 x 128 on 132 SMs run as two waves, the second half
// empty. Here the I = tiles x KTILES (tile, K tile) iterations, tile-major, are cut into G equal ranges: block b takes
// iterations [floor(b I / G), floor((b + 1) I / G)). Its producer thread streams those positions' A and B boxes
// through the stages exactly as the persistent forward streams its tiles'; its consumers split the range at tile
// boundaries into segments. A segment that is a whole tile is stored as the forward stores it. A partial segment
// (a tile shared by blocks b_first .. b_last, b_first = the block of the tile's first iteration) is fixed up:
//   - every contributor writes its FP32 accumulators to a slot of the workspace, [G][2][NT_MMA x ACC_N] floats, in
//     fragment order (thread t's float4 e at (e * NT_MMA + t) * 4: coalesced, and the reader of an element is the
//     thread of the same rank that wrote it), slot 0 when the segment starts inside the tile (the block's first),
//     else slot 1 (it starts at the tile's start and ends inside: the block's last);
//   - then, after a fence, one thread counts it on the tile's counter cnt[b_first] (G ints after the slots);
//   - the contributor that counts last sums all the tile's slots in block order (so the sum does not depend on
//     which block came last: the result is deterministic), stores the tile, and clears the counter.
// No block waits for another, so the grid need not be resident at once. igemm_hopper_fwd_sk_zero clears the G
// counters first (the workspace comes uninitialised); the main kernel goes as its programmatic dependent and
// waits for it (griddepcontrol.wait) before its first count.
// Owner of iteration q: the largest b with floor(b I / G) <= q, i.e. b = floor(((q + 1) G - 1) / I).
// SK_DP (data-parallel waves first): 0 stream-K over all tiles; 1 the hybrid of stream-K's paper, whole tiles b, b + G,
// ... for all but the last one or two waves' worth of tiles (T - G - T % G of T tiles, T >= 2G), stream-K over the
// rest (G to 2G - 1 tiles); 2 whole tiles only (the persistent forward's order: no tile shared).
#include "implicit_gemm_hopper_fwd.cu"

static_assert(PERSIST && TMA && WSPEC && !PINGPONG && SPLITK == 1 && !B_MN && !EPI,
              "stream-K: the persistent copy engine, unsplit, no ping-pong, plain forward");

#define ACC_N (WG_M * (BN / 2))                          // accumulators of a consumer thread
#define SLOT_F4 (NT_MMA * (ACC_N / 4))                   // float4s of one slot
static_assert(ACC_N % 4 == 0, "whole float4s of accumulators");
#ifndef SK_DP
#define SK_DP 0
#endif

__device__ __forceinline__ long long sk_begin(long long b, long long iters, long long g) { return b * iters / g; }
__device__ __forceinline__ long long sk_owner(long long q, long long iters, long long g) { return ((q + 1) * g - 1) / iters; }

extern "C" __global__ void igemm_hopper_fwd_sk_zero(int* __restrict__ cnt, int n)
{
    grid_dep_launch();      // the main kernel may start; it waits for this grid before its first count
    for(int i = threadIdx.x; i < n; i += blockDim.x)
        cnt[i] = 0;
}

extern "C" __global__ void __launch_bounds__(NT, MIN_BLOCKS)
igemm_hopper_fwd_sk(const data_t* __restrict__ x, const data_t* __restrict__ w, data_t* __restrict__ y,
                    float* __restrict__ ws TMA_PARAM)
{
    extern __shared__ unsigned char smem_raw[];
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
    unsigned char* sgen = smem_raw + (sbase - smem_u32(smem_raw));   // generic pointer to sbase

    const int t = threadIdx.x;
    const int wg = t >> 7;
    float acc[WG_M][BN / 2];
    zero_acc(acc);
    __shared__ __align__(8) u64 bars[2 * STAGES];    // full[0 .. STAGES), empty[0 .. STAGES)
    __shared__ int last;
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

    const long long G = gridDim.x;
    const long long T = (long long)((GEMM_M + BM - 1) / BM) * NTILES_N;
    // tiles [0, T0) whole, in waves (tile b + j G); iterations [T0 KTILES, T KTILES) stream-K
#if SK_DP == 0
    const long long T0 = 0;
#elif SK_DP == 1
    const long long T0 = T >= 2 * G ? (T / G - 1) * G : 0;
#else
    const long long T0 = T;
#endif
    const long long base = T0 * KTILES, iters = (T - T0) * KTILES;
    const long long g0 = base + sk_begin(blockIdx.x, iters, G), g1 = base + sk_begin(blockIdx.x + 1, iters, G);
    const long long waves = (T0 - blockIdx.x + G - 1) / G;     // this block's whole tiles b + j G < T0
    if(wg == WGS)
    {
        if(t == NT_MMA)
        {
            long long i = 0;                   // stream position
            for(long long j = 0, g = 0, ge = 0; j <= waves; ++j)
            {
                if(j < waves)                  // whole tile b + j G, then the stream-K range
                    g = (blockIdx.x + j * G) * KTILES, ge = g + KTILES;
                else
                    g = g0, ge = g1;
                while(g < ge)
            {
                const long long tile = g / KTILES;
                const long long tend = (tile + 1) * KTILES < ge ? (tile + 1) * KTILES : ge;
                const index_t m0 = (index_t)(tile / NTILES_N) * BM;
                const int n0 = (int)(tile % NTILES_N) * BN;
                int wb, hb, nb;
                tile_base(m0, wb, hb, nb);
#pragma unroll 1
                for(int kt = (int)(g - tile * KTILES); g < tend; ++g, ++kt, ++i)
                {
                    const int s = producer_stage<STAGES>(empty0, i);
                    tma_fill(sbase + s * STAGE_BYTES, full0 + s * 8, &tmx, &tmw, wb, hb, nb, kt * BK, n0);
                }
            }
            }
        }
        return;
    }

    data_t* cs = reinterpret_cast<data_t*>(sgen + STAGES * STAGE_BYTES);   // the output tile ([BM][BN + 8])
    float4* slots = reinterpret_cast<float4*>(ws);
    int* cnt = reinterpret_cast<int*>(ws + 2 * G * SLOT_F4 * 4);
    float* a = &acc[0][0];
    long long pos = 0;                         // stream position of the consumers
    for(long long j = 0, g = 0, ge = 0; j <= waves; ++j)
    {
        if(j < waves)
            g = (blockIdx.x + j * G) * KTILES, ge = g + KTILES;
        else
            g = g0, ge = g1;
        while(g < ge)
    {
        const long long tile = g / KTILES, ts = tile * KTILES;
        const int nk = (int)(((ts + KTILES) < ge ? ts + KTILES : ge) - g);
        const index_t m0 = (index_t)(tile / NTILES_N) * BM;
        const int n0 = (int)(tile % NTILES_N) * BN;
        consume_tile<false>(acc, full0, empty0, pos, nk, sbase, 0, wg);
        pos += nk;
        wgmma_wait<0>();
        mbar_arrive(empty0 + (int)((pos - 1) % STAGES) * 8);
        fence_acc(acc);
        bool store = true;
        if(nk != KTILES)
        {
            // a partial segment: this block's slot, then the count; the last contributor sums and stores
            const long long bf = sk_owner(ts - base, iters, G), bl = sk_owner(ts - base + KTILES - 1, iters, G);
            float4* mine = slots + (2 * (long long)blockIdx.x + (g0 > ts ? 0 : 1)) * SLOT_F4 + t;
#pragma unroll
            for(int e = 0; e < ACC_N / 4; ++e)
                __stcg(mine + e * NT_MMA, make_float4(a[4 * e], a[4 * e + 1], a[4 * e + 2], a[4 * e + 3]));
            __threadfence();
            consumer_sync();
            if(t == 0)
            {
                grid_dep_wait();               // igemm_hopper_fwd_sk_zero has cleared the counters
                last = atomicAdd(cnt + bf, 1) == (int)(bl - bf);
            }
            consumer_sync();
            store = last;
            if(store)
            {
                __threadfence();
                zero_acc(acc);
#pragma unroll 1
                for(long long b = bf; b <= bl; ++b)
                {
                    const float4* src = slots + (2 * b + (base + sk_begin(b, iters, G) > ts ? 0 : 1)) * SLOT_F4 + t;
#pragma unroll
                    for(int e = 0; e < ACC_N / 4; ++e)
                    {
                        const float4 v = __ldcg(src + e * NT_MMA);
                        a[4 * e] += v.x; a[4 * e + 1] += v.y; a[4 * e + 2] += v.z; a[4 * e + 3] += v.w;
                    }
                }
                if(t == 0)
                    cnt[bf] = 0;
            }
        }
        if(store)
        {
            consumer_sync();                  // the previous tile's stores have read the output tile
            acc_to_smem(acc, cs, t);
            consumer_sync();
            store_tile<NT_MMA>(y, cs, m0, n0, t);
        }
        zero_acc(acc);
        g += nk;
    }
    }
}
