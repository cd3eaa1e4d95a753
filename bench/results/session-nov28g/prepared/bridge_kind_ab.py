"""The first run of a DB-hit FP16 GEMM answer in a fresh process, as miofind.torch's first step meets it: with
``bridge_kind.patch`` the bridge GEMM stands in until cuBLASLt has answered its first FP16 query, without it only until
the set-up's FP32 query. Usage: python bridge_kind_ab.py store DB | python bridge_kind_ab.py run DB LABEL
``store``: one find of 256 @28 3x3/2 FP16 NCHW F with GemmFwdRest alone, stored in DB (sqlite path). ``run``: a fresh
process's lookup of it (a DB hit) and 16 runs 25 ms apart, each waited for; prints one line."""
import sys
import time

t_import = time.perf_counter()
import cupy  # noqa: E402

import miofind  # noqa: E402

P = miofind.ProblemDescription.make("F", n=16, c=256, k=256, in_size=(28, 28), filter_size=3, pads=1, strides=2,
                                    dtype="FP16", layout="NCHW")
db = f"sqlite:///{sys.argv[2]}"
if sys.argv[1] == "store":
    from miofind import lt_bridge
    from miofind.compile import compile_kernel

    compile_kernel(lt_bridge.kernel_info())     # the bridge runs only where its binary is in the kernel cache
    r = miofind.find_solutions(P, solvers=["GemmFwdRest"], db=db, mode="benchmark")
    print(f"stored {r[0].solver_id} {r[0].time_ms:.4f} ms verified={r[0].verified}")
    sys.exit(0)
import_ms = (time.perf_counter() - t_import) * 1e3
x = cupy.random.standard_normal((16, 256, 28, 28), dtype=cupy.float32).astype(cupy.float16)
w = cupy.random.standard_normal((256, 256, 3, 3), dtype=cupy.float32).astype(cupy.float16) * 0.05
cupy.cuda.Device().synchronize()
t0 = time.perf_counter()
r = miofind.find_solutions(P, solvers=["GemmFwdRest"], db=db)
find_ms = (time.perf_counter() - t0) * 1e3
runs = []
for _ in range(16):     # a first training step's pace: other layers' work (here a sleep) between this layer's runs
    t = time.perf_counter()
    y = miofind.run_solution(r[0], x, w)
    cupy.cuda.Device().synchronize()
    runs.append((time.perf_counter() - t) * 1e3)
    time.sleep(0.025)
ref = miofind.run_solution(r[0], x, w)
cupy.cuda.Device().synchronize()
err = float(cupy.abs(y.astype(cupy.float32) - ref.astype(cupy.float32)).max())
print(f"{sys.argv[3]}: source {r.source}; import {import_ms:.0f} ms, find {find_ms:.1f} ms; 16 runs 25 ms apart: "
      f"sum {sum(runs):.1f} ms, slowest {max(runs):.1f} ms (run {runs.index(max(runs)) + 1}), first {runs[0]:.2f} ms; "
      f"last vs a later run max diff {err:.3g}")
