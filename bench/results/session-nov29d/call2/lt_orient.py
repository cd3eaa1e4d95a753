"""Issue 19, W 1x1 stride 1 (FP16 NHWC, N=32): which cuBLASLt algorithms the heuristic offers for GemmWrw1x1's NHWC GEMM
in two orientations, and how fast each is, beside cuDNN through torch (same timing method, same process).

O0 (GemmWrw1x1 today): column-major dW^T (C x K, ld C) = x^T dY: gemm(N, T, m=C, n=K, k=NPQ, A=x, B=dy).
O1: dW (K x C) in row order (ld C) = dY^T x: gemm(N, T, m=K, n=C, k=NPQ, A=dy, B=x), D's layout CUBLASLT_ORDER_ROW.
Each of the heuristic's first 8 results per orientation: median of 5 rounds of 100 back-to-back calls queued behind a
sleep kernel (GPU time per call, no host gaps), its config attributes (id, tile, stages, split-K, cluster), its
kernels' names (torch.profiler) and its output against O0's first (max abs difference)."""
import ctypes, json, statistics, sys
import torch
from torch.profiler import profile, ProfilerActivity
from miofind import cublas

LAYERS = [(256, 64, 56), (256, 128, 56), (128, 512, 28), (512, 128, 28), (512, 256, 28), (256, 1024, 14),
          (1024, 256, 14), (1024, 512, 14), (512, 2048, 7), (2048, 512, 7)]
lib = cublas.lt_library()
fn = lib.cublasLtMatmulAlgoConfigGetAttribute
fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)], ctypes.c_int
ATTRS = {"id": 0, "tile": 1, "splitk": 2, "red": 3, "swz": 4, "stages": 6, "cluster": 8}


def attrs(algo):
    out = {}
    for name, a in ATTRS.items():
        v, w = ctypes.c_uint32(0), ctypes.c_size_t(0)
        out[name] = v.value if fn(ctypes.cast(algo, ctypes.c_void_p), a, ctypes.byref(v), 4, ctypes.byref(w)) == 0 else None
    return out


def timed(f, rounds=5, n=100):
    s = torch.cuda.current_stream()
    res = []
    for _ in range(rounds):
        torch.cuda._sleep(3_000_000)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(s)
        for _ in range(n):
            f()
        e1.record(s)
        torch.cuda.synchronize()
        res.append(e0.elapsed_time(e1) * 1000 / n)
    return statistics.median(res)


def kernels(f):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            f()
        torch.cuda.synchronize()
    names = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            names.setdefault(e.name[:90], 0)
            names[e.name[:90]] += 1
    return [f"{k} x{v // 3}" for k, v in names.items()]


cublas.prefetch_lt()
cublas.settle()
torch.backends.cudnn.benchmark = True
stream = torch.cuda.current_stream().cuda_stream
rows = []
print("cuBLASLt", cublas.lt_version(), "torch cuBLAS", torch.backends.cuda.preferred_blas_library(), "cuDNN", torch.backends.cudnn.version(), flush=True)
for c, k, hw in LAYERS:
    npq = 32 * hw * hw
    x = torch.randn(npq, c, device="cuda", dtype=torch.half)
    dy = torch.randn(npq, k, device="cuda", dtype=torch.half)
    ref = (dy.double().t() @ x.double())            # K x C
    print(f"== {c}->{k} @{hw} 1x1/1 W FP16 NHWC N=32 (GEMM {k}x{c}, reduction {npq})", flush=True)
    x4 = x.view(32, hw, hw, c).permute(0, 3, 1, 2)
    dy4 = dy.view(32, hw, hw, k).permute(0, 3, 1, 2)
    w4 = torch.empty(k, c, 1, 1, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    cud = lambda: torch.ops.aten.convolution_backward(dy4, x4, w4, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                                                      [False, True, False])
    for _ in range(5):
        cud()
    t_cud = timed(cud)
    err = (cud()[1].view(k, c).double() - ref).abs().max().item()
    print(f"  cuDNN (torch)      {t_cud:7.2f} us  err {err:.3g}  {kernels(cud)}", flush=True)
    rows.append({"layer": f"{c}->{k}@{hw}", "variant": "cudnn", "us": t_cud, "err": err})
    for orient in (0, 1):
        for place in range(8):
            out = torch.full((k, c), float("nan"), device="cuda", dtype=torch.half)
            if orient == 0:
                g = cublas.LtGemm(0, 1, c, k, npq, cublas.R_16F, c, 0, k, 0, cublas.R_16F, c, 0, 1, cublas.COMPUTE_32F,
                                  0, True, algo=place)
                a_, b_ = x.data_ptr(), dy.data_ptr()
            else:
                g = cublas.LtGemm(0, 1, k, c, npq, cublas.R_16F, k, 0, c, 0, cublas.R_16F, c, 0, 1, cublas.COMPUTE_32F,
                                  0, True, algo=place)
                cublas._set(lib.cublasLtMatrixLayoutSetAttribute, g.cdesc, 1, 1, ctypes.c_int32)   # ORDER_ROW
                a_, b_ = dy.data_ptr(), x.data_ptr()
            f = lambda: g.call(stream, a_, b_, out.data_ptr())
            try:
                for _ in range(3):
                    f()
                torch.cuda.synchronize()
            except Exception as e:
                print(f"  O{orient} place {place}: {type(e).__name__}: {str(e)[:120]}", flush=True)
                break
            blk = g._args.get(stream)
            at = attrs(blk[4]) if blk else {}
            t = timed(f)
            err = (out.double() - ref).abs().max().item()
            print(f"  O{orient} place {place} {t:7.2f} us ({t / t_cud:5.2f}x cuDNN)  err {err:.3g}  {at}  {kernels(f)}",
                  flush=True)
            rows.append({"layer": f"{c}->{k}@{hw}", "variant": f"O{orient}.{place}", "us": t, "err": err, **at})
json.dump(rows, open(sys.argv[1], "w"), indent=1)
