// Copy-engine (TMA) loads of the warp-specialised Hopper kernels (TMA = 1 in implicit_gemm_hopper_fwd.cu and
// implicit_gemm_hopper_wrw.cu): one producer thread copies a stage's tiles with cp.async.bulk.tensor,
// completing on the stage's full mbarrier by transaction bytes, in place of 128 threads' 16-byte cp.async.
// Tensor maps (miofind/tma.py) arrive by value as __grid_constant__ kernel parameters; their boxes land
// 128-byte swizzled (16-byte chunk c of 128-byte row r at chunk c ^ (r % 8)), the layout of
// implicit_gemm_hopper.cuh's operand tiles. Elements outside the tensor are written as zeros.
#pragma once

struct __align__(64) TmaMap
{
    unsigned long long opaque[16];
};

// the mbarrier inits are visible to the copy engine (async proxy) before it completes on them
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// arrive on bar and add `bytes` to the transaction count its phase waits for
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// tiled box at coordinates (c0 innermost, c1) of a 2-D map
__device__ __forceinline__ void tma_tile_2d(u32 dst, const TmaMap* map, int c0, int c1, u32 bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

// tiled box at coordinates (c0 innermost, c1, c2) of a 3-D map
__device__ __forceinline__ void tma_tile_3d(u32 dst, const TmaMap* map, int c0, int c1, int c2, u32 bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}

// im2col box of a (C, W, H, N) map: the map's pixels-per-column filter bases from (w, h, n) in W, H, N order
// (traversal strides the convolution's), channels c .. c + channels-per-pixel of each base shifted by the
// filter offsets (ow, oh) = (s * dw, r * dh)
__device__ __forceinline__ void tma_im2col_4d(u32 dst, const TmaMap* map, int c, int w, int h, int n,
                                              unsigned short ow, unsigned short oh, u32 bar)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar),
                 "h"(ow), "h"(oh)
                 : "memory");
}
