"""Session dec03d: compile throughput of miofind.procpool's pool against the spawned multiprocessing pool it replaced
(CPU, no GPU): the same kernels (ResNet-50 layers' tiled direct and implicit GEMM configs) compiled into an empty
binary cache by each, alternately, with 2 workers. ``--busy T`` keeps T Python threads of the caller spinning meanwhile
(the GIL busy, as a training step's or a find's threads keep it), and ``--callers C`` maps from C threads at once, each
its share of the kernels (tiered's two job threads). Usage: python pool_ab.py [ROUNDS] [--busy T] [--callers C]"""

import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from miofind.compile import binary_key  # noqa: E402
from miofind.models import model_problems  # noqa: E402
from miofind.procpool import ProcPool  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from miofind.compile import compile_into_cache as _compile_one  # noqa: E402
from miofind.tuning.precompile import solution_kernels  # noqa: E402


def kernels(n=48):   # 46 distinct ones
    out = []
    for p in model_problems("resnet50", batch=32, dtypes=("FP32",), layouts=("NCHW",)):
        for sid in ("ConvDirectTiledFwd", "ConvImplicitGemmFwd"):
            s = get_solver(sid)
            if p.direction == "F" and s.applicability(p.as_conv()):
                out += solution_kernels(p, s, [None])
    seen, uniq = set(), []
    for k in out:
        key = binary_key(k, "sm_90")
        if key not in seen:
            seen.add(key)
            uniq.append(k)
    return uniq[:n]


def _spin(stop):
    x = 0
    while not stop.is_set():
        x += 1


def run(kind, ks, busy=0, callers=1):
    import threading
    from concurrent.futures import ThreadPoolExecutor

    stop = threading.Event()
    spinners = [threading.Thread(target=_spin, args=(stop,)) for _ in range(busy)]
    for t in spinners:
        t.start()
    try:
        with tempfile.TemporaryDirectory() as d:
            todo = [(k, "sm_90", f"{d}/{binary_key(k, 'sm_90')}.cubin") for k in ks]
            parts = [todo[i::callers] for i in range(callers)]
            t0 = time.perf_counter()
            if kind == "procpool":
                pool = ProcPool(2)
                with ThreadPoolExecutor(callers) as ex:
                    errs = sum(ex.map(lambda part: pool.map(_compile_one, part), parts), [])
                pool.shutdown()
            else:
                with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
                    with ThreadPoolExecutor(callers) as ex:
                        errs = sum(ex.map(lambda part: list(pool.map(_compile_one, part)), parts), [])
            return time.perf_counter() - t0, sum(1 for e in errs if e), len(os.listdir(d))
    finally:
        stop.set()
        for t in spinners:
            t.join()


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("rounds", type=int, nargs="?", default=3)
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--callers", type=int, default=1)
    args = ap.parse_args()
    ks = kernels()
    for r in range(args.rounds):
        for kind in (("procpool", "multiprocessing") if r % 2 == 0 else ("multiprocessing", "procpool")):
            s, errors, files = run(kind, ks, args.busy, args.callers)
            print(json.dumps({"round": r, "pool": kind, "kernels": len(ks), "busy": args.busy,
                              "callers": args.callers, "s": round(s, 2), "errors": errors, "files": files}),
                  flush=True)
