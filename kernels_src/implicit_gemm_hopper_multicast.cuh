// Multicast clusters of the warp-specialised copy-engine Hopper kernels (MC_M x MC_N > 1 in
// implicit_gemm_hopper_wrw.cu): blocks of one thread-block cluster share operand boxes, each copying some and
// multicasting them to the others, and release a stage in every block whose producer writes into them.
#pragma once

// tiled / im2col boxes as tma_tile_2d / tma_im2col_4d (implicit_gemm_hopper_tma.cuh), landing at the same
// shared-memory offset of every block of the cluster whose bit is set in mask, completing the bytes on the mbarrier
// at bar's offset in each of them
__device__ __forceinline__ void tma_tile_2d_mc(u32 dst, const TmaMap* map, int c0, int c1, u32 bar, unsigned short mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                 : "memory");
}

__device__ __forceinline__ void tma_im2col_4d_mc(u32 dst, const TmaMap* map, int c, int w, int h, int n,
                                                 unsigned short ow, unsigned short oh, u32 bar, unsigned short mask)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8}, %9;\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar),
                 "h"(ow), "h"(oh), "h"(mask)
                 : "memory");
}

// arrive (release at cluster scope) on the mbarrier at shared offset bar of the cluster's block of rank r
__device__ __forceinline__ void mbar_arrive_peer(u32 bar, u32 r)
{
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\nmbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n"
                 ::"r"(bar), "r"(r) : "memory");
}

// mbar_wait at cluster scope: the phase's arrivals include other blocks' (mbar_arrive_peer)
__device__ __forceinline__ void mbar_wait_cluster(u32 bar, u32 parity)
{
    u32 done;
    do
    {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while(!done);
}

// producer_stage (implicit_gemm_hopper_mbar.cuh) waiting on the empty barrier at cluster scope
template <int S, typename I>
__device__ __forceinline__ int producer_stage_cluster(u32 empty0, I i)
{
    const int s = (int)(i % S);
    if(i >= S)
        mbar_wait_cluster(empty0 + s * 8, (u32)((i / S - 1) & 1));
    return s;
}
