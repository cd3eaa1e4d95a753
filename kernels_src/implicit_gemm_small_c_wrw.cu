// Implicit-GEMM backward-weights convolution for few input channels (C <= 4: the RGB first layer of a CNN),
// FP16/BF16 with FP32 accumulation by mma.sync m16n8k16 (sm_80 and later), channels-last x and dy, KYXC dw.
//
// dw[k, col] = sum_j dy[j, k] * x[j shifted by tap(col), c(col)], col = tap * 4 + c over the Y*X taps of 4 channels
// (C padded to 4), j the N*Ho*Wo output pixels. GEMM rows = the block's BK = MB*16 output channels (grid.y slices of
// K), columns = NCOL = NB8*8 >= Y*X*4, reduction over pixels in k16 steps of 16 consecutive pixels of one output row.
// A block is persistent over tiles of TH x TW output pixels (as the forward kernel) and accumulates its tiles'
// contribution in registers; it then writes its FP32 partial plane ws[blockIdx.x][k][col], and
// igemm_small_c_wrw_reduce sums the planes in block order (no atomics: deterministic) into dw.
// Per tile, shared memory holds dy's TH*TW x BK tile (row pitch BK + 8 halves: ldmatrix rows 16 bytes apart in
// banks) and the input patch as pair words: word [prow][c][pcol] = (x[prow][pcol][c], x[prow][pcol + SW][c]), the
// channel-c values of two output pixels ow, ow + 1 at one tap. Warp w takes m16 block w % MB (16 channels) and NPW of
// the NB8 n8 column blocks (the (w / MB)-th share).
// A fragment (m16 x k16, rows = channels, k = pixels): dy is stored pixel-major, so ldmatrix .trans gives it:
// matrix i of .x4 is (channels 8(i%2).., pixels 8(i/2)..), each of its 8 rows 16 bytes of one pixel's channels.
// B fragment (k16 x n8, k = pixels, n = columns): thread (g = lane / 4, q = lane % 4) holds pixels 2q, 2q+1 (b0) and
// 2q+8, 2q+9 (b1) of column 8nb + g: the pair word at (th*SH + r*DH, c, (tw + 2q)*SW + s*DW), and 8*SW words on.
#include "common.cuh"

#ifndef TH
#define TH 8
#endif
#ifndef TW
#define TW 32
#endif
#ifndef MB
#define MB 4            // m16 blocks of output channels: BK = 16 * MB <= 64
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif
#ifndef IS_BF16
#define IS_BF16 0
#endif
#ifndef RED_WARPS
#define RED_WARPS 8
#endif
#ifndef PLANES
#define PLANES 1        // the partial planes of each K slice: the main kernel's grid.x
#endif

typedef unsigned int u32;

#define NT 256
#define WARPS 8
#define BK (MB * 16)
#define TAPS (P_Y * P_X)
#define NB8 ((TAPS * 4 + 7) / 8)
#define NCOL (NB8 * 8)
#define WPM (WARPS / MB)                  // warps sharing an m16 block
#define NPW ((NB8 + WPM - 1) / WPM)       // n8 blocks a warp
#define DP (BK + 8)                       // dy tile row pitch (halves)
#define PH ((TH - 1) * P_SH + (P_Y - 1) * P_DH + 1)
#define PW ((TW - 1) * P_SW + (P_X - 1) * P_DW + 1)
#define PW2 (PW + 1)                      // pair-word row: one more word than the columns a pair starts at
#define TILES_W ((P_WO + TW - 1) / TW)
#define TILES_H ((P_HO + TH - 1) / TH)
#define TILES ((long long)P_N * TILES_H * TILES_W)

static_assert(TW % 16 == 0, "k16 steps of 16 pixels of one tile row");
static_assert(MB == 1 || MB == 2 || MB == 4, "1, 2 or 4 m16 blocks: 8, 4 or 2 warps on each");
static_assert(P_C <= 4, "at most 4 input channels");
static_assert(P_K % 8 == 0, "16-byte runs of dy channels");
static_assert(XS_C == 1 && YS_C == 1, "channels-last x and dy");

__device__ __forceinline__ void mma16816(float* c, const u32* a, u32 b0, u32 b1)
{
#if IS_BF16
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ void ldsm_x4_t(u32* r, u32 addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ u32 bits(data_t v) { return (u32)*reinterpret_cast<unsigned short*>(&v); }

extern "C" __global__ void __launch_bounds__(NT, MIN_BLOCKS)
igemm_small_c_wrw(const data_t* __restrict__ dy, const data_t* __restrict__ x, float* __restrict__ ws)
{
    extern __shared__ __align__(16) u32 smem[];
    data_t* const ds = reinterpret_cast<data_t*>(smem);            // TH*TW x DP halves of dy
    u32* const ps = smem + TH * TW * DP / 2;                        // PH x 4 x PW2 pair words of x

    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int g = lane >> 2, q = lane & 3;
    const int k0 = blockIdx.y * BK;
    const int mb = warp % MB, nb0 = (warp / MB) * NPW;

    // this thread's B column offsets (pair words) per n8 block: column 8nb + g is channel g % 4 of tap 2nb + g / 4
    int boff[NPW];
#pragma unroll
    for(int i = 0; i < NPW; ++i)
    {
        const int tap = 2 * (nb0 + i) + (g >> 2), c = g & 3;
        boff[i] = tap < TAPS ? (((tap / P_X) * P_DH) * 4 + c) * PW2 + (tap % P_X) * P_DW : 0;
    }

    float acc[NPW][4];
#pragma unroll
    for(int i = 0; i < NPW; ++i)
#pragma unroll
        for(int e = 0; e < 4; ++e) acc[i][e] = 0.f;

    // ldmatrix row address of this lane: matrix i = lane / 8 holds channels 8(i % 2).. of pixels 8(i / 2) + lane % 8
    const int lm = lane >> 3, lr = lane & 7;
    const u32 a_lane = (u32)__cvta_generic_to_shared(ds) + (u32)((((lm >> 1) * 8 + lr) * DP + mb * 16 + (lm & 1) * 8) * 2);

#pragma unroll 1
    for(long long tile = blockIdx.x; tile < TILES; tile += gridDim.x)
    {
        const int tw0 = (int)(tile % TILES_W) * TW;
        const long long r1 = tile / TILES_W;
        const int th0 = (int)(r1 % TILES_H) * TH;
        const int nimg = (int)(r1 / TILES_H);
        const int ih0 = th0 * P_SH - P_PH, iw0 = tw0 * P_SW - P_PW;

        __syncthreads();        // the previous tile is no longer read
        // dy: 16-byte runs of BK channels per pixel, zeros past the image and past K
        const data_t* dyn = dy + (long long)nimg * YS_N;
        for(int i = t; i < TH * TW * (BK / 8); i += NT)
        {
            const int pix = i / (BK / 8), ch = (i % (BK / 8)) * 8;
            const int oh = th0 + pix / TW, ow = tw0 + pix % TW;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if(oh < P_HO && ow < P_WO && k0 + ch < P_K)
                v = *reinterpret_cast<const uint4*>(dyn + (long long)oh * YS_H + (long long)ow * YS_W + k0 + ch);
            *reinterpret_cast<uint4*>(ds + pix * DP + ch) = v;
        }
        // x as pair words: element (pr, pc, c) is the low half of word (pr, c, pc) and the high half of word
        // (pr, c, pc - SW); positions up to PW2 + SW cover both halves of every word; words of channels past C are 0
        const data_t* xn = x + (long long)nimg * XS_N;
        unsigned short* const ph = reinterpret_cast<unsigned short*>(ps);
        for(int i = t; i < PH * (PW2 + P_SW); i += NT)
        {
            const int pr = i / (PW2 + P_SW), pc = i % (PW2 + P_SW);
            const int ih = ih0 + pr, iw = iw0 + pc;
            const bool in = (unsigned)ih < (unsigned)P_HI && (unsigned)iw < (unsigned)P_WI;
            const data_t* src = xn + (long long)ih * XS_H + (long long)iw * XS_W;
#pragma unroll
            for(int c = 0; c < 4; ++c)
            {
                const int wi = (pr * 4 + c) * PW2 + pc;
                if(c >= P_C)
                {
                    if(pc < PW2)
                        ps[wi] = 0u;
                    continue;
                }
                const unsigned short v = in ? (unsigned short)bits(src[c]) : (unsigned short)0;
                if(pc < PW2)
                    ph[2 * wi] = v;
                if(pc >= P_SW)
                    ph[2 * (wi - P_SW) + 1] = v;
            }
        }
        __syncthreads();

#pragma unroll 1
        for(int row = 0; row < TH; ++row)
        {
#pragma unroll
            for(int st = 0; st < TW / 16; ++st)
            {
                u32 a[4];
                ldsm_x4_t(a, a_lane + (u32)((row * TW + st * 16) * DP * 2));
                const u32* pb = ps + (row * P_SH * 4) * PW2 + (st * 16 + 2 * q) * P_SW;
#pragma unroll
                for(int i = 0; i < NPW; ++i)
                    mma16816(acc[i], a, pb[boff[i]], pb[boff[i] + 8 * P_SW]);
            }
        }
    }

    // accumulator i: channels k0 + mb*16 + g (+8), columns 8(nb0 + i) + 2q, +1
    float* plane = ws + ((long long)blockIdx.x * gridDim.y + blockIdx.y) * (BK * NCOL);
#pragma unroll
    for(int i = 0; i < NPW; ++i)
    {
        const int col = 8 * (nb0 + i) + 2 * q;
        if(nb0 + i < NB8)
#pragma unroll
            for(int h = 0; h < 2; ++h)
                *reinterpret_cast<float2*>(plane + (mb * 16 + g + 8 * h) * NCOL + col) =
                    make_float2(acc[i][2 * h], acc[i][2 * h + 1]);
    }
}

// dw[k, r, s, c] = sum over the G planes in plane order: a block sums 32 consecutive elements (k, col) of a K slice's
// planes, each warp over a consecutive range of planes, then warp 0 adds the warps' sums in order (deterministic).
extern "C" __global__ void __launch_bounds__(RED_WARPS * 32)
igemm_small_c_wrw_reduce(const float* __restrict__ ws, data_t* __restrict__ dw)
{
    __shared__ float part[RED_WARPS][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int e = blockIdx.x * 32 + lane;           // element of the slice's plane
    const int slice = blockIdx.y, slices = gridDim.y;
    constexpr int per = (PLANES + RED_WARPS - 1) / RED_WARPS;
    const int p0 = warp * per, p1 = min(PLANES, p0 + per);
    float s = 0.f;
    if(e < BK * NCOL)
    {
#pragma unroll 4
        for(int p = p0; p < p1; ++p)
            s += ws[((long long)p * slices + slice) * (BK * NCOL) + e];
    }
    part[warp][lane] = s;
    __syncthreads();
    if(warp != 0 || e >= BK * NCOL)
        return;
    s = part[0][lane];
#pragma unroll
    for(int i = 1; i < RED_WARPS; ++i) s += part[i][lane];
    const int k = slice * BK + e / NCOL, col = e % NCOL;
    const int tap = col >> 2, c = col & 3;
    if(k < P_K && tap < TAPS && c < P_C)
        store_acc(dw + (long long)k * WS_K + (tap / P_X) * WS_Y + (tap % P_X) * WS_X + c * WS_C, s);
}
