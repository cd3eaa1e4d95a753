// Implicit-GEMM convolution forward for Hopper over shifted windows: stride 1, dilation 1, channels-last
// 16-bit, C % 64 == 0; wgmma.mma_async (sm_90a) with a producer warpgroup.
//
// Rows run over the padded image: virtual pixel v = (n*HP + hp)*WP + wp, HP = Hi + 2*ph = Ho + Y - 1,
// WP = Wi + 2*pw = Wo + X - 1, and xp[v] = x[n, hp - ph, wp - pw] (0 in the padding). At stride 1 the
// input of output pixel v (hp < Ho, wp < Wo) for tap (r, s) is xp[v + r*WP + s]: one shift of the row
// index for every output pixel. So y[v, k] = sum_(r, s, c) xp[v + r*WP + s, c] * w[k, r, s, c], and for
// a block of BM consecutive rows v0 .. v0 + BM - 1 a single window of xp, rows v0 + r*WP .. + BM + X - 2,
// serves all X taps (r, s) of filter row r: the A operand of tap s is the window from its row s on.
// Rows with hp >= Ho or wp >= Wo are computed and dropped (X - 1 of every WP, Y - 1 of every HP).
// x is read X times less than by a gather per tap (implicit_gemm_hopper_fwd.cu).
//
// The K loop of an M tile: KSTEPS = Y x C/64 stages (r, c-block cb); a stage holds the window of
// WROWS = BM + 8 rows x 64 channels (128 bytes, K-major, 128-byte swizzle as implicit_gemm_hopper.cuh;
// X - 1 <= 8 extra rows), and takes X x 4 k16 wgmma steps per m64 block: tap s reads the window from
// row s: the descriptor's start moves s*128 bytes, with matrix base offset 0 (the swizzle follows the
// address bits of each row, as for the k16 steps' 32-byte moves; a base offset of (start >> 7) & 7 read
// wrong rows on the H100: bench/results/session-wspec/window-verify/).
// B, every (r, s, cb) tile of BN output channels x 64 channels, stays in shared memory for the whole
// block (loaded once), so a block's only streamed operand is x. Blocks are persistent over M tiles
// (blockIdx.x, + gridDim.x, ...) of their N tile (blockIdx.y).
// Warp specialisation as implicit_gemm_hopper_wrw.cu (WSPEC): warpgroup 2 (the producer) fills STAGES
// window buffers by cp.async and signals full[s] after its own copies landed and fence.proxy.async;
// warpgroups 0 and 1 multiply (WG_M m64 blocks each) and release empty[s]; at the end of an M tile they
// store their accumulators (rows that are output pixels only) while the producer loads the next tile.
#include "implicit_gemm_hopper.cuh"

#ifndef BM
#define BM 256
#endif
#ifndef BN
#define BN 64
#endif
#ifndef STAGES
#define STAGES 4
#endif

#define WGS 2
#define NT_MMA (WGS * 128)
#define NT (NT_MMA + 128)
#define WG_M (BM / (64 * WGS))
#define HP (P_HO + P_Y - 1)
#define WP (P_WO + P_X - 1)
#define MV ((index_t)P_N * HP * WP)                 // virtual rows
#define MTILES ((MV + BM - 1) / BM)
#define CB (P_C / 64)                               // 64-channel blocks
#define KSTEPS (P_Y * CB)
#define WROWS (BM + 8)
#define A_BYTES (WROWS * 128)
#define B_TILE (BN * 128)
#define B_BYTES (P_Y * P_X * CB * B_TILE)
#define LAG (STAGES - 2)

static_assert(BM == 128 || BM == 256, "BM = 64 x 2 warpgroups x 1 or 2");
static_assert(BN == 64 || BN == 128, "BN in 64, 128");
static_assert(WG_M * BN <= 256, "at most 128 accumulators per thread");
static_assert(STAGES >= 3, "LAG = STAGES - 2 >= 1");
static_assert(P_C % 64 == 0 && P_K % 8 == 0, "64-channel blocks of x, 16-byte chunks of y");
static_assert(P_SH == 1 && P_SW == 1 && P_DH == 1 && P_DW == 1 && P_X <= 9, "stride 1, dilation 1, X <= 9");
static_assert(HP == P_HI + 2 * P_PH && WP == P_WI + 2 * P_PW, "stride-1 output size");
static_assert(XS_C == 1 && WS_C == 1 && YS_C == 1, "channels-last x, w and y");
static_assert(WS_X == P_C && WS_Y == P_X * WS_X && WS_K == P_Y * WS_Y, "dense KYXC w");

__device__ __forceinline__ void wgmma_tile(float* d, u64 da, u64 db)
{
#if BN == 64
    wgmma_n64(d, da, db);
#else
    wgmma_n128(d, da, db);
#endif
}

__device__ __forceinline__ void mbar_init(u32 bar, u32 count)
{
    asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar)
{
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity)
{
    u32 done;
    do
    {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while(!done);
}

// Window of stage (r, cb) of the M tile at v0: rows v0 + r*WP + i (i < WROWS), channels cb*64 .. +64, 0
// outside the image; producer thread tl takes 16-byte chunks tl, tl + 128, ...
__device__ __forceinline__ void load_window(const data_t* __restrict__ x, index_t v0, int r, int cb, u32 sa, int tl)
{
    const index_t vb = v0 + (index_t)r * WP;
#pragma unroll 4
    for(int q = tl; q < WROWS * 8; q += 128)
    {
        const int row = q >> 3, ch = q & 7;
        const index_t v = vb + row;
        // unsigned division by the compile-time padded sizes
        const unsigned long long uv = (unsigned long long)v;
        const int wp = (int)(uv % WP);
        const unsigned long long q2 = uv / WP;
        const int hp = (int)(q2 % HP);
        const index_t n = (index_t)(q2 / HP);
        const int ih = hp - P_PH, iw = wp - P_PW;
        const bool ok = n < P_N && (unsigned)ih < (unsigned)P_HI && (unsigned)iw < (unsigned)P_WI;
        const index_t off = ok ? n * XS_N + (index_t)ih * XS_H + (index_t)iw * XS_W + cb * 64 + ch * 8 : 0;
        cp_async16(sa + sw128(row, ch), x + off, ok);
    }
}

// Every B tile of N tile n0: tile (r, s, cb) = rows k = n0 .. n0 + BN - 1 of w, channels cb*64 .. +64 of tap (r, s)
__device__ __forceinline__ void load_all_b(const data_t* __restrict__ w, int n0, u32 sb, int t)
{
#pragma unroll 1
    for(int q = t; q < P_Y * P_X * CB * BN * 8; q += NT)
    {
        const int tile = q / (BN * 8), rem = q % (BN * 8);
        const int row = rem >> 3, ch = rem & 7;
        const int tap = tile / CB, cb = tile % CB;
        const int k = n0 + row;
        const bool ok = k < P_K;
        cp_async16(sb + tile * B_TILE + sw128(row, ch), w + (ok ? (index_t)k * WS_K + tap * P_C + cb * 64 + ch * 8 : 0), ok);
    }
}

// One stage: for each tap s of filter row r, WG_M m64 blocks x BN x 64 channels (4 k16 steps)
__device__ __forceinline__ void mma_stage(float (&acc)[WG_M][BN / 2], u32 sa, u32 sb, int r, int cb, int wg)
{
    wgmma_fence();
#pragma unroll
    for(int s = 0; s < P_X; ++s)
    {
        const u32 bt = sb + ((r * P_X + s) * CB + cb) * B_TILE;
#pragma unroll
        for(int k16 = 0; k16 < 4; ++k16)
        {
            const u64 db = desc_sw128(bt + k16 * 32);
#pragma unroll
            for(int i = 0; i < WG_M; ++i)
                wgmma_tile(acc[i], desc_sw128(sa + ((wg * WG_M + i) * 64 + s) * 128 + k16 * 32), db);
        }
    }
    wgmma_commit();
}

extern "C" __global__ void __launch_bounds__(NT, 1)
igemm_hopper_window_fwd(const data_t* __restrict__ x, const data_t* __restrict__ w, data_t* __restrict__ y)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) u64 bars[2 * STAGES];    // full[0 .. STAGES), empty[0 .. STAGES)
    const u32 sbase = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const u32 sb = sbase + STAGES * A_BYTES;          // the resident B tiles
    const u32 full0 = smem_u32(bars), empty0 = full0 + STAGES * 8;

    const int t = threadIdx.x;
    const int wg = t >> 7;
    const int n0 = blockIdx.y * BN;

    if(t == 0)
    {
#pragma unroll
        for(int s = 0; s < STAGES; ++s)
        {
            mbar_init(full0 + s * 8, 128);
            mbar_init(empty0 + s * 8, NT_MMA);
        }
    }
    load_all_b(w, n0, sb, t);
    cp_async_commit();
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();

    if(wg == WGS)
    {
        // producer: stage g (over this block's M tiles and their KSTEPS) goes to buffer g % STAGES
        const int tl = t - NT_MMA;
        int g = 0;
#pragma unroll 1
        for(index_t mt = blockIdx.x; mt < MTILES; mt += gridDim.x)
        {
#pragma unroll 1
            for(int ks = 0; ks < KSTEPS; ++ks, ++g)
            {
                const int s = g % STAGES;
                if(g >= STAGES)
                    mbar_wait(empty0 + s * 8, (u32)((g / STAGES - 1) & 1));
                load_window(x, mt * BM, ks / CB, ks % CB, sbase + s * A_BYTES, tl);
                cp_async_commit();
                if(g >= LAG)
                {
                    cp_async_wait<LAG>();
                    fence_proxy_async();
                    mbar_arrive(full0 + ((g - LAG) % STAGES) * 8);
                }
            }
        }
        cp_async_wait<0>();
        fence_proxy_async();
#pragma unroll 1
        for(int i = g - LAG > 0 ? g - LAG : 0; i < g; ++i)
            mbar_arrive(full0 + (i % STAGES) * 8);
        return;
    }

    float acc[WG_M][BN / 2];
    const int wi = (t & 127) >> 5, l = t & 31;
    int g = 0;
#pragma unroll 1
    for(index_t mt = blockIdx.x; mt < MTILES; mt += gridDim.x)
    {
#pragma unroll
        for(int i = 0; i < WG_M; ++i)
#pragma unroll
            for(int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;
#pragma unroll 1
        for(int ks = 0; ks < KSTEPS; ++ks, ++g)
        {
            const int s = g % STAGES;
            mbar_wait(full0 + s * 8, (u32)((g / STAGES) & 1));
            mma_stage(acc, sbase + s * A_BYTES, sb, ks / CB, ks % CB, wg);
            wgmma_wait<1>();                  // stage g - 1's wgmma has completed: release its buffer
            if(g > 0)
                mbar_arrive(empty0 + ((g - 1) % STAGES) * 8);
        }
        wgmma_wait<0>();
#pragma unroll
        for(int i = 0; i < WG_M; ++i)
#pragma unroll
            for(int j = 0; j < BN / 2; ++j) reg_fence(acc[i][j]);
        // thread (warp wi, lane l) holds rows wi*16 + l/4 (+8) of its m64 blocks, columns 8j + 2(l%4) (+1)
#pragma unroll
        for(int i = 0; i < WG_M; ++i)
#pragma unroll
            for(int h = 0; h < 2; ++h)
            {
                const index_t v = mt * BM + (wg * WG_M + i) * 64 + wi * 16 + (l >> 2) + h * 8;
                const unsigned long long uv = (unsigned long long)v;
                const int wp = (int)(uv % WP);
                const unsigned long long q2 = uv / WP;
                const int hp = (int)(q2 % HP);
                const index_t n = (index_t)(q2 / HP);
                if(n >= P_N || hp >= P_HO || wp >= P_WO)
                    continue;
                data_t* yr = y + n * YS_N + (index_t)hp * YS_H + (index_t)wp * YS_W;
#pragma unroll
                for(int j = 0; j < BN / 8; ++j)
                {
                    const int k = n0 + j * 8 + (l & 3) * 2;
                    if(k >= P_K)
                        continue;
#if IS_BF16
                    *reinterpret_cast<__nv_bfloat162*>(yr + k) = __floats2bfloat162_rn(acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]);
#else
                    *reinterpret_cast<__half2*>(yr + k) = __floats2half2_rn(acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]);
#endif
                }
            }
    }
    // the last stage's buffer needs no release: the producer has finished
}
