// Generic builds (miofind/generic.py): pre-included before a kernel source whose size and stride
// macros are defined as MIOFIND_GP(i), a read of slot i of this module's constant parameter block.
// One cubin then serves every problem of its (source, config, data type, layout, index width);
// each problem loads its own module instance and writes its sizes into that instance's block
// once. MIOFIND_GP(i) contains brackets on purpose: a size macro used in #if is then a
// preprocessing error rather than a silent 0. MIOFIND_GENERIC lets a source leave out a
// static_assert on a size that a generic build reads at run time (the solver checks it instead).
#define MIOFIND_GENERIC 1
#ifndef INDEX_T
#define INDEX_T int
#endif
#ifndef MIOFIND_GP_SLOTS
#define MIOFIND_GP_SLOTS 64
#endif
__constant__ INDEX_T miofind_gp[MIOFIND_GP_SLOTS];
#define MIOFIND_GP(i) (miofind_gp[i])

#ifdef MIOFIND_FD_SLOTS
// Divisors read as MIOFIND_FD(i) (32-bit-index builds only): a divisor d with its magic numbers,
// so that n / d and n % d cost a multiply-high and a shift (CUTLASS's FastDivmod: valid for
// 0 <= n < 2^31, which every dividend of a 32-bit-index build is). Every other use converts to int.
struct miofind_div
{
    int d;
    unsigned mul, shr;   // mul = 0: d == 1
    __device__ __forceinline__ operator int() const { return d; }
};
__device__ __forceinline__ unsigned miofind_quo(unsigned n, const miofind_div& v)
{
    return v.mul ? __umulhi(n, v.mul) >> v.shr : n;
}
__device__ __forceinline__ int operator/(int n, const miofind_div& v) { return (int)miofind_quo((unsigned)n, v); }
__device__ __forceinline__ int operator%(int n, const miofind_div& v) { return n - (int)miofind_quo((unsigned)n, v) * v.d; }
__device__ __forceinline__ unsigned operator/(unsigned n, const miofind_div& v) { return miofind_quo(n, v); }
__device__ __forceinline__ unsigned operator%(unsigned n, const miofind_div& v) { return n - miofind_quo(n, v) * (unsigned)v.d; }
__device__ __forceinline__ int& operator/=(int& n, const miofind_div& v) { return n = n / v; }
// 64-bit dividends below 2^31 (a 64-bit loop counter bounded by a 32-bit-index build's sizes)
__device__ __forceinline__ long long operator/(long long n, const miofind_div& v) { return (long long)miofind_quo((unsigned)n, v); }
__device__ __forceinline__ long long operator%(long long n, const miofind_div& v) { return n - (long long)miofind_quo((unsigned)n, v) * v.d; }
__constant__ miofind_div miofind_fd[MIOFIND_FD_SLOTS];
#define MIOFIND_FD(i) (miofind_fd[i])
#endif

#ifdef MIOFIND_RV
// One size that an #if tests only modulo a compile-time value (winograd_transforms.cu: WO % WM):
// the build defines it as (r + miofind_rv) with r its residue. In #if, miofind_rv is an identifier
// that is not a macro, so it reads as 0 and the test sees r; in code the sum is the size, the
// module instance holding size - r in miofind_rv.
__constant__ INDEX_T miofind_rv;
#endif
