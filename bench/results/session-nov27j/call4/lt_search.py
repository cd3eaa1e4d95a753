"""Experiment (session nov27j, call 4): what cuBLASLt offers beyond its heuristic's first 8 algorithms for the GEMM
solvers' 1x1 problems of ResNet-50 (N=32, FP16 NHWC; F/B/W), i.e. whether a search over explicit algorithm configs
would gain more than the heuristic-place configs (call 2). Per layer, the GEMM the solver plans (its LtGemm
descriptors, pointers and workspace) is timed with candidates from:
  heur    the heuristic (best fit), up to 16 results;
  byid    the heuristic limited to each algorithm id cublasLtMatmulAlgoGetIds lists (CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID),
          up to 8 results each;
  splitk  the heuristic's first 3 with SPLITK_NUM in 1,2,3,4,6,8,12,16,24,32 and each reduction scheme the solver
          allows (in place or compute type), where cublasLtMatmulAlgoCheck accepts them within the 32 MiB workspace.
Each candidate's output is compared with the heuristic's first's (max abs difference over max abs value); timing: 20
calls captured in a CUDA graph, median of 5 replays, per call. Beside it cuDNN's best plan, isolated (kernel_timing).
Prints per layer the heuristic's first, the best of heur, the best overall (and its source and config)."""
import ctypes
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import cupy  # noqa: E402

import kernel_timing  # noqa: E402
from miofind import cublas  # noqa: E402

lib = cublas.lt_library()
vp, i32, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
HR = cublas._HeuristicResult
lib.cublasLtMatmulAlgoGetIds.argtypes = [vp, i32, i32, i32, i32, i32, i32, i32, ctypes.POINTER(i32), ctypes.POINTER(i32)]
lib.cublasLtMatmulAlgoInit.argtypes = [vp, i32, i32, i32, i32, i32, i32, i32, vp]
lib.cublasLtMatmulAlgoCheck.argtypes = [vp, vp, vp, vp, vp, vp, vp, ctypes.POINTER(HR)]
lib.cublasLtMatmulAlgoCapGetAttribute.argtypes = [vp, i32, vp, sz, ctypes.POINTER(sz)]
lib.cublasLtMatmulAlgoConfigSetAttribute.argtypes = [vp, i32, vp, sz]
lib.cublasLtMatmulAlgoConfigGetAttribute.argtypes = [vp, i32, vp, sz, ctypes.POINTER(sz)]
CFG = {"id": (0, ctypes.c_int32), "tile": (1, ctypes.c_uint32), "splitk": (2, ctypes.c_int32), "red": (3, ctypes.c_uint32),
       "swz": (4, ctypes.c_uint32), "custom": (5, ctypes.c_uint32), "stages": (6, ctypes.c_uint32),
       "inner": (7, ctypes.c_uint16), "cluster": (8, ctypes.c_uint16)}

made, calls = [], {}
_init, _call = cublas.LtGemm.__init__, cublas.LtGemm.call


def init(self, *a, **k):
    _init(self, *a, **k)
    made.append(self)


def call(self, stream, a, b, c):
    calls[id(self)] = (a, b, c)
    return _call(self, stream, a, b, c)


cublas.LtGemm.__init__, cublas.LtGemm.call = init, call


def config_of(algo):
    out = {}
    for k, (attr, ct) in CFG.items():
        v, w = ct(0), sz(0)
        lib.cublasLtMatmulAlgoConfigGetAttribute(algo, attr, ctypes.byref(v), ctypes.sizeof(v), ctypes.byref(w))
        out[k] = int(v.value)
    return out


def pref(g, mode=0):
    p = vp()
    lib.cublasLtMatmulPreferenceCreate(ctypes.byref(p))
    cublas._set(lib.cublasLtMatmulPreferenceSetAttribute, p, 0, mode, ctypes.c_uint32)
    cublas._set(lib.cublasLtMatmulPreferenceSetAttribute, p, cublas._PREF_MAX_WORKSPACE_BYTES, cublas.WORKSPACE_BYTES,
                ctypes.c_uint64)
    if g.no_reduced_precision:
        cublas._set(lib.cublasLtMatmulPreferenceSetAttribute, p, cublas._PREF_REDUCTION_SCHEME_MASK,
                    cublas._REDUCTION_NOT_IN_OUTPUT_TYPE, ctypes.c_uint32)
    for attr in cublas._PREF_MIN_ALIGNMENT:
        cublas._set(lib.cublasLtMatmulPreferenceSetAttribute, p, attr, 256, ctypes.c_uint32)
    return p


def heuristic(g, n, algo_id=None):
    p = pref(g, 0 if algo_id is None else 1)
    res, count = (HR * n)(), i32(0)
    if algo_id is not None:
        ta, tb, m, nn, k, ab, lda, sa, ldb, sb, ct, ldc, sc, batch, compute = g.shape
        for r in res:
            lib.cublasLtMatmulAlgoInit(g.h, compute, cublas.R_32F, ab, ab, ct, ct, algo_id, ctypes.byref(r.algo))
    st = lib.cublasLtMatmulAlgoGetHeuristic(g.h, g.desc, g.adesc, g.bdesc, g.cdesc, g.cdesc, p, n, res, ctypes.byref(count))
    lib.cublasLtMatmulPreferenceDestroy(p)
    if st:
        return []
    return [(bytes(r.algo), int(r.workspaceSize)) for r in res[:count.value] if r.state == 0]


def checked(g, algo_bytes):
    r = HR()
    buf = (ctypes.c_uint64 * 8).from_buffer_copy(algo_bytes)
    st = lib.cublasLtMatmulAlgoCheck(g.h, g.desc, g.adesc, g.bdesc, g.cdesc, g.cdesc, buf, ctypes.byref(r))
    return None if st or r.state or r.workspaceSize > cublas.WORKSPACE_BYTES else int(r.workspaceSize)


def set_attr(algo_bytes, name, value):
    buf = (ctypes.c_uint64 * 8).from_buffer_copy(algo_bytes)
    attr, ct = CFG[name]
    v = ct(value)
    st = lib.cublasLtMatmulAlgoConfigSetAttribute(buf, attr, ctypes.byref(v), ctypes.sizeof(v))
    return None if st else bytes(buf)


def main():
    from miofind.harness import Harness
    from miofind.invokers import build_invoker
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver
    from shapes import _resnet50

    out = Path(sys.argv[1])
    deadline = time.time() + float(sys.argv[2])
    gem = {"F": "GemmFwd1x1_0_1", "B": "GemmBwd1x1_stride1", "W": "GemmWrw1x1_stride1"}
    cud = {"F": "ConvCudnnFwd", "B": "ConvCudnnBwd", "W": "ConvCudnnWrw"}
    dev = cupy.cuda.runtime.getDevice()
    st = cupy.cuda.Stream(non_blocking=True)
    ws = cublas._workspace(dev, st.ptr)
    rows = []
    for d in "WFB":
        for name, kw in _resnet50(32).items():
            if time.time() > deadline:
                break
            p = ProblemDescription.make(d, layout="NHWC", dtype="FP16", **kw)
            g_s = get_solver(gem[d])
            if not g_s.applicability(p):
                continue
            h = Harness(p, verify=True, seed=0)
            made.clear()
            sol = g_s.get_solution(p)
            inv = build_invoker(p, sol)
            inv(h.a.data.ptr, h.b.data.ptr, h.out.data.ptr, 0, st.ptr)
            st.synchronize()
            (g,) = made
            a, b, c = calls[id(g)]

            def run(algo_bytes, need, stream=st.ptr):
                buf = (ctypes.c_uint64 * 8).from_buffer_copy(algo_bytes)
                s_ = lib.cublasLtMatmul(g.h, g.desc, g._alpha, vp(a), g.adesc, vp(b), g.bdesc, g._beta, vp(c), g.cdesc,
                                        vp(c), g.cdesc, buf, vp(ws if need else 0), sz(need if need else 0), vp(stream))
                if s_:
                    raise RuntimeError(f"status {s_}")

            def timed(algo_bytes, need):
                with st:
                    run(algo_bytes, need)
                    st.synchronize()
                    st.begin_capture()
                    for _ in range(20):
                        run(algo_bytes, need)
                    graph = st.end_capture()
                e0, e1, ts = cupy.cuda.Event(), cupy.cuda.Event(), []
                for _ in range(5):
                    e0.record(st)
                    graph.launch(st)
                    e1.record(st)
                    e1.synchronize()
                    ts.append(cupy.cuda.get_elapsed_time(e0, e1) / 20)
                return statistics.median(ts)

            cands = {}
            heur = heuristic(g, 16)
            for i, (ab, need) in enumerate(heur):
                cands.setdefault(ab, ("heur", i, need))
            ids, nids = (i32 * 128)(), i32(0)
            ta, tb, m, nn, k, abt, lda, sa, ldb, sb, ct, ldc, sc, batch, compute = g.shape
            lib.cublasLtMatmulAlgoGetIds(g.h, compute, cublas.R_32F, abt, abt, ct, ct, 128, ids, ctypes.byref(nids))
            for aid in ids[:nids.value]:
                for j, (ab, need) in enumerate(heuristic(g, 8, aid)):
                    cands.setdefault(ab, ("byid", aid, need))
            for i, (ab, _) in enumerate(heur[:3]):
                for s in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32):
                    for red in ((0,) if s == 1 else (1, 2)):
                        x = set_attr(ab, "splitk", s)
                        x = x and set_attr(x, "red", red)
                        need = x and checked(g, x)
                        if x and need is not None:
                            cands.setdefault(x, ("splitk", i, need))
            # reference output: the heuristic's first
            run(heur[0][0], heur[0][1])
            st.synchronize()
            ref = h.out.astype(cupy.float32).copy()
            scale = float(cupy.abs(ref).max())
            res = []
            for ab, (src, tag, need) in cands.items():
                try:
                    h.out.fill(0)
                    run(ab, need)
                    st.synchronize()
                    err = float(cupy.abs(h.out.astype(cupy.float32) - ref).max()) / scale
                    t = timed(ab, need)
                except Exception as e:      # noqa: BLE001
                    res.append({"src": src, "tag": tag, "error": str(e)[:100]})
                    continue
                res.append({"src": src, "tag": tag, "ms": t, "err": err, "cfg": config_of((ctypes.c_uint64 * 8).from_buffer_copy(ab)),
                            "ws": need})
            cb = None
            for cfg, t in kernel_timing.timed_configs(h, p, get_solver(cud[d]), None, "cudnn",
                                                      lambda call_, inv_, ws_: kernel_timing.isolated_ms(call_, 50)):
                cb = t if cb is None else min(cb, t)
            ok = [r for r in res if "ms" in r and r["err"] < 2e-2]
            h0 = next(r for r in ok if r["src"] == "heur" and r["tag"] == 0)
            bh = min((r for r in ok if r["src"] == "heur"), key=lambda r: r["ms"])
            ba = min(ok, key=lambda r: r["ms"])
            rows.append({"layer": name, "dir": d, "key": p.key(), "cudnn_ms": cb, "candidates": res})
            print(f"{d} {name:24s} cands {len(res):4d} heur0 {h0['ms']*1e3:6.1f} heur best {bh['ms']*1e3:6.1f} "
                  f"all best {ba['ms']*1e3:6.1f} ({ba['src']} {ba['tag']} {ba['cfg']}) cudnn {cb*1e3 if cb else -1:6.1f} us",
                  flush=True)
            out.write_text(json.dumps(rows))
            del h


main()
