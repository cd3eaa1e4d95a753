"""The first cuBLASLt GEMM of a new process (after CUDA is up), with and without the algorithm kept in the
kernel cache (``cublas.AlgoCache``, ``MIOFIND_CUBLASLT_CACHE``): each mode in fresh processes, the modes
alternating, median milliseconds of making the GEMM and of its first call (which plans it: the
heuristic's query, or the stored algorithm), and of the heuristic's query alone where it ran.

    python bench/cublaslt_first_call.py [--runs 5] [--json OUT]
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
import json, time
import cupy
cupy.cuda.runtime.getDevice(); cupy.empty(1).data.ptr; cupy.cuda.runtime.deviceSynchronize()
t0 = time.perf_counter()
from miofind import cublas
t1 = time.perf_counter()
# Winograd F(4x4)'s batched GEMM of a ResNet-50 64->64 56x56 layer at N=32 (36 tiles x 6272 tiles per image)
m, n, k, batch = 64, 6272, 64, 36
a = cupy.ones((batch, k, m), cupy.float32); b = cupy.ones((batch, n, k), cupy.float32)
c = cupy.empty((batch, n, m), cupy.float32)
cupy.cuda.runtime.deviceSynchronize()
timed = {}
for name in ("_heuristic",):
    f = getattr(cublas.LtGemm, name)
    def w(self, *a, f=f, name=name):
        s = time.perf_counter(); r = f(self, *a); timed[name] = (time.perf_counter() - s) * 1e3; return r
    setattr(cublas.LtGemm, name, w)
t2 = time.perf_counter()
g = cublas.LtGemm(0, 0, m, n, k, cublas.R_32F, m, k * m, k, n * k, cublas.R_32F, m, n * m, batch,
                  cublas.COMPUTE_32F, 0, False)
t3 = time.perf_counter()
g.call(cupy.cuda.get_current_stream().ptr, a.data.ptr, b.data.ptr, c.data.ptr)
cupy.cuda.runtime.deviceSynchronize()
t4 = time.perf_counter()
ok = bool(abs(float(c[0, 0, 0]) - k) < 1e-3)
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "make_ms": (t3 - t2) * 1e3, "first_call_ms": (t4 - t3) * 1e3,
                  "heuristic_ms": timed.get("_heuristic"), "correct": ok}))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    rows = {"heuristic": [], "cached": []}
    with tempfile.TemporaryDirectory() as kc:
        env = dict(os.environ, MIOFIND_KERNEL_CACHE=kc, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))

        def child(mode):
            e = dict(env, MIOFIND_CUBLASLT_CACHE="0" if mode == "heuristic" else "1")
            out = subprocess.run([sys.executable, "-c", CHILD], env=e, capture_output=True, text=True, timeout=120)
            if out.returncode:
                raise SystemExit(out.stderr[-2000:])
            return json.loads(out.stdout.strip().splitlines()[-1])
        child("cached")           # stores the algorithm (and warms the bytecode)
        for _ in range(args.runs):
            for mode in rows:
                rows[mode].append(child(mode))
    summary = {mode: {k: statistics.median(r[k] for r in rs if r[k] is not None)
                      for k in ("make_ms", "first_call_ms", "heuristic_ms")
                      if any(r[k] is not None for r in rs)} for mode, rs in rows.items()}
    summary["all_correct"] = all(r["correct"] for rs in rows.values() for r in rs)
    print(json.dumps(summary, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": "python bench/cublaslt_first_call.py " + " ".join(sys.argv[1:] if argv is None else argv),
                       "summary": summary, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
