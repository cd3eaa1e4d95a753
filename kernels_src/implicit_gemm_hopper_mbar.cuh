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
