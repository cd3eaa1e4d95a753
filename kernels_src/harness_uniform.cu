// A find's random inputs (miofind.verify.HashRNG): element i of a draw is a function of the seed's key and its
// counter (offset + i) alone, the 64-bit finaliser of splitmix64, so one launch fills an array with no generator
// state to set up first. Of the 64 mixed bits the top 24 give k in [0, 2^24); the value is
//   mid + half * (2k + 1 - 2^24) / 2^24,
// uniform over 2^24 points of (mid - half, mid + half), symmetric about mid, and never mid itself (2k + 1 - 2^24 is
// odd): with mid = 0 never zero. It is computed in double and rounded once to float.
__device__ __forceinline__ unsigned long long harness_mix64(unsigned long long z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

extern "C" __global__ void harness_uniform(float* __restrict__ out, unsigned long long n, unsigned long long key,
                                           unsigned long long offset, double mid, double half)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for(unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    {
        const unsigned long long h = harness_mix64(key + (offset + i) * 0x9E3779B97F4A7C15ull);
        const long long m = 2 * (long long)(h >> 40) + 1 - (1ll << 24);
        out[i] = (float)(mid + half * ((double)m * (1.0 / 16777216.0)));
    }
}
