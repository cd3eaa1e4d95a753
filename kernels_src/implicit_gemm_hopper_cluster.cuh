// Thread-block clusters (sm_90): this block's rank, the cluster-wide barrier, and loads from a peer block's shared
// memory (distributed shared memory).
#pragma once

__device__ __forceinline__ u32 cluster_rank() { u32 r; asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r)); return r; }

// every thread of every block of the cluster: writes before it (shared memory included) are visible cluster-wide after
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// the address of shared location saddr in the block of cluster rank r
__device__ __forceinline__ u32 peer_addr(u32 saddr, u32 r)
{
    u32 out;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(saddr), "r"(r));
    return out;
}

__device__ __forceinline__ float4 ld_peer4(u32 addr)
{
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr) : "memory");
    return v;
}
