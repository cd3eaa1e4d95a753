// The timing harness's hold (miofind.harness.timed_runs, MIOFIND_FIND_TIMING=device): one thread spins on the
// GPU's nanosecond timer for `ns` nanoseconds, so that a candidate's launches, enqueued by the host meanwhile,
// wait behind it and the CUDA events around them time the GPU's work alone, not the host's enqueueing (as
// Triton's do_bench does with its cache-clearing kernel, here without touching memory or L2).
extern "C" __global__ void timing_hold(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
    {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while(t - t0 < ns);
}
