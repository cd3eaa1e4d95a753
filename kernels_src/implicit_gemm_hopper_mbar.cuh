// mbarrier helpers of the warp-specialised Hopper kernels (WSPEC = 1 in implicit_gemm_hopper_fwd.cu and
// implicit_gemm_hopper_wrw.cu): a producer warpgroup arrives on a stage's "full" barrier once its copies
// have landed, the consumer warpgroups on its "empty" barrier once their wgmma read it.
#pragma once
__device__ __forceinline__ void mbar_init(u32 bar, u32 count)
{
    asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// arrive with release semantics (the default .release.cta)
__device__ __forceinline__ void mbar_arrive(u32 bar)
{
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
// wait (acquire) until the phase of the given parity has completed
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity)
{
    u32 done;
    do
    {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while(!done);
}
// the producer's turn at a stage: K tile i goes to stage i % S, filled for the (i / S)-th time, so it first
// waits for the consumers' release of the previous filling (phase i / S - 1 of the stage's "empty" barrier)
template <int S, typename I>
__device__ __forceinline__ int producer_stage(u32 empty0, I i)
{
    const int s = (int)(i % S);
    if(i >= S)
        mbar_wait(empty0 + s * 8, (u32)((i / S - 1) & 1));
    return s;
}
