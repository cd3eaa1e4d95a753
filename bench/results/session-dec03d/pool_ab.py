"""Session dec03d: compile throughput of miofind.procpool's pool against the spawned multiprocessing pool it replaced
(CPU, no GPU): the same kernels (ResNet-50 layers' tiled direct and implicit GEMM configs) compiled into an empty
binary cache by each, alternately, with 2 workers. Usage: python pool_ab.py [ROUNDS]"""

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
from miofind.tuning.precompile import _compile_one, solution_kernels  # noqa: E402


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


def run(kind, ks):
    with tempfile.TemporaryDirectory() as d:
        todo = [(k, "sm_90", f"{d}/{binary_key(k, 'sm_90')}.cubin") for k in ks]
        t0 = time.perf_counter()
        if kind == "procpool":
            pool = ProcPool(2)
            errs = pool.map(_compile_one, todo)
            pool.shutdown()
        else:
            with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
                errs = list(pool.map(_compile_one, todo))
        return time.perf_counter() - t0, sum(1 for e in errs if e), len(os.listdir(d))


if __name__ == "__main__":
    ks = kernels()
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for r in range(rounds):
        for kind in (("procpool", "multiprocessing") if r % 2 == 0 else ("multiprocessing", "procpool")):
            s, errors, files = run(kind, ks)
            print(json.dumps({"round": r, "pool": kind, "kernels": len(ks), "s": round(s, 2), "errors": errors,
                              "files": files}), flush=True)
