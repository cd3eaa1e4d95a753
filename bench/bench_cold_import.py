"""A new process answered from the FindDB (issue 14): importing miofind, then its first lookup of a problem
the shipped FindDB holds, each the median of ``--runs`` fresh processes (after one untimed process, so
that every run finds the bytecode and kernel caches warm).

CuPy is imported first (untimed; ``--first torch``: PyTorch instead, with CUDA up through it and torch tensors,
as in a PyTorch process, which has not imported CuPy; ``--first none``: nothing, on the CPU). Without ``--gpu``
(any machine): ``get_solutions(KEY, device="sm_90-132")``, immediate mode, over the shipped H100 DB beneath a user
DB that does not exist. With ``--gpu``: CUDA is initialised first
(untimed), then ``find_solutions(KEY)`` in normal mode beneath an empty user DB, and the first
``run_solution`` on arrays made beforehand (targets: import + find + run <= 400 ms, find <= 30 ms).
``find_cpu_ms`` is the calling thread's CPU time in the find: below ``find_ms`` where work ran
beside it (the FindDB checks' thread) or it waited. Each row says whether the process imported SQLAlchemy. ``--repo`` times another checkout (e.g. the
commit before a change); bytecode goes to a temporary ``PYTHONPYCACHEPREFIX``, never into the checkout.

    python bench/bench_cold_import.py [--runs 5] [--gpu] [--repo PATH] [--key KEY] [--json OUT]

``--bridge-ab`` (with ``--gpu``): the timed processes alternate ``MIOFIND_LT_BRIDGE=0`` and ``1`` (``--runs`` of each;
the first run of a cuBLASLt-backed answer waits for cuBLASLt's set-up, or runs on miofind's bridge GEMM meanwhile:
``miofind.lt_bridge``), and the untimed process is followed by a wait (up to 60 s) until the bridge's binary, which
it compiles in the background, is in the kernel cache. Each row reports the matmuls the bridge ran (``bridged``).

``--key`` times another 2-D NCHW problem of the shipped DB (default: a ResNet-50 3x3 layer whose answer,
Winograd F(4x4), runs a cuBLASLt GEMM: its first run pays cuBLASLt's own set-up, ~77 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
TARGETS_MS = {"find_ms": 30.0, "run_ms": 50.0, "total_ms": 400.0}

CHILD = r"""
import json, sys, time
gpu, key, shapes, first = sys.argv[1] == "gpu", sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
if first == "cupy":
    try:
        import cupy   # as a process that has CUDA up through CuPy has it imported
    except ImportError:
        pass
if gpu and first == "cupy":
    cupy.cuda.Device(0).use()
    cupy.cuda.runtime.deviceSynchronize()
    x = cupy.random.standard_normal(shapes[0], dtype=cupy.float32)
    w = cupy.random.standard_normal(shapes[1], dtype=cupy.float32)
    cupy.cuda.runtime.deviceSynchronize()
elif gpu:         # a PyTorch process: CUDA up through torch, CuPy not imported
    import torch
    x = torch.randn(shapes[0], device="cuda")
    w = torch.randn(shapes[1], device="cuda")
    torch.cuda.synchronize()
sync = (lambda: cupy.cuda.runtime.deviceSynchronize()) if first == "cupy" else (lambda: torch.cuda.synchronize())
t0 = time.perf_counter()
import miofind
from miofind import find_solutions, get_solutions, run_solution
t1, c1 = time.perf_counter(), time.thread_time()
res = find_solutions(key) if gpu else get_solutions(key, device="sm_90-132")
t2, c2 = time.perf_counter(), time.thread_time()
out = {"import_ms": (t1 - t0) * 1e3, "find_ms": (t2 - t1) * 1e3, "find_cpu_ms": (c2 - c1) * 1e3,
       "source": res.source, "sqlalchemy": "sqlalchemy" in sys.modules, "cupy_in_find": "cupy" in sys.modules}
if gpu:
    run_solution(res[0], x, w)
    sync()
    out["run_ms"] = (time.perf_counter() - t2) * 1e3
    out["cupy_after_run"] = "cupy" in sys.modules
    out["solver"] = res[0].solver_id
    lb = sys.modules.get("miofind.lt_bridge")
    out["bridged"] = lb.calls if lb is not None else 0
out["total_ms"] = (time.perf_counter() - t0) * 1e3
print(json.dumps(out))
"""


WAIT_BRIDGE = r"""
import time
from miofind import compile as C, lt_bridge
t0 = time.time()
while not C.is_compiled(lt_bridge.kernel_info()) and time.time() - t0 < 60:
    time.sleep(0.2)
print(f"bridge binary cached: {C.is_compiled(lt_bridge.kernel_info())} after {time.time() - t0:.1f} s")
"""


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="timed processes (default 5)")
    ap.add_argument("--gpu", action="store_true", help="find_solutions and the first run on the GPU")
    ap.add_argument("--repo", default=ROOT, help="the checkout to time (default: this one)")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--key", default=KEY, help="the problem (a 2-D NCHW FP32 key of the shipped DB)")
    ap.add_argument("--bridge-ab", action="store_true", help="alternate MIOFIND_LT_BRIDGE=0 and 1 (with --gpu)")
    ap.add_argument("--first", choices=("cupy", "torch", "none"), default="cupy",
                    help="what the process has up before miofind (untimed): CuPy (default; with --gpu CUDA through "
                         "CuPy, CuPy arrays), torch (--gpu only: CUDA through PyTorch, torch tensors, CuPy not "
                         "imported), none (CPU only: nothing)")
    a = ap.parse_args(argv)
    if a.bridge_ab and not a.gpu:
        ap.error("--bridge-ab needs --gpu")
    if (a.first == "torch") != (a.gpu and a.first != "cupy"):
        ap.error(f"--first {a.first}: torch needs --gpu, none is for the CPU run")
    if a.runs < 1:
        ap.error(f"--runs: {a.runs} is not a positive number")
    if not os.path.isfile(os.path.join(a.repo, "miofind", "__init__.py")):
        ap.error(f"--repo: {a.repo!r} is not a miofind checkout")
    a.shapes = key_shapes(a.key)
    return a


def key_shapes(key: str) -> list[list[int]]:
    """x and w shapes (NCHW, KCRS) of a 2-D NCHW MIOpen-style key C-H-W-RxS-K-Ho-Wo-N-..."""
    f = key.split("-")
    c, h, w, (r, s), k, n = int(f[0]), int(f[1]), int(f[2]), map(int, f[3].split("x")), int(f[4]), int(f[7])
    return [[n, c, h, w], [k, c, r, s]]


def run_child(a, env) -> dict:
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", CHILD, "gpu" if a.gpu else "cpu", a.key, json.dumps(a.shapes),
                        a.first], capture_output=True,
                       text=True, env=env, cwd=a.repo, timeout=600)
    wall = (time.perf_counter() - t) * 1e3
    if r.returncode != 0:
        sys.exit(f"the child process failed (exit status {r.returncode}):\n{r.stderr.strip()}\n{r.stdout.strip()}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["process_ms"] = wall
    return out


def main(argv=None) -> None:
    a = parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "MIOFIND_SYSTEM_DB")}
        path = os.pathsep.join([a.repo] + [q for q in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                           if q and os.path.abspath(q) != os.path.abspath(ROOT)])
        env.update(PYTHONPATH=path, PYTHONPYCACHEPREFIX=os.path.join(tmp, "pycache"),
                   MIOFIND_DB=os.path.join(tmp, "user", "finddb.sqlite"))
        if a.gpu:   # an empty user DB, as a user's first process leaves it
            subprocess.run([sys.executable, "-c", "from miofind.db import FindDB; FindDB().close()"], env=env,
                           cwd=a.repo, check=True, timeout=300)
        run_child(a, env)   # untimed: bytecode and kernel caches
        arms = {"": env}
        if a.bridge_ab:
            subprocess.run([sys.executable, "-c", WAIT_BRIDGE], env=env, cwd=a.repo, timeout=120)
            arms = {"MIOFIND_LT_BRIDGE=0": {**env, "MIOFIND_LT_BRIDGE": "0"},
                    "MIOFIND_LT_BRIDGE=1": {**env, "MIOFIND_LT_BRIDGE": "1"}}
        runs = {name: [] for name in arms}
        for _ in range(a.runs):
            for name, e in arms.items():
                runs[name].append(run_child(a, e))
    cols = ["import_ms", "find_ms", "find_cpu_ms"] + (["run_ms"] if a.gpu else []) + ["total_ms", "process_ms"]
    meds = {}
    for name, rs in runs.items():
        med = meds[name] = {c: statistics.median(r[c] for r in rs) for c in cols}
        print(f"{a.repo}: {'GPU find_solutions + first run' if a.gpu else 'CPU get_solutions --device sm_90-132'}, "
              f"{a.key}, {a.first} first, median of {a.runs} processes{' with ' + name if name else ''}")
        for c in cols:
            target = f"  (target <= {TARGETS_MS[c]:.0f})" if a.gpu and c in TARGETS_MS else ""
            print(f"  {c:<11} {med[c]:8.1f}   runs: {', '.join(f'{r[c]:.1f}' for r in rs)}{target}")
        print(f"  answered from: {sorted({r['source'] for r in rs})}; SQLAlchemy imported: "
              f"{sorted({r['sqlalchemy'] for r in rs})}; CuPy imported after the find: "
              f"{sorted({r['cupy_in_find'] for r in rs})}"
              + (f"; solver {sorted({r['solver'] for r in rs})}, bridged matmuls {[r['bridged'] for r in rs]}, "
                 f"CuPy imported after the run: {sorted({r['cupy_after_run'] for r in rs})}" if a.gpu else ""))
    if a.json:
        out = {"repo": a.repo, "gpu": a.gpu, "key": a.key, "first": a.first}
        if a.bridge_ab:
            out["arms"] = {name: {"median": meds[name], "runs": runs[name]} for name in runs}
        else:
            out.update(median=meds[""], runs=runs[""])
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
