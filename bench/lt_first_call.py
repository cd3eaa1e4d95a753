"""The first cuBLASLt GEMM of a process, step by step (issue 14: the first run of a solution that calls
cuBLASLt, e.g. Winograd, costs ~80 ms more than one that does not).

Each row is a fresh process after CUDA is initialised (CuPy, untimed), timing in order: loading
libcublasLt, ``cublasLtCreate``, one ``LtGemm`` (descriptors), its heuristic query, a second shape's
heuristic query, the first ``cublasLtMatmul`` (to its synchronize) and a second one. ``cached`` rows
skip the heuristic: the first ``fresh`` process saved its algorithm (``cublasLtMatmulAlgo_t`` is plain
data) and they reuse it, to show whether a persisted algorithm would remove the first-call cost.

    python bench/lt_first_call.py [--runs 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
mode, algo_file = sys.argv[1], sys.argv[2]
import cupy
cupy.cuda.Device(0).use()
a = cupy.random.standard_normal((36, 64, 64), dtype=cupy.float32)
b = cupy.random.standard_normal((36, 6272, 64), dtype=cupy.float32)
c = cupy.empty((36, 6272, 64), dtype=cupy.float32)
cupy.cuda.runtime.deviceSynchronize()
out = {}
def lap(name, t):
    now = time.perf_counter()
    out[name] = (now - t) * 1e3
    return now
t = time.perf_counter()
from miofind import cublas
lib = cublas.lt_library()
t = lap("load_ms", t)
cublas._lt_handle(0)
t = lap("create_ms", t)
def gemm(n):
    return cublas.LtGemm(0, 0, 64, n, 64, cublas.R_32F, 64, 64 * 64, 64, 64 * n, cublas.R_32F, 64, 64 * n, 36,
                         cublas.COMPUTE_32F, 0, True)
g = gemm(6272)
t = lap("descriptors_ms", t)
align = (256, 256, 256)
if mode == "fresh":
    plan = g._plans[align] = g._plan(align)
    t = lap("heuristic_ms", t)
    gemm(1568)._plan(align)
    t = lap("heuristic2_ms", t)
    with open(algo_file, "w") as fh:
        json.dump([list(plan[0]), plan[1]], fh)
else:
    with open(algo_file) as fh:
        words, ws = json.load(fh)
    import ctypes
    g._plans[align] = ((ctypes.c_uint64 * 8)(*words), ws)
    t = lap("heuristic_ms", t)
s = cupy.cuda.get_current_stream().ptr
g.call(s, a.data.ptr, b.data.ptr, c.data.ptr)
cupy.cuda.runtime.deviceSynchronize()
t = lap("matmul1_ms", t)
g.call(s, a.data.ptr, b.data.ptr, c.data.ptr)
cupy.cuda.runtime.deviceSynchronize()
t = lap("matmul2_ms", t)
print(json.dumps(out))
"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    rows = {"fresh": [], "cached": []}
    with tempfile.TemporaryDirectory() as tmp:
        algo = os.path.join(tmp, "algo.json")
        for mode in ("fresh", "cached"):
            for _ in range(a.runs + (mode == "fresh")):   # the first fresh process warms the bytecode
                r = subprocess.run([sys.executable, "-c", CHILD, mode, algo], env=env, cwd=ROOT,
                                   capture_output=True, text=True, timeout=300)
                if r.returncode:
                    sys.exit(f"child failed:\n{r.stderr[-3000:]}")
                rows[mode].append(json.loads(r.stdout.strip().splitlines()[-1]))
        rows["fresh"] = rows["fresh"][1:]
    med = {m: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for m, rs in rows.items()}
    for m, d in med.items():
        print(f"{m:7s} " + "  ".join(f"{k} {v:.1f}" for k, v in d.items()))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"median": med, "runs": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
