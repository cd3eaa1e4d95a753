// FFT convolution, the hot part: complex multiply-accumulate across channels at every frequency.
//
// For every group g and frequency f:  O[n][g*NI + i][f] = sum_{j < NJ} A[n][g*NJ + j][f] * B_g[i][j][f]
//   forward:        A = X (A_CH = C),  B = conj(W) (i = k, j = c),  O = Y  (O_CH = K)
//   backward data:  A = dY (A_CH = K), B = W       (i = c, j = k),  O = dX (O_CH = C)
// Spectra are planes of FP complex values (float2), FP a multiple of FT so a frequency tile never
// crosses a plane; the padding frequencies F..FP-1 of A hold zeros.
//
// A block computes FT frequencies x NBT = GN*TN images x IBT = GI*TI output channels of one group
// (per frequency a small complex GEMM). A thread owns one frequency and a TN x TI tile of complex
// accumulators. The reduction walks JC channels at a time through shared memory, tiles stored
// [j][row][f] so a half-warp reads 16 consecutive frequencies (128 B, conflict-free); the next
// chunk is prefetched into registers (float4 = 2 frequencies) while the current one is consumed.
// Block index = ((f_tile*G + g)*N_TILES + n_tile)*I_TILES + i_tile: the blocks that share a
// frequency tile (and so their A and B planes) run together and hit in L2.
//
// B comes either from the spectrum fft_wdft.cu wrote (FUSE_W=0; B_g[i][j] is the plane at
// g*B_GS + i*B_IS + j*B_JS) or, for small filters (FUSE_W=1), is generated here from the raw taps:
//   B(k, c, f) = sum_t w[k, c, t] * tw_t(f),
//   tw_t(f) = e^{SIGN*2*pi*i*(fd*q*DLZ/LD + fh*r*DLY/LH + fw*s*DLX/LW)} / (LD*LH*LW)
// with t = (q, r, s) and f = (fd*LH + fh)*LW2 + fw, as fft_wdft.cu defines it. A thread keeps the
// TAPS twiddles of its frequency in registers; a chunk's taps (JC x IBT x TAPS, padded to TP for
// float4 broadcasts) are staged in shared memory; the weight spectrum never touches DRAM.
// Weight element (k, c, t) is at k*W_KS + c*W_CS + t*W_TS (KCZYX or KZYXC).
#include "common.cuh"

#define NT (FT * GN * GI)
#define NBT (GN * TN)
#define IBT (GI * TI)
#define N_TILES ((NB_ + NBT - 1) / NBT)
#define I_TILES ((NI + IBT - 1) / IBT)
#define FT2 (FT / 2)
#define FP2 (FP / 2)
#define A_VECS (JC * NBT * FT2)
#define B_VECS (JC * IBT * FT2)
#define LA ((A_VECS + NT - 1) / NT)
#ifndef FUSE_W
#define FUSE_W 0
#endif
#if FUSE_W
#define TAPS (FZ * FY * FX)
#define TP ((TAPS + 3) / 4 * 4)
#define T_ELEMS (JC * IBT * TP)
#define LB ((T_ELEMS + NT - 1) / NT)
#define B_ELEMS (JC * IBT * FT)
#define LE ((B_ELEMS + NT - 1) / NT)
#define B_T data_t
#else
#define LB ((B_VECS + NT - 1) / NT)
#define B_T float4
#endif

extern "C" __global__ void __launch_bounds__(NT)
fft_mac(const float4* __restrict__ A, const B_T* __restrict__ B, float2* __restrict__ O)
{
    __shared__ __align__(16) float2 sa[JC][NBT][FT];
    __shared__ __align__(16) float2 sb[JC][IBT][FT];
    float4* sa4 = reinterpret_cast<float4*>(&sa[0][0][0]);
#if FUSE_W
    __shared__ __align__(16) float stap[JC * IBT][TP];
#else
    float4* sb4 = reinterpret_cast<float4*>(&sb[0][0][0]);
#endif

    int bid = blockIdx.x;
    const int i0 = (bid % I_TILES) * IBT;
    bid /= I_TILES;
    const int n0 = (bid % N_TILES) * NBT;
    bid /= N_TILES;
    const int g = bid % G_;
    const int f0 = (bid / G_) * FT;
    const int tf = threadIdx.x % FT, grp = threadIdx.x / FT;
    const int ti0 = (grp % GI) * TI, tn0 = (grp / GI) * TN;

#if FUSE_W
    float2 tw[TAPS];
    {
        // the phase in cycles is m / (LD*LH*LW) with an exact integer m (3*LD*LH*LW < 2^31)
        const int f = f0 + tf;
        const int fw = f % LW2, fh = (f / LW2) % LH, fd = f / (LW2 * LH);
        const float scale = 1.f / ((float)LD * (float)LH * (float)LW);
#pragma unroll
        for(int t = 0; t < TAPS; ++t)
        {
            const int q = t / (FY * FX), r = (t / FX) % FY, s = t % FX;
            const int m = ((fd * q * DLZ) % LD * (LH * LW) + (fh * r * DLY) % LH * (LD * LW)
                           + (fw * s * DLX) % LW * (LD * LH)) % (LD * LH * LW);
            float sn, cs;
            sincospif((float)(2 * m) / (float)(LD * LH * LW), &sn, &cs);
            tw[t] = make_float2(cs * scale, SIGN * sn * scale);
        }
    }
    float rb[LB];
#else
    float4 rb[LB];
#endif
    // v = (j*ROWS + row)*FT2 + u is both the float4 index in the shared tile and the load slot
    float4 ra[LA];
    auto fetch = [&](int j0) {
#pragma unroll
        for(int l = 0; l < LA; ++l)
        {
            const int v = threadIdx.x + l * NT;
            float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
            const int u = v % FT2, row = v / FT2, n = row % NBT, j = j0 + row / NBT;
            if(v < A_VECS && n0 + n < NB_ && j < NJ)
                val = A[((n0 + n) * A_CH + g * NJ + j) * FP2 + f0 / 2 + u];
            ra[l] = val;
        }
#pragma unroll
        for(int l = 0; l < LB; ++l)
        {
            const int v = threadIdx.x + l * NT;
#if FUSE_W
            // taps of row (jj, i) = v / TP; forward (k, c) = (g*NI + i, j), backward (g*NJ + j, i)
            float val = 0.f;
            const int t = v % TP, row = v / TP, i = i0 + row % IBT, j = j0 + row / IBT;
            if(v < T_ELEMS && t < TAPS && i < NI && j < NJ)
                val = to_acc(B[(DIR_FWD ? (g * NI + i) * W_KS + j * W_CS : (g * NJ + j) * W_KS + i * W_CS)
                               + t * W_TS]);
#else
            float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
            const int u = v % FT2, row = v / FT2, i = row % IBT, j = j0 + row / IBT;
            if(v < B_VECS && i0 + i < NI && j < NJ)
                val = B[(g * B_GS + (i0 + i) * B_IS + j * B_JS) / 2 + f0 / 2 + u];
#endif
            rb[l] = val;
        }
    };

    float2 acc[TN][TI];
#pragma unroll
    for(int t = 0; t < TN; ++t)
#pragma unroll
        for(int u = 0; u < TI; ++u) acc[t][u] = make_float2(0.f, 0.f);

    fetch(0);
    for(int j0 = 0; j0 < NJ; j0 += JC)
    {
#pragma unroll
        for(int l = 0; l < LA; ++l)
            if(threadIdx.x + l * NT < A_VECS) sa4[threadIdx.x + l * NT] = ra[l];
#if FUSE_W
#pragma unroll
        for(int l = 0; l < LB; ++l)
            if(threadIdx.x + l * NT < T_ELEMS) (&stap[0][0])[threadIdx.x + l * NT] = rb[l];
        __syncthreads();
        if(j0 + JC < NJ) fetch(j0 + JC);
        // B entries (row = jj*IBT + i, f): NT is a multiple of FT, so every entry of a thread is at tf
#pragma unroll
        for(int l = 0; l < LE; ++l)
        {
            const int row = (threadIdx.x + l * NT) / FT;
            if(threadIdx.x + l * NT < B_ELEMS)
            {
                const float4* tp = reinterpret_cast<const float4*>(&stap[row][0]);
                float2 acc = make_float2(0.f, 0.f);
#pragma unroll
                for(int t4 = 0; t4 < TP / 4; ++t4)
                {
                    const float4 tv = tp[t4];
                    const float e[4] = {tv.x, tv.y, tv.z, tv.w};
#pragma unroll
                    for(int h = 0; h < 4; ++h)
                        if(4 * t4 + h < TAPS)
                        {
                            acc.x = fmaf(e[h], tw[4 * t4 + h].x, acc.x);
                            acc.y = fmaf(e[h], tw[4 * t4 + h].y, acc.y);
                        }
                }
                (&sb[0][0][0])[row * FT + tf] = acc;
            }
        }
        __syncthreads();
#else
#pragma unroll
        for(int l = 0; l < LB; ++l)
            if(threadIdx.x + l * NT < B_VECS) sb4[threadIdx.x + l * NT] = rb[l];
        __syncthreads();
        if(j0 + JC < NJ) fetch(j0 + JC);
#endif
#pragma unroll
        for(int jj = 0; jj < JC; ++jj)
        {
            float2 a[TN], b[TI];
#pragma unroll
            for(int t = 0; t < TN; ++t) a[t] = sa[jj][tn0 + t][tf];
#pragma unroll
            for(int u = 0; u < TI; ++u) b[u] = sb[jj][ti0 + u][tf];
#pragma unroll
            for(int t = 0; t < TN; ++t)
#pragma unroll
                for(int u = 0; u < TI; ++u)
                {
                    acc[t][u].x = fmaf(a[t].x, b[u].x, fmaf(-a[t].y, b[u].y, acc[t][u].x));
                    acc[t][u].y = fmaf(a[t].x, b[u].y, fmaf(a[t].y, b[u].x, acc[t][u].y));
                }
        }
        __syncthreads();
    }

#pragma unroll
    for(int t = 0; t < TN; ++t)
#pragma unroll
        for(int u = 0; u < TI; ++u)
        {
            const int n = n0 + tn0 + t, i = i0 + ti0 + u;
            if(n < NB_ && i < NI) O[(n * O_CH + g * NI + i) * FP + f0 + tf] = acc[t][u];
        }
}
