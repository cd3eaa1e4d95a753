// Implicit-GEMM forward convolution for few input channels (C <= 4: the RGB first layer of a CNN), FP16/BF16 with
// FP32 accumulation by mma.sync m16n8k16 (sm_80 and later), channels-last x and y, KYXC w, groups = 1.
//
// GEMM rows = output pixels, columns = output channels, reduction k = tap * 4 + c over the Y*X filter taps of 4
// channels (C padded to 4; the padding channels and the taps past Y*X have zero weights): KT = ceil(Y*X*4 / 16) k16
// steps, against C*Y*X / 16 for a channel-major reduction that would need C % 16 == 0.
// A block is persistent over tiles of TH x TW output pixels of one image (TW % 16 == 0) and takes the BN = NB*8
// output channels n0 .. n0 + BN of grid.y. It stages BN x KT*16 weights once, then for each tile the input patch the
// tile reads: PH = (TH-1)*SH + (Y-1)*DH + 1 rows x PW = (TW-1)*SW + (X-1)*DW + 1 columns x 4 channels (zeros outside
// the image), 8 bytes a position. Warp w multiplies MW m16 blocks (16 consecutive pixels of one tile row each) by the
// NB n8 blocks.
// A fragment (row-major m16 x k16): thread (g = lane / 4, q = lane % 4) holds rows g and g + 8 at k columns 2q, 2q+1
// (a0, a1) and 2q+8, 2q+9 (a2, a3). With 4 channels a tap, columns 2q, 2q+1 of step t are channels 2(q%2), +1 of tap
// 4t + q/2, and 2q+8, 2q+9 those of tap 4t + 2 + q/2: one 32-bit shared load each, at the pixel's patch word plus
// the tap's word offset ((r*DH)*PW + s*DW)*2, a compile-time constant per step chosen by q/2.
// B fragment (col-major k16 x n8): b0 = w[n = 8j + g][k = 16t + 2q, +1], b1 the same at k + 8: stored as weight
// words [n][t][q][b0, b1], one 8-byte shared load a fragment, with a row pitch of WP words, WP % 16 == 8 (each
// half-warp's 8-byte loads, rows g = 0..3 or 4..7, fall in distinct banks).
// Epilogue: thread (g, q) holds columns 8j + 2q, +1 of rows g and g + 8, stored as 4-byte pairs (STORE16 = 0); with
// STORE16 = 1 a 4 x 4 transpose of 32-bit words within each quad (shuffles) gives thread q the 8 columns 8j..8j+7 of
// n8 blocks j = q and q + 4 (of each group of 4), stored as 16 bytes: full 32-byte sectors of y's channel runs (faster
// where y's write dominates, e.g. stride 1; the shuffles cost more than they save on short reductions).
#include "common.cuh"

#ifndef TH
#define TH 8
#endif
#ifndef TW
#define TW 32
#endif
#ifndef MW
#define MW 2
#endif
#ifndef NB
#define NB 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif
#ifndef IS_BF16
#define IS_BF16 0
#endif
#ifndef STORE16
#define STORE16 1
#endif

typedef unsigned int u32;

#define WARPS (TH * TW / (16 * MW))
#define NT (WARPS * 32)
#define BN (NB * 8)
#define TAPS (P_Y * P_X)
#define KT ((TAPS * 4 + 15) / 16)
#define WP (KT * 8 + ((KT % 2) ? 0 : 8))
#define PH ((TH - 1) * P_SH + (P_Y - 1) * P_DH + 1)
#define PW ((TW - 1) * P_SW + (P_X - 1) * P_DW + 1)
#define TILES_W ((P_WO + TW - 1) / TW)
#define TILES_H ((P_HO + TH - 1) / TH)
#define TILES ((long long)P_N * TILES_H * TILES_W)

static_assert(TW % 16 == 0 && (TH * TW) % (16 * MW) == 0, "whole m16 blocks of one tile row");
static_assert(NB >= 1 && NB <= 8, "BN = NB * 8 <= 64");
static_assert(P_C <= 4, "at most 4 input channels");
static_assert(XS_C == 1 && YS_C == 1, "channels-last x and y");

// the word offset of tap `tap` within a pixel's patch window (0 past the filter: those columns' weights are zero)
__device__ __forceinline__ constexpr int tap_off(int tap)
{
    return tap < TAPS ? (((tap / P_X) * P_DH) * PW + (tap % P_X) * P_DW) * 2 : 0;
}

__device__ __forceinline__ void mma16816(float* c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1)
{
#if IS_BF16
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ u32 pack2(data_t lo, data_t hi)
{
    return (u32)*reinterpret_cast<unsigned short*>(&lo) | ((u32)*reinterpret_cast<unsigned short*>(&hi) << 16);
}

// two outputs rounded to data_t, packed as one word (the lower column in the low half)
__device__ __forceinline__ u32 pack_acc(float v0, float v1)
{
#if IS_BF16
    __nv_bfloat162 h = __floats2bfloat162_rn(v0, v1);
#else
    __half2 h = __floats2half2_rn(v0, v1);
#endif
    return *reinterpret_cast<u32*>(&h);
}

extern "C" __global__ void __launch_bounds__(NT, MIN_BLOCKS)
igemm_small_c_fwd(const data_t* __restrict__ x, const data_t* __restrict__ w, data_t* __restrict__ y)
{
    extern __shared__ __align__(16) u32 smem[];
    u32* const ws = smem;                   // BN x WP words of weights
    u32* const ps = smem + BN * WP;         // PH x PW positions x 2 words of the input patch

    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int g = lane >> 2, q = lane & 3;
    const int n0 = blockIdx.y * BN;

    // weights: word (n, kp) holds k = 2kp, 2kp + 1: channels c, c + 1 (c = 2kp % 4) of tap 2kp / 4; stored at
    // (n, t = kp / 8, q = kp % 4, h = kp % 8 / 4): b0 and b1 of a fragment adjacent
    for(int i = t; i < BN * KT * 8; i += NT)
    {
        const int n = i / (KT * 8), kp = i % (KT * 8);
        const int tap = kp >> 1, c = (kp & 1) * 2;
        const int slot = (kp & ~7) + (kp & 3) * 2 + ((kp >> 2) & 1);
        const data_t zero = data_t(0.f);
        data_t v0 = zero, v1 = zero;
        if(n0 + n < P_K && tap < TAPS)
        {
            const data_t* src = w + (long long)(n0 + n) * WS_K + (tap / P_X) * WS_Y + (tap % P_X) * WS_X;
            if(c < P_C)
                v0 = src[c * WS_C];
            if(c + 1 < P_C)
                v1 = src[(c + 1) * WS_C];
        }
        ws[n * WP + slot] = pack2(v0, v1);
    }

    // this thread's patch words of its fragment rows: pixel (th, tw) of m16 block i at ((th*SH)*PW + tw*SW)*2,
    // plus the channel pair (q % 2)
    int pw0[MW], pw1[MW];
#pragma unroll
    for(int i = 0; i < MW; ++i)
    {
        const int m = (warp * MW + i) * 16 + g;
        pw0[i] = (((m / TW) * P_SH) * PW + (m % TW) * P_SW) * 2 + (q & 1);
        pw1[i] = pw0[i] + 8 * P_SW * 2;        // row g + 8: 8 columns further along the same tile row
    }
    const bool hi = q >> 1;

#pragma unroll 1
    for(long long tile = blockIdx.x; tile < TILES; tile += gridDim.x)
    {
        const int tw0 = (int)(tile % TILES_W) * TW;
        const long long r1 = tile / TILES_W;
        const int th0 = (int)(r1 % TILES_H) * TH;
        const int nimg = (int)(r1 / TILES_H);
        const int ih0 = th0 * P_SH - P_PH, iw0 = tw0 * P_SW - P_PW;

        __syncthreads();        // the previous tile's patch is no longer read (and the weights are stored)
        const data_t* xn = x + (long long)nimg * XS_N;
        for(int i = t; i < PH * PW; i += NT)
        {
            const int ih = ih0 + i / PW, iw = iw0 + i % PW;
            const data_t zero = data_t(0.f);
            data_t v[4] = {zero, zero, zero, zero};
            if((unsigned)ih < (unsigned)P_HI && (unsigned)iw < (unsigned)P_WI)
            {
                const data_t* src = xn + (long long)ih * XS_H + (long long)iw * XS_W;
#pragma unroll
                for(int c = 0; c < P_C; ++c)
                    v[c] = src[c];
            }
            ps[2 * i] = pack2(v[0], v[1]);
            ps[2 * i + 1] = pack2(v[2], v[3]);
        }
        __syncthreads();

        float acc[MW][NB][4];
#pragma unroll
        for(int i = 0; i < MW; ++i)
#pragma unroll
            for(int j = 0; j < NB; ++j)
#pragma unroll
                for(int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

#pragma unroll
        for(int s = 0; s < KT; ++s)
        {
            const int oa = hi ? tap_off(4 * s + 1) : tap_off(4 * s);
            const int ob = hi ? tap_off(4 * s + 3) : tap_off(4 * s + 2);
            uint2 b[NB];
#pragma unroll
            for(int j = 0; j < NB; ++j)
                b[j] = *reinterpret_cast<const uint2*>(ws + (8 * j + g) * WP + 8 * s + 2 * q);
#pragma unroll
            for(int i = 0; i < MW; ++i)
            {
                const u32 a0 = ps[pw0[i] + oa], a1 = ps[pw1[i] + oa], a2 = ps[pw0[i] + ob], a3 = ps[pw1[i] + ob];
#pragma unroll
                for(int j = 0; j < NB; ++j)
                    mma16816(acc[i][j], a0, a1, a2, a3, b[j].x, b[j].y);
            }
        }

        // accumulator (i, j): rows g, g + 8 of m16 block i, columns 8j + 2q, +1, as a word of two outputs
        data_t* yn = y + (long long)nimg * YS_N;
#pragma unroll
        for(int i = 0; i < MW; ++i)
#pragma unroll
            for(int h = 0; h < 2; ++h)
            {
                const int m = (warp * MW + i) * 16 + g + 8 * h;
                const int oh = th0 + m / TW, ow = tw0 + m % TW;
                const bool ok = oh < P_HO && ow < P_WO;
                data_t* dst = yn + (long long)oh * YS_H + (long long)ow * YS_W;
#if STORE16
#pragma unroll
                for(int j0 = 0; j0 < NB; j0 += 4)
                {
                    // words v[jj] = columns 8(j0 + jj) + 2q, +1; after the quad transpose, o[qq] = thread qq's word of
                    // n8 block j0 + q: this thread holds the 8 columns of block j0 + q
                    u32 v[4], o[4];
#pragma unroll
                    for(int jj = 0; jj < 4; ++jj)
                        v[jj] = j0 + jj < NB ? pack_acc(acc[i][j0 + jj][2 * h], acc[i][j0 + jj][2 * h + 1]) : 0u;
#pragma unroll
                    for(int r = 0; r < 4; ++r)
                    {
                        // round r: send word (q + r) % 4 to thread (q + r) % 4, receive from thread (q - r) % 4 its word q
                        const int si = (q + r) & 3, src = (q - r) & 3;
                        const u32 send = si == 0 ? v[0] : si == 1 ? v[1] : si == 2 ? v[2] : v[3];
                        const u32 got = __shfl_sync(0xffffffffu, send, (lane & ~3) | src);
                        if(src == 0) o[0] = got;
                        if(src == 1) o[1] = got;
                        if(src == 2) o[2] = got;
                        if(src == 3) o[3] = got;
                    }
                    const int col = n0 + 8 * (j0 + q);
                    if(!ok || j0 + q >= NB || col >= P_K)
                        continue;
                    if(col + 8 <= P_K && (P_K % 8) == 0)
                        *reinterpret_cast<uint4*>(dst + col) = make_uint4(o[0], o[1], o[2], o[3]);
                    else
                    {
#pragma unroll
                        for(int e = 0; e < 4; ++e)
                            if(col + 2 * e < P_K)
                                *reinterpret_cast<u32*>(dst + col + 2 * e) = o[e];
                    }
                }
#else
#pragma unroll
                for(int j = 0; j < NB; ++j)
                {
                    const int col = n0 + 8 * j + 2 * q;
                    if(ok && col < P_K)
                        *reinterpret_cast<u32*>(dst + col) = pack_acc(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                }
#endif
            }
    }
}
