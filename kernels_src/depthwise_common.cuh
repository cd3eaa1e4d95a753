// Shared pieces of the depthwise / small-group direct kernels: the per-axis index algebra of a
// stencil pass (forward, and backward data in gather form) and vector loads/stores that convert
// between data_t and float.
#pragma once
#include "common.cuh"

#ifndef BWD
#define BWD 0
#endif

__host__ __device__ constexpr int floordiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// One spatial axis (pad P, stride S, dilation D, filter F) of a pass dst <- src.
// Forward (BWD=0): dst position o reads src o*S - P + t*D for every tap t.
// Backward data (BWD=1, gather form): dst position d receives src (d + P - t*D) / S for the taps t
// where S divides d + P - t*D. A run of dst positions that starts at a multiple of S ("unit"
// aligned) then has a tap pattern known at compile time: j-th position of the run, tap t, reads
// src base + off(j, t) where base is the run's footprint origin.
//   forward : off(j, t) = j*S + t*D,                       base(o0) = o0*S - P
//   backward: off(j, t) = floor((j + P - t*D) / S) - EMIN, base(d0) = d0/S + EMIN,
//             EMIN = floor((P - (F-1)*D) / S), the smallest offset any tap can produce.
// UNIT dst positions advance the src footprint by STEP.
template <int BW, int P, int S, int D, int F>
struct Axis
{
    static constexpr int EMIN = BW ? floordiv(P - (F - 1) * D, S) : 0;
    static constexpr int UNIT = BW ? S : 1;
    static constexpr int STEP = BW ? 1 : S;
    __host__ __device__ static constexpr bool hit(int j, int t) { return !BW || ((j + P - t * D) % S + S) % S == 0; }
    __host__ __device__ static constexpr int off(int j, int t) { return BW ? floordiv(j + P - t * D, S) - EMIN : j * S + t * D; }
    __host__ __device__ static constexpr int origin(int o0) { return BW ? o0 / S + EMIN : o0 * S - P; }
    // footprint length (src positions) of a run of T dst positions
    __host__ __device__ static constexpr int span(int T)
    {
        int m = 0;
        for(int j = 0; j < T; ++j)
            for(int t = 0; t < F; ++t)
                if(hit(j, t) && off(j, t) + 1 > m) m = off(j, t) + 1;
        return m;
    }
    // whether src position i of the footprint of a run of T dst positions is read at all
    __host__ __device__ static constexpr bool used(int T, int i)
    {
        for(int j = 0; j < T; ++j)
            for(int t = 0; t < F; ++t)
                if(hit(j, t) && off(j, t) == i) return true;
        return false;
    }
};

// NE contiguous elements at p (aligned to the widest of 16/8/4/2 bytes dividing NE*sizeof(data_t))
// into float o[NE].
template <int NE>
__device__ __forceinline__ void load_vec(const data_t* __restrict__ p, float* o)
{
    constexpr int BYTES = NE * (int)sizeof(data_t);
    constexpr int EPW = BYTES % 16 == 0 ? 16 : BYTES % 8 == 0 ? 8 : BYTES % 4 == 0 ? 4 : (int)sizeof(data_t);
    constexpr int PER = EPW / (int)sizeof(data_t);
#pragma unroll
    for(int k = 0; k < NE / PER; ++k)
    {
        if constexpr(EPW == 16)
        {
            const uint4 u = __ldg(reinterpret_cast<const uint4*>(p) + k);
            const data_t* e = reinterpret_cast<const data_t*>(&u);
#pragma unroll
            for(int m = 0; m < PER; ++m) o[k * PER + m] = to_acc(e[m]);
        }
        else if constexpr(EPW == 8)
        {
            const uint2 u = __ldg(reinterpret_cast<const uint2*>(p) + k);
            const data_t* e = reinterpret_cast<const data_t*>(&u);
#pragma unroll
            for(int m = 0; m < PER; ++m) o[k * PER + m] = to_acc(e[m]);
        }
        else if constexpr(EPW == 4 && sizeof(data_t) < 4)
        {
            const unsigned int u = __ldg(reinterpret_cast<const unsigned int*>(p) + k);
            const data_t* e = reinterpret_cast<const data_t*>(&u);
#pragma unroll
            for(int m = 0; m < PER; ++m) o[k * PER + m] = to_acc(e[m]);
        }
        else
        {
            o[k] = to_acc(p[k]);
        }
    }
}

// float v[NE] to NE contiguous data_t at p (alignment as for load_vec).
template <int NE>
__device__ __forceinline__ void store_vec(data_t* __restrict__ p, const float* v)
{
    constexpr int BYTES = NE * (int)sizeof(data_t);
    constexpr int EPW = BYTES % 16 == 0 ? 16 : BYTES % 8 == 0 ? 8 : BYTES % 4 == 0 ? 4 : (int)sizeof(data_t);
    constexpr int PER = EPW / (int)sizeof(data_t);
#pragma unroll
    for(int k = 0; k < NE / PER; ++k)
    {
        if constexpr(EPW == 16)
        {
            uint4 u;
            data_t* e = reinterpret_cast<data_t*>(&u);
#pragma unroll
            for(int m = 0; m < PER; ++m) store_acc(&e[m], v[k * PER + m]);
            reinterpret_cast<uint4*>(p)[k] = u;
        }
        else if constexpr(EPW == 8)
        {
            uint2 u;
            data_t* e = reinterpret_cast<data_t*>(&u);
#pragma unroll
            for(int m = 0; m < PER; ++m) store_acc(&e[m], v[k * PER + m]);
            reinterpret_cast<uint2*>(p)[k] = u;
        }
        else if constexpr(EPW == 4 && sizeof(data_t) < 4)
        {
            unsigned int u;
            data_t* e = reinterpret_cast<data_t*>(&u);
#pragma unroll
            for(int m = 0; m < PER; ++m) store_acc(&e[m], v[k * PER + m]);
            reinterpret_cast<unsigned int*>(p)[k] = u;
        }
        else
        {
            store_acc(&p[k], v[k]);
        }
    }
}

// VEC floats to shared memory at d (16-byte aligned when VEC is a multiple of 4, 8-byte when 2)
template <int VEC_>
__device__ __forceinline__ void stage_store_n(float* d, const float* v)
{
    if constexpr(VEC_ % 4 == 0)
    {
#pragma unroll
        for(int k = 0; k < VEC_; k += 4) *reinterpret_cast<float4*>(d + k) = make_float4(v[k], v[k + 1], v[k + 2], v[k + 3]);
    }
    else if constexpr(VEC_ == 2)
        *reinterpret_cast<float2*>(d) = make_float2(v[0], v[1]);
    else
        d[0] = v[0];
}
