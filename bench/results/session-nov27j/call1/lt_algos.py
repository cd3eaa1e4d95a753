"""Experiment (session nov27j): how much a cuBLASLt algorithm other than the heuristic's first gains on the GEMM
solvers' problems. miofind.cublas.LtGemm plans with the heuristic's first algorithm only; PyTorch's TunableOp times
every algorithm the heuristic returns. Here LtGemm._plan is patched to ask for up to 16 and take result number
ALGO; each GEMM solver of ResNet-50's 1x1 stride-1 layers (N=32; FP16 NHWC and FP32 NCHW, F/B/W) is built at each
index, verified against the float64 reference (Harness.check), and timed two ways on one Harness (same buffers):
'find' (Harness.time, the find's timing, median of 50) and 'isolated' (one call in a CUDA graph, median of 50
replays); beside every cuDNN plan on the same Harness. Prints per layer: index 0, the best index, cuDNN's best."""
import ctypes
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import kernel_timing  # noqa: E402
from miofind import cublas  # noqa: E402

ALGO = [0]
COUNTS = {}


def _plan(self, align):
    lib = self.lib
    pref = ctypes.c_void_p()
    cublas._check("cublasLtMatmulPreferenceCreate", lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)))
    try:
        cublas._set(lib.cublasLtMatmulPreferenceSetAttribute, pref, cublas._PREF_MAX_WORKSPACE_BYTES,
                    cublas.WORKSPACE_BYTES, ctypes.c_uint64)
        if self.no_reduced_precision:
            cublas._set(lib.cublasLtMatmulPreferenceSetAttribute, pref, cublas._PREF_REDUCTION_SCHEME_MASK,
                        cublas._REDUCTION_NOT_IN_OUTPUT_TYPE, ctypes.c_uint32)
        for attr, a in zip(cublas._PREF_MIN_ALIGNMENT, (*align, align[2])):
            cublas._set(lib.cublasLtMatmulPreferenceSetAttribute, pref, attr, a, ctypes.c_uint32)
        res, count = (cublas._HeuristicResult * 16)(), ctypes.c_int(0)
        st = lib.cublasLtMatmulAlgoGetHeuristic(self.h, self.desc, self.adesc, self.bdesc, self.cdesc, self.cdesc,
                                                pref, 16, res, ctypes.byref(count))
        cublas._lt_ready = True
    finally:
        lib.cublasLtMatmulPreferenceDestroy(pref)
    COUNTS[self.shape] = count.value
    i = ALGO[0]
    if st or count.value <= i or res[i].state:
        raise RuntimeError(f"no heuristic result {i} (count {count.value})")
    return (ctypes.c_uint64 * 8)(*res[i].algo), int(res[i].workspaceSize)


cublas.LtGemm._plan = _plan
# the argtypes take a POINTER(_HeuristicResult); an array of them converts
cublas.lt_library()


def main():
    from miofind.harness import Harness
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from shapes import _resnet50

    out = Path(sys.argv[1])
    deadline = time.time() + float(sys.argv[2]) if len(sys.argv) > 2 else 1e18
    gem = {"F": "GemmFwd1x1_0_1", "B": "GemmBwd1x1_stride1", "W": "GemmWrw1x1_stride1"}
    cud = {"F": "ConvCudnnFwd", "B": "ConvCudnnBwd", "W": "ConvCudnnWrw"}
    rows = []
    for dt, lay in (("FP16", "NHWC"), ("FP32", "NCHW")):
        for d in "FBW":
            for name, kw in _resnet50(32).items():
                if time.time() > deadline:
                    break
                p = ProblemDescription.make(d, layout=lay, dtype=dt, **kw)
                g = get_solver(gem[d])
                if not g.applicability(p):
                    continue
                h = Harness(p, verify=True, seed=0)
                timings = lambda call, inv, ws: {"find": h.time(inv, ws, warmup=3, iters=50)[0],  # noqa: E731
                                                 "isolated": kernel_timing.isolated_ms(call, 50)}
                row = {"layer": name, "dir": d, "dtype": dt, "key": p.key(), "algos": {}}
                for i in range(16):
                    ALGO[0] = i
                    got = kernel_timing.timed_configs(h, p, g, [None], "gemm", timings)
                    if not got:
                        break
                    row["algos"][i] = got[0][1]
                ALGO[0] = 0
                row["count"] = max(COUNTS.values()) if COUNTS else 0
                COUNTS.clear()
                cb = {}
                for cfg, t in kernel_timing.timed_configs(h, p, get_solver(cud[d]), None, "cudnn", timings):
                    for m, v in t.items():
                        cb[m] = min(cb.get(m, 1e9), v)
                row["cudnn"] = cb
                rows.append(row)
                a0 = row["algos"].get(0, {})
                if a0 and cb:
                    bi = min(row["algos"], key=lambda i: row["algos"][i]["isolated"])
                    bf = min(row["algos"], key=lambda i: row["algos"][i]["find"])
                    print(f"{dt} {d} {name:26s} n={len(row['algos'])} iso: a0 {a0['isolated']*1e3:7.1f} best a{bi} "
                          f"{row['algos'][bi]['isolated']*1e3:7.1f} cudnn {cb['isolated']*1e3:7.1f} | find: a0 "
                          f"{a0['find']*1e3:7.1f} best a{bf} {row['algos'][bf]['find']*1e3:7.1f} cudnn {cb['find']*1e3:7.1f} us",
                          flush=True)
                out.write_text(json.dumps(rows, indent=1))
                del h
    import math
    for dt in ("FP16", "FP32"):
        for d in "FBW":
            rs = [r for r in rows if r["dtype"] == dt and r["dir"] == d and r["algos"].get(0) and r["cudnn"]]
            if not rs:
                continue
            for m in ("isolated", "find"):
                g0 = math.exp(sum(math.log(r["algos"][0][m] / r["cudnn"][m]) for r in rs) / len(rs))
                gb = math.exp(sum(math.log(min(a[m] for a in r["algos"].values()) / r["cudnn"][m]) for r in rs) / len(rs))
                print(f"{dt} {d} {m}: {len(rs)} layers, GEMM / cuDNN geomean: heuristic's first {g0:.3f}, best algo {gb:.3f}")


main()
