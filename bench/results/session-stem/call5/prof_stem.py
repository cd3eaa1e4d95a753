"""Session stem, call 5: ResNet-50's first layer (N=32, FP16 NHWC) through the small-C solvers' default configs, each
run 3 times after a warm-up, for ncu (the kernels' speed-of-light and warp-state sections)."""
import cupy

from miofind.api import Solution, run_solution
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.verify import random_array

for d, sid in (("F", "ConvImplicitGemmSmallCFwd"), ("W", "ConvImplicitGemmSmallCWrw")):
    p = ProblemDescription.make(d, n=32, c=3, k=64, in_size=(224, 224), filter_size=7, pads=3, strides=2,
                                layout="NHWC", dtype="FP16")
    s = get_solver(sid)
    rng = cupy.random.default_rng(0)
    sa, sb, so = p.io_shapes()
    a, b = random_array(sa, "FP16", rng), random_array(sb, "FP16", rng)
    out = cupy.empty(so, dtype=a.dtype)
    sol = Solution(s.id, s.algorithm, 0.0, s.workspace_bytes(p), s.default_config(p), False, p)
    for _ in range(4):
        run_solution(sol, a, b, out)
    cupy.cuda.get_current_stream().synchronize()
    print(sid, "done")
