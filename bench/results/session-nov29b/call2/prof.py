"""Session nov29b, call 2: where a warm find's host time goes on the device host (issue 18's rows over 3x torch).
Runs bench_cold's warm child (a warm-up find of another shape, then the rows' finds on an empty user DB) with a
variant applied first: ``base``; ``gil`` (the whole find under harness.prompt_gil: other threads give the GIL back
within 50 us); ``noprefetch`` (MIOFIND_CUDNN_PREFETCH=off, set by the caller). Each find's entry prints the live
threads on stderr; BENCH_COLD_PROFILE (set by the caller) keeps a cProfile of each find's main thread.

    python prof.py VARIANT ROWS_JSON
"""

import json
import os
import sys
import threading

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 4))
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]

import bench_cold  # noqa: E402
import miofind.find as find  # noqa: E402
from miofind import harness  # noqa: E402

variant, rows = sys.argv[1], json.loads(sys.argv[2])
orig = find._find


def traced(problem, **kw):
    names = sorted(t.name for t in threading.enumerate() if t is not threading.current_thread())
    print(f"threads at {problem.key()}: {names}", file=sys.stderr, flush=True)
    if variant == "gil":
        with harness.prompt_gil():
            return orig(problem, **kw)
    return orig(problem, **kw)


find._find = traced
bench_cold._miofind_child([tuple(r) for r in rows], warmup=True)
