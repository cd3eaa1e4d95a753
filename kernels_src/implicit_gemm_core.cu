// Implicit-GEMM engine shared by implicit_gemm_fwd.cu, implicit_gemm_bwd.cu and implicit_gemm_wrw.cu (included textually).
//
// C[m, n] = sum_kk A[m, kk] * B[kk, n] for one group, with A and B gathered from the tensors on
// the fly. A direction file defines, before including this file:
//   GEMM_M, GEMM_N (the group's GEMM sizes) and three policies:
//   OpA, OpB: struct Row (per GEMM row of the operand: m for A, n for B, fixed for the whole
//             K loop), struct Col (per kk), static row(index_t r), col(index_t kk, index_t kend),
//             elem(Row, Col, index_t& off) -> valid (offset of element (r, kk) from the operand's
//             base pointer; invalid elements, padding included, read as zero).
//   Epi:      row(index_t m) and col(index_t n) output offsets (C[m, n] at row(m) + col(n)),
//             put(index_t off, float v).
//
// Block tile BM x BN, K step BK, STAGES shared-memory buffers filled by cp.async (4, 8 or 16
// bytes, zero-filled when invalid). A "unit" is VEC consecutive elements along the operand's
// contiguous axis in global memory: along kk (xx_KC = 1) or along the GEMM row (xx_KC = 0);
// the host guarantees that a unit is contiguous, aligned, and valid or invalid as a whole.
// 16-bit operands with VEC = 1 cannot use cp.async (4 bytes minimum): they load into registers
// before the tile's math and store to shared memory after it (register double buffering).
//
// Math (MATH): 0: FP32 FFMA, each thread a TM x TN register tile of outer products, both
// operands in shared memory k-outer ([BK][R + 4]) so a thread reads float4 runs of its rows;
// 1: FP16/BF16 mma.sync m16n8k16 (FP32 accumulation), fragments by ldmatrix (.trans when the
// operand is stored k-outer); 2: TF32 mma.sync m16n8k8, fragments by scalar shared loads.
// For MATH 1 and 2 an operand keeps its global orientation in shared memory: [R][BK + pad]
// when contiguous along kk, [BK][R + pad] otherwise.
#include "common.cuh"

#ifndef MATH
#define MATH 0
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef A_KC
#define A_KC 1
#endif
#ifndef A_VEC
#define A_VEC 1
#endif
#ifndef B_KC
#define B_KC 1
#endif
#ifndef B_VEC
#define B_VEC 1
#endif
#ifndef IS_BF16
#define IS_BF16 0
#endif
#ifndef EPI_SMEM
#define EPI_SMEM 0     // 1: stage the output tile in shared memory and store it coalesced
#endif
#ifndef C_MCONTIG
#define C_MCONTIG 0    // the output is contiguous along GEMM rows m (else along n)
#endif

#if MATH == 0
#define NT ((BM / TM) * (BN / TN))
#else
#define NT ((BM / WM) * (BN / WN) * 32)
#endif

typedef unsigned int u32;

template <class T> __device__ constexpr T cmin(T a, T b) { return a < b ? a : b; }
template <class T> __device__ constexpr T cmax(T a, T b) { return a > b ? a : b; }

__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, bool valid)
{
    const u32 d = smem_u32(dst);
    const int n = valid ? BYTES : 0;
    if constexpr(BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(n));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(BYTES), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Shared-memory geometry of one operand stage: R GEMM rows x BK.
template <int R, bool KC>
struct Smem
{
    static constexpr bool KOUTER = (MATH == 0) || !KC;
    static constexpr int PAD = KOUTER ? (MATH == 0 ? 4 : 8) : (MATH == 1 ? 8 : 4);
    static constexpr int LD = KOUTER ? R + PAD : BK + PAD;
    static constexpr int STAGE = KOUTER ? BK * LD : R * LD;  // elements
    static __device__ __forceinline__ int at(int r, int k) { return KOUTER ? k * LD + r : r * LD + k; }
};

// Global -> shared loader of one operand (R rows of the tile, rows starting at row_base).
// Contiguous along kk: TK = BK/VEC threads cover a row's units, RP = NT/TK rows per pass; each
// thread has one kk (one Col per tile) and NR rows. Contiguous along rows: TR threads cover
// TR*VEC consecutive rows, KP = NT/TR k-lines per pass; each thread has NR rows, NK kk values.
template <class Op, int R, bool KC, int VEC>
struct Loader
{
    using S = Smem<R, KC>;
    static constexpr bool REG = VEC * (int)sizeof(data_t) < 4;
    static constexpr int UL = KC ? BK / VEC : R / VEC;
    static constexpr int TK = KC ? UL : 1;
    static constexpr int RP = KC ? NT / TK : 1;
    static constexpr int TR = KC ? 1 : cmin(UL, cmax(32, NT / BK));
    static constexpr int KP = KC ? 1 : NT / TR;
    static constexpr int NR = KC ? (R + RP - 1) / RP : UL / TR;
    static constexpr int NK = KC ? 1 : (BK + KP - 1) / KP;
    static constexpr bool RGUARD = KC && NR * RP != R;
    static constexpr bool KGUARD = !KC && NK * KP != BK;
    static_assert(!KC || (BK % VEC == 0 && NT % TK == 0), "loader: kk units must tile the threads");
    static_assert(KC || (R % VEC == 0 && UL % TR == 0 && NT % TR == 0), "loader: row units must tile the threads");
    static_assert(MATH != 0 || !KC || VEC == 1, "FFMA k-outer staging scatters single elements");
    static_assert(!REG || VEC == 1, "register path is for single 16-bit elements");

    typename Op::Row rows[NR];
    int r0, k0;
    unsigned short regs[REG ? NK : 1][REG ? NR : 1];

    __device__ __forceinline__ int row_at(int i) const { return KC ? r0 + i * RP : r0 + i * TR * VEC; }
    __device__ __forceinline__ int k_at(int l) const { return KC ? k0 : k0 + l * KP; }

    __device__ __forceinline__ Loader(index_t row_base)
    {
        const int t = threadIdx.x;
        if(KC) { k0 = (t % TK) * VEC; r0 = t / TK; }
        else   { r0 = (t % TR) * VEC; k0 = t / TR; }
#pragma unroll
        for(int i = 0; i < NR; ++i) rows[i] = Op::row(row_base + row_at(i));
    }

    // Start loading the tile kk in [kt, kt + BK) (clipped to kend) into stage st.
    __device__ __forceinline__ void issue(data_t* st, const data_t* __restrict__ base, index_t kt, index_t kend)
    {
#pragma unroll
        for(int l = 0; l < NK; ++l)
        {
            const int kl = k_at(l);
            if(KGUARD && kl >= BK) continue;
            const typename Op::Col col = Op::col(kt + kl, kend);
#pragma unroll
            for(int i = 0; i < NR; ++i)
            {
                const int r = row_at(i);
                if(RGUARD && r >= R) continue;
                index_t off = 0;
                const bool ok = Op::elem(rows[i], col, off);
                if constexpr(REG)
                    regs[REG ? l : 0][REG ? i : 0] =
                        ok ? __ldg(reinterpret_cast<const unsigned short*>(base) + off) : (unsigned short)0;
                else
                    cp_async<VEC * (int)sizeof(data_t)>(st + S::at(r, kl), ok ? base + off : base, ok);
            }
        }
    }

    // Register path only: write the registers loaded by issue() into stage st.
    __device__ __forceinline__ void store(data_t* st)
    {
        if constexpr(REG)
        {
            unsigned short* s = reinterpret_cast<unsigned short*>(st);
#pragma unroll
            for(int l = 0; l < NK; ++l)
            {
                const int kl = k_at(l);
                if(KGUARD && kl >= BK) continue;
#pragma unroll
                for(int i = 0; i < NR; ++i)
                {
                    const int r = row_at(i);
                    if(RGUARD && r >= R) continue;
                    s[S::at(r, kl)] = regs[l][i];
                }
            }
        }
    }
};

using SA = Smem<BM, A_KC>;
using SB = Smem<BN, B_KC>;
#define SMEM_STAGE_ELEMS (SA::STAGE + SB::STAGE)

// Staged epilogue: the block's output tile, converted to data_t, in shared memory as
// [n][BM + CPAD] (output contiguous along m) or [m][BN + CPAD], then the row and column output
// offsets (BM + BN index_t); each thread then stores consecutive elements of the contiguous axis.
struct CTile
{
    static constexpr int CPAD = sizeof(data_t) == 4 ? 1 : 2;
    static constexpr int LD = C_MCONTIG ? BM + CPAD : BN + CPAD;
    static constexpr int ELEMS = (C_MCONTIG ? BN : BM) * LD;
    static constexpr int OFFS = (ELEMS * (int)sizeof(data_t) + 15) / 16 * 16;  // byte offset of the offsets
    static __device__ __forceinline__ int at(int m, int n) { return C_MCONTIG ? n * LD + m : m * LD + n; }
};

#if MATH == 0
// ---------------------------------------------------------------------------------------------
// FP32 FFMA: thread (ty, tx) owns rows {h * BM/(TM/4) + 4*ty + i} and cols {h * BN/(TN/4) + 4*tx + j}
// (runs of 4 so that each read is one float4 from the k-outer stage).
#define ACC_DECL float acc[TM][TN]
struct Math
{
    static constexpr int NTX = BN / TN, NTY = BM / TM;
    static constexpr int CWM = BM / (TM / 4), CWN = BN / (TN / 4);
    static_assert(TM % 4 == 0 && TN % 4 == 0, "FFMA thread tiles are multiples of 4");
    static_assert(BM % TM == 0 && BN % TN == 0, "FFMA block tile");

    static __device__ __forceinline__ void zero(ACC_DECL)
    {
#pragma unroll
        for(int i = 0; i < TM; ++i)
#pragma unroll
            for(int j = 0; j < TN; ++j) acc[i][j] = 0.f;
    }

    static __device__ __forceinline__ void tile(ACC_DECL, const data_t* sa, const data_t* sb)
    {
        const int tx = threadIdx.x % NTX, ty = threadIdx.x / NTX;
        const float* a_s = reinterpret_cast<const float*>(sa) + 4 * ty;
        const float* b_s = reinterpret_cast<const float*>(sb) + 4 * tx;
#pragma unroll
        for(int k = 0; k < BK; ++k)
        {
            float a[TM], b[TN];
#pragma unroll
            for(int h = 0; h < TM / 4; ++h)
            {
                const float4 v = *reinterpret_cast<const float4*>(a_s + k * SA::LD + h * CWM);
                a[4 * h] = v.x; a[4 * h + 1] = v.y; a[4 * h + 2] = v.z; a[4 * h + 3] = v.w;
            }
#pragma unroll
            for(int h = 0; h < TN / 4; ++h)
            {
                const float4 v = *reinterpret_cast<const float4*>(b_s + k * SB::LD + h * CWN);
                b[4 * h] = v.x; b[4 * h + 1] = v.y; b[4 * h + 2] = v.z; b[4 * h + 3] = v.w;
            }
#pragma unroll
            for(int i = 0; i < TM; ++i)
#pragma unroll
                for(int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
    }

    template <class Epi>
    static __device__ __forceinline__ void epilogue(ACC_DECL, const Epi& epi, index_t m0, index_t n0)
    {
        const int tx = threadIdx.x % NTX, ty = threadIdx.x / NTX;
        index_t co[TN];
        bool cok[TN];
#pragma unroll
        for(int j = 0; j < TN; ++j)
        {
            const index_t n = n0 + (j / 4) * CWN + 4 * tx + (j % 4);
            cok[j] = n < GEMM_N;
            co[j] = cok[j] ? epi.col(n) : 0;
        }
#pragma unroll
        for(int i = 0; i < TM; ++i)
        {
            const index_t m = m0 + (i / 4) * CWM + 4 * ty + (i % 4);
            if(m >= GEMM_M) continue;
            const index_t ro = epi.row(m);
#pragma unroll
            for(int j = 0; j < TN; ++j)
                if(cok[j]) epi.put(ro + co[j], acc[i][j]);
        }
    }

    static __device__ __forceinline__ void stage(ACC_DECL, data_t* cs)
    {
        const int tx = threadIdx.x % NTX, ty = threadIdx.x / NTX;
#pragma unroll
        for(int i = 0; i < TM; ++i)
#pragma unroll
            for(int j = 0; j < TN; ++j)
                store_acc(cs + CTile::at((i / 4) * CWM + 4 * ty + (i % 4), (j / 4) * CWN + 4 * tx + (j % 4)), acc[i][j]);
    }
};

#else
// ---------------------------------------------------------------------------------------------
// Tensor cores: warps WARPS_M x WARPS_N, warp tile WM x WN of MI x NI mma tiles (16 x 8).
#define WARPS_M (BM / WM)
#define WARPS_N (BN / WN)
#define MI (WM / 16)
#define NI (WN / 8)
#define ACC_DECL float acc[MI][NI][4]
#if MATH == 1
#define KSTEP 16
#else
#define KSTEP 8
#endif

__device__ __forceinline__ void ldsm_x4(u32& r0, u32& r1, u32& r2, u32& r3, u32 addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(u32& r0, u32& r1, u32& r2, u32& r3, u32 addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ u32 to_tf32(float f)
{
    u32 r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(f));
    return r;
}

__device__ __forceinline__ void mma(float* c, const u32* a, const u32* b)
{
#if MATH == 1 && IS_BF16
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif MATH == 1
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

struct Math
{
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0, "mma warp tiles");
    static_assert(BK % KSTEP == 0, "BK is a multiple of the mma K");

    static __device__ __forceinline__ void zero(ACC_DECL)
    {
#pragma unroll
        for(int i = 0; i < MI; ++i)
#pragma unroll
            for(int j = 0; j < NI; ++j)
#pragma unroll
                for(int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    }

    static __device__ __forceinline__ void tile(ACC_DECL, const data_t* sa, const data_t* sb)
    {
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        const int wm0 = (warp % WARPS_M) * WM, wn0 = (warp / WARPS_M) * WN;
#if MATH == 1
        // ldmatrix lane roles: matrix q = lane / 8, row-in-matrix i = lane % 8.
        const int q = lane / 8, i8 = lane % 8;
#pragma unroll
        for(int ks = 0; ks < BK; ks += 16)
        {
            u32 a[MI][4], b[NI][2];
#pragma unroll
            for(int mi = 0; mi < MI; ++mi)
            {
                const int m = wm0 + mi * 16;
                if constexpr(SA::KOUTER)  // [k][m]: matrices (k 0-7|8-15) x (m 0-7|8-15), transposed
                    ldsm_x4_t(a[mi][0], a[mi][1], a[mi][2], a[mi][3],
                              smem_u32(sa + SA::at(m + (q % 2) * 8, ks + i8 + (q / 2) * 8)));
                else  // [m][k]: lanes 0-15 rows m..m+15 at k, lanes 16-31 the same rows at k + 8
                    ldsm_x4(a[mi][0], a[mi][1], a[mi][2], a[mi][3],
                            smem_u32(sa + SA::at(m + (lane % 16), ks + (lane / 16) * 8)));
            }
#pragma unroll
            for(int ni = 0; ni < NI; ni += 2)
            {
                const int n = wn0 + ni * 8;
                if constexpr(SB::KOUTER)  // [k][n]: matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), ...
                    ldsm_x4_t(b[ni][0], b[ni][1], b[ni + 1][0], b[ni + 1][1],
                              smem_u32(sb + SB::at(n + (q / 2) * 8, ks + i8 + (q % 2) * 8)));
                else  // [n][k]: matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), ...
                    ldsm_x4(b[ni][0], b[ni][1], b[ni + 1][0], b[ni + 1][1],
                            smem_u32(sb + SB::at(n + i8 + (q / 2) * 8, ks + (q % 2) * 8)));
            }
#pragma unroll
            for(int mi = 0; mi < MI; ++mi)
#pragma unroll
                for(int ni = 0; ni < NI; ++ni) mma(acc[mi][ni], a[mi], b[ni]);
        }
#else
        // TF32 m16n8k8 fragments: a = A[g|g+8][t|t+4], b = B[k = t|t+4][n = g], g = lane/4, t = lane%4.
        const int g = lane / 4, t = lane % 4;
        const float* fa = reinterpret_cast<const float*>(sa);
        const float* fb = reinterpret_cast<const float*>(sb);
#pragma unroll
        for(int ks = 0; ks < BK; ks += 8)
        {
            u32 a[MI][4], b[NI][2];
#pragma unroll
            for(int mi = 0; mi < MI; ++mi)
            {
                const int m = wm0 + mi * 16 + g;
                a[mi][0] = to_tf32(fa[SA::at(m, ks + t)]);
                a[mi][1] = to_tf32(fa[SA::at(m + 8, ks + t)]);
                a[mi][2] = to_tf32(fa[SA::at(m, ks + t + 4)]);
                a[mi][3] = to_tf32(fa[SA::at(m + 8, ks + t + 4)]);
            }
#pragma unroll
            for(int ni = 0; ni < NI; ++ni)
            {
                const int n = wn0 + ni * 8 + g;
                b[ni][0] = to_tf32(fb[SB::at(n, ks + t)]);
                b[ni][1] = to_tf32(fb[SB::at(n, ks + t + 4)]);
            }
#pragma unroll
            for(int mi = 0; mi < MI; ++mi)
#pragma unroll
                for(int ni = 0; ni < NI; ++ni) mma(acc[mi][ni], a[mi], b[ni]);
        }
#endif
    }

    // Accumulator (mi, ni): c0, c1 at row g, cols 2t, 2t+1; c2, c3 at row g + 8.
    template <class Epi>
    static __device__ __forceinline__ void epilogue(ACC_DECL, const Epi& epi, index_t m0, index_t n0)
    {
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        const index_t wm0 = m0 + (warp % WARPS_M) * WM, wn0 = n0 + (warp / WARPS_M) * WN;
        const int g = lane / 4, t = lane % 4;
        index_t co[NI][2];
        bool cok[NI][2];
#pragma unroll
        for(int ni = 0; ni < NI; ++ni)
#pragma unroll
            for(int e = 0; e < 2; ++e)
            {
                const index_t n = wn0 + ni * 8 + 2 * t + e;
                cok[ni][e] = n < GEMM_N;
                co[ni][e] = cok[ni][e] ? epi.col(n) : 0;
            }
#pragma unroll
        for(int mi = 0; mi < MI; ++mi)
#pragma unroll
            for(int h = 0; h < 2; ++h)
            {
                const index_t m = wm0 + mi * 16 + g + 8 * h;
                if(m >= GEMM_M) continue;
                const index_t ro = epi.row(m);
#pragma unroll
                for(int ni = 0; ni < NI; ++ni)
#pragma unroll
                    for(int e = 0; e < 2; ++e)
                        if(cok[ni][e]) epi.put(ro + co[ni][e], acc[mi][ni][2 * h + e]);
            }
    }

    static __device__ __forceinline__ void stage(ACC_DECL, data_t* cs)
    {
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        const int wm0 = (warp % WARPS_M) * WM, wn0 = (warp / WARPS_M) * WN;
        const int g = lane / 4, t = lane % 4;
#pragma unroll
        for(int mi = 0; mi < MI; ++mi)
#pragma unroll
            for(int ni = 0; ni < NI; ++ni)
#pragma unroll
                for(int e = 0; e < 4; ++e)
                    store_acc(cs + CTile::at(wm0 + mi * 16 + g + 8 * (e / 2), wn0 + ni * 8 + 2 * t + (e % 2)),
                              acc[mi][ni][e]);
    }
};
#endif

// The block's GEMM: rows [m0, m0 + BM), cols [n0, n0 + BN), reduction [kbeg, kend).
template <class OpA, class OpB, class Epi>
__device__ __forceinline__ void igemm_block(const data_t* __restrict__ A, const data_t* __restrict__ B,
                                            const Epi& epi, index_t m0, index_t n0, index_t kbeg, index_t kend)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    data_t* sa = reinterpret_cast<data_t*>(smem_raw);
    data_t* sb = sa + STAGES * SA::STAGE;

    Loader<OpA, BM, A_KC, A_VEC> la(m0);
    Loader<OpB, BN, B_KC, B_VEC> lb(n0);
    ACC_DECL;
    Math::zero(acc);

    const index_t ktiles = (kend - kbeg + BK - 1) / BK;
#pragma unroll
    for(int s = 0; s < STAGES - 1; ++s)
    {
        if(s < ktiles)
        {
            la.issue(sa + s * SA::STAGE, A, kbeg + (index_t)s * BK, kend);
            lb.issue(sb + s * SB::STAGE, B, kbeg + (index_t)s * BK, kend);
            la.store(sa + s * SA::STAGE);
            lb.store(sb + s * SB::STAGE);
        }
        cp_async_commit();
    }
    int rd = 0, wr = STAGES - 1;  // stage read this step, stage written this step
    for(index_t kt = 0; kt < ktiles; ++kt)
    {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const index_t kn = kt + STAGES - 1;
        const bool more = kn < ktiles;
        if(more)
        {
            la.issue(sa + wr * SA::STAGE, A, kbeg + kn * BK, kend);
            lb.issue(sb + wr * SB::STAGE, B, kbeg + kn * BK, kend);
        }
        cp_async_commit();
        Math::tile(acc, sa + rd * SA::STAGE, sb + rd * SB::STAGE);
        if(more)
        {
            la.store(sa + wr * SA::STAGE);
            lb.store(sb + wr * SB::STAGE);
        }
        rd = rd == STAGES - 1 ? 0 : rd + 1;
        wr = wr == STAGES - 1 ? 0 : wr + 1;
    }
    cp_async_wait<0>();
#if EPI_SMEM
    __syncthreads();  // every warp is done with the pipeline buffers
    data_t* cs = reinterpret_cast<data_t*>(smem_raw);
    index_t* roff = reinterpret_cast<index_t*>(smem_raw + CTile::OFFS);
    index_t* coff = roff + BM;
    for(int i = threadIdx.x; i < BM; i += NT)
        roff[i] = m0 + i < GEMM_M ? epi.row(m0 + i) : (index_t)-1;
    for(int j = threadIdx.x; j < BN; j += NT)
        coff[j] = n0 + j < GEMM_N ? epi.col(n0 + j) : (index_t)-1;
    Math::stage(acc, cs);
    __syncthreads();
#pragma unroll 4
    for(int e = threadIdx.x; e < BM * BN; e += NT)
    {
        const int i = C_MCONTIG ? e % BM : e / BN, j = C_MCONTIG ? e / BM : e % BN;
        const index_t ro = roff[i], co = coff[j];
        if(ro >= 0 && co >= 0) epi.put_raw(ro + co, cs[CTile::at(i, j)]);
    }
#else
    Math::epilogue(acc, epi, m0, n0);
#endif
}
