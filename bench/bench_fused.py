"""Fused forward epilogue (issue 19): y = act(conv(x, w) + bias), FP16/BF16 NHWC, N=32.

Per layer, on one Harness (the same x, w, bias and output buffers; each candidate verified against the
float64 reference of the fused problem before it is timed). Two timings (bench/kernel_timing.py), the same
for every candidate and for PyTorch, per call:
  gpu    ``--iters`` calls captured in one CUDA graph, replayed: the kernels' time without host launch
         costs (every solution is capturable, issue 14);
  eager  the calls queued back to back from Python: host launch costs count wherever the host is slower
         than the GPU (small layers).
Candidates:
  ours_fused     ConvImplicitGemmHopperFwdBiasActiv: its default config and, where the shipped DB has
                 one, the plain forward's tuned config for the same layer (the faster is reported);
  cudnn_fused    ConvCudnnFwd on the fused problem: one graph conv_fprop -> bias -> activation, every
                 plan its heuristics offer (up to MIOFIND_CUDNN_PLANS), the fastest;
  ours_unfused   the plain Hopper forward (default and tuned config, the faster) then one bias+activation
                 pass (16-byte vector loads, a generous unfused baseline: PyTorch makes two passes);
  cudnn_unfused  cuDNN's fastest plain plan, then the same pass;
  torch          torch.nn.functional.conv2d(x, w, bias) then relu/gelu, channels_last, cudnn.benchmark.
With ``--plain`` also the plain convolution alone (its own Harness): ours_plain (the plain Hopper forward) and
cudnn_plain (cuDNN's fastest plain plan), timed all four ways of bench/kernel_timing.py (gpu, eager, find,
isolated).
Prints a table and geomeans; ``--json`` writes the rows."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import kernel_timing  # noqa: E402
from bench_kernel_time import tuned_config  # noqa: E402   the shipped DB's tuned config of a layer

EPI_SRC = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// y[i] = act(y[i] + b[i % K]) for a channels-last y of n elements (K % 8 == 0): 8 elements (16 bytes) a thread
extern "C" __global__ void epi(DATA_T* y, const DATA_T* b, long long n8, int K)
{
    for(long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n8; i += (long long)gridDim.x * blockDim.x)
    {
        uint4 v = reinterpret_cast<uint4*>(y)[i];
        DATA_T* e = reinterpret_cast<DATA_T*>(&v);
        const int k0 = (int)((i * 8) % K);
#pragma unroll
        for(int j = 0; j < 8; ++j)
        {
            float f = (float)e[j] + (float)b[k0 + j];
#if ACT == 1
            f = fmaxf(f, 0.f);
#elif ACT == 2
            f = 0.5f * f * (1.f + erff(f * 0.70710678118654752f));
#endif
            e[j] = (DATA_T)f;
        }
        reinterpret_cast<uint4*>(y)[i] = v;
    }
}
"""
ACT = {"none": 0, "relu": 1, "gelu": 2}


def epi_kernel(dt: str, act: str):
    import cupy
    t = {"FP16": "__half", "BF16": "__nv_bfloat16"}[dt]
    return cupy.RawModule(code=EPI_SRC, options=(f"-DDATA_T={t}", f"-DACT={ACT[act]}", "-std=c++17")).get_function("epi")


def layers(which: str, n: int):
    from shapes import NON_RESNET, _resnet50
    out = {}
    if which in ("resnet50", "both"):
        out.update(_resnet50(n))
    if which in ("nonresnet", "both"):
        out.update({k: dict(v, n=n) for k, v in NON_RESNET.items()})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="resnet50", choices=("resnet50", "nonresnet", "both"))
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--dtypes", default="FP16,BF16")
    ap.add_argument("--acts", default="relu", help="activations per layer (relu, gelu, none), comma-separated")
    ap.add_argument("--only", default="", help="comma-separated layer names")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--plain", action="store_true", help="also time the plain convolution three ways")
    ap.add_argument("--deadline", type=float, default=1e9, help="seconds: stop starting layers after this")
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    import cupy

    from miofind.device import current_device
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.launch import cupy_stream
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from miofind.tuning.precompile import precompile

    t_start = time.time()
    dev = current_device()
    fused, fwd, cud = (get_solver(s) for s in ("ConvImplicitGemmHopperFwdBiasActiv", "ConvImplicitGemmHopperFwd",
                                               "ConvCudnnFwd"))
    cases = []
    only = set(filter(None, a.only.split(",")))
    for name, kw in layers(a.set, a.n).items():
        if only and name not in only:
            continue
        for dt in a.dtypes.split(","):
            for act in a.acts.split(","):
                p = ProblemDescription.make("F", layout="NHWC", dtype=dt, bias=1, activation=act, **kw)
                if fused.applicability(p):
                    cases.append((name, p))
    # our builds first, in a process pool (fused and plain, default and tuned configs)
    todo, cfgs = [], {}
    for name, p in cases:
        tuned = tuned_config(p.unfused().key(), fwd.id)
        cs = [None] + ([tuned] if tuned and tuned != fwd.default_config(p.unfused()) else [])
        cfgs[p] = cs
        for c in cs:
            todo += fused.get_solution(p, c).kernels + fwd.get_solution(p.unfused(), c).kernels
    t0 = time.time()
    n_comp, errs = precompile(todo, dev.arch)
    print(f"precompiled {n_comp} kernels in {time.time() - t0:.1f} s; errors: {errs or 'none'}", flush=True)

    rows = []
    epis = {}
    torch = None
    if not a.no_torch:
        import torch
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False

    def queued_ms(fn):
        return kernel_timing.queued_ms(fn, a.iters)

    def graph_ms(fn):
        return kernel_timing.graph_ms(fn, a.iters)

    def isolated_ms(fn):
        return kernel_timing.isolated_ms(fn, a.iters)

    def best_of(h, p, solver, configs, family, epi=None, find_timing=False):
        """(ms, config, error) of the fastest verified config; epi: run the plain solution then the pass."""
        best = None
        for c in configs:
            try:
                sol = solver.get_solution(p if epi is None else p.unfused(), c)
                inv = build_invoker(p if epi is None else p.unfused(), sol)
                if epi is not None:
                    k_epi, n8, K = epi
                    grid = (min((n8 + 255) // 256, 132 * 16),)

                    def inv(a_, b_, o_, ws_, s_, bias_, plain=inv):
                        plain(a_, b_, o_, ws_, s_)
                        with cupy_stream(s_):
                            k_epi(grid, (256,), (o_, bias_, cupy.int64(n8), cupy.int32(K)))
                ws = h.workspace(sol.workspace_bytes)
                err = h.check(inv, ws, family)
                pw = 0 if ws is None else ws.data.ptr
                pa, pb, po = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr
                pbias = h.bias.data.ptr if h.bias is not None else 0
                if p.fused:
                    call = lambda s_: inv(pa, pb, po, pw, s_, pbias)  # noqa: E731
                else:
                    call = lambda s_: inv(pa, pb, po, pw, s_)  # noqa: E731
                ms = (graph_ms(call), queued_ms(call))
                if find_timing:
                    ms += (h.time(inv, ws, warmup=3, iters=a.iters)[0], isolated_ms(call))
            except Exception as e:          # a failed build, launch or verification scores as infinite time
                print(f"    {solver.id} {c}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            if best is None or ms[0] < best[0][0]:
                best = (ms, sol.config, err)
        return best

    def plans(p):
        try:
            return cud.find_configs(p)
        except Exception as e:
            print(f"    cuDNN offers no plan for {p.key()}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            return []

    for name, p in cases:
        if time.time() - t_start > a.deadline:
            print(f"deadline: stopped before {name}", flush=True)
            break
        h = Harness(p, verify=True, seed=0)
        key = (p.dtype, p.activation)
        if key not in epis:
            epis[key] = epi_kernel(*key)
        n8 = math.prod(p.y_shape) // 8
        epi = (epis[key], n8, p.k)
        row = {"layer": name, "key": p.key(), "dtype": p.dtype, "act": p.activation}
        r = best_of(h, p, fused, cfgs[p], "implicit_gemm_hopper")
        if r:
            row.update(ours_fused_ms=r[0][0], ours_fused_eager_ms=r[0][1], ours_fused_cfg=r[1], ours_fused_err=r[2])
        r = best_of(h, p, fwd, cfgs[p], "implicit_gemm_hopper", epi)
        if r:
            row.update(ours_unfused_ms=r[0][0], ours_unfused_eager_ms=r[0][1], ours_unfused_cfg=r[1])
        r = best_of(h, p, cud, plans(p), "cudnn")
        if r:
            row.update(cudnn_fused_ms=r[0][0], cudnn_fused_eager_ms=r[0][1],
                       cudnn_fused_plan=r[1]["plan"] if r[1] else None, cudnn_fused_err=r[2])
        r = best_of(h, p, cud, plans(p.unfused()), "cudnn", epi)
        if r:
            row.update(cudnn_unfused_ms=r[0][0], cudnn_unfused_eager_ms=r[0][1])
        if a.plain:
            hp = Harness(p.unfused(), verify=True, seed=0)
            for lab, solver, cs, fam in (("ours_plain", fwd, cfgs[p], "implicit_gemm_hopper"),
                                         ("cudnn_plain", cud, plans(p.unfused()), "cudnn")):
                r = best_of(hp, p.unfused(), solver, cs, fam, find_timing=True)
                if r:
                    row.update({f"{lab}_ms": r[0][0], f"{lab}_eager_ms": r[0][1], f"{lab}_find_ms": r[0][2],
                                f"{lab}_isolated_ms": r[0][3]})
            del hp
        if torch is not None:
            x = torch.as_tensor(h.a, device="cuda").view(torch.bfloat16 if p.dtype == "BF16" else torch.float16)
            w = torch.as_tensor(h.b, device="cuda").view(x.dtype)
            b = torch.as_tensor(h.bias, device="cuda").view(x.dtype)
            x = x.permute(0, 3, 1, 2)          # NHWC memory as an NCHW tensor in channels_last
            w = w.permute(0, 3, 1, 2)
            act = {"relu": torch.relu, "gelu": torch.nn.functional.gelu, "none": lambda t: t}[p.activation]
            f = lambda s_=None: act(torch.nn.functional.conv2d(x, w, b, p.strides, p.pads, p.dilations))  # noqa: E731
            row["torch_eager_ms"] = queued_ms(f)    # torch's current stream is CuPy's: the legacy default stream
            for _ in range(3):
                f()
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(a.iters):
                    f()
            g.replay()
            ts = []
            for _ in range(3):
                torch.cuda.synchronize()
                s0, s1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s0.record(); g.replay(); s1.record()
                s1.synchronize()
                ts.append(s0.elapsed_time(s1) / a.iters)
            row["torch_ms"] = sorted(ts)[1]
            del g
        rows.append(row)
        fmt = lambda k: f"{row[k]*1e3:6.1f}/{row[k[:-3] + '_eager_ms']*1e3:6.1f}" if k in row else "      -/     -"  # noqa: E731
        print(f"{name:28s} {p.dtype} {p.activation:4s} ours_fused {fmt('ours_fused_ms')} cudnn_fused {fmt('cudnn_fused_ms')} "
              f"ours_unfused {fmt('ours_unfused_ms')} cudnn_unfused {fmt('cudnn_unfused_ms')} torch {fmt('torch_ms')} "
              "us (gpu/eager)", flush=True)
        del h
        if a.json:
            Path(a.json).write_text(json.dumps({"rows": rows, "device": dev.name}, indent=1))

    def gm(num, den, sel=lambda r: True):
        v = [math.log(r[num] / r[den]) for r in rows if num in r and den in r and sel(r)]
        return (math.exp(sum(v) / len(v)), len(v)) if v else (float("nan"), 0)

    print("\ngeomean time ratios (n layers)")
    for mode, suf in (("gpu", "_ms"), ("eager", "_eager_ms")):
        for dt in a.dtypes.split(","):
            for act in a.acts.split(","):
                sel = lambda r, dt=dt, act=act: r["dtype"] == dt and r["act"] == act  # noqa: E731
                out = [f"{mode} {dt} {act}:"]
                for num, den in (("ours_fused", "cudnn_fused"), ("ours_fused", "ours_unfused"),
                                 ("cudnn_fused", "cudnn_unfused"), ("ours_fused", "cudnn_unfused"),
                                 ("ours_unfused", "cudnn_unfused"), ("ours_fused", "torch"), ("cudnn_fused", "torch"),
                                 ("ours_plain", "cudnn_plain")):
                    g, k = gm(num + suf, den + suf, sel)
                    out.append(f"{num}/{den} {g:.3f} ({k})")
                print("  ".join(out))
    if a.plain:
        for dt in a.dtypes.split(","):
            for mode in ("find", "isolated"):
                g, k = gm(f"ours_plain_{mode}_ms", f"cudnn_plain_{mode}_ms", lambda r, dt=dt: r["dtype"] == dt)
                print(f"{mode} {dt}: ours_plain/cudnn_plain {g:.3f} ({k})")


if __name__ == "__main__":
    main()
