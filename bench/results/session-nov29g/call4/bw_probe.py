"""Read bandwidth of this GPU: a grid-stride float4 read of a buffer (sum kept per thread, one store each), 64 MB and
512 MB, timed over 20 launches captured in a CUDA graph; prints TB/s (bytes read / time)."""
import cupy

SRC = r'''
extern "C" __global__ void rd(const float4* __restrict__ p, long long n, float* __restrict__ out)
{
    float s = 0.f;
    for(long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    {
        const float4 v = __ldcs(p + i);
        s += v.x + v.y + v.z + v.w;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
'''
k = cupy.RawKernel(SRC, "rd")
dev = cupy.cuda.Device()
sms = dev.attributes["MultiProcessorCount"]
for mb in (64, 512):
    n = mb * 2**20 // 16
    buf = cupy.ones(n * 4, dtype=cupy.float32)
    for blocks_per_sm in (4, 8):
        grid, block = sms * blocks_per_sm, 512
        out = cupy.empty(grid * block, dtype=cupy.float32)
        st = cupy.cuda.Stream(non_blocking=True)
        with st:
            k((grid,), (block,), (buf, cupy.int64(n), out))
            st.begin_capture()
            for _ in range(20):
                k((grid,), (block,), (buf, cupy.int64(n), out))
            g = st.end_capture()
            g.launch(st)
            st.synchronize()
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            best = 1e9
            for _ in range(5):
                a.record(st); g.launch(st); b.record(st); b.synchronize()
                best = min(best, cupy.cuda.get_elapsed_time(a, b) / 20)
        print(f"{mb} MB, {blocks_per_sm} blocks/SM x {block}: {best * 1e3:.1f} us, {mb * 2**20 / (best * 1e-3) / 1e12:.2f} TB/s")
