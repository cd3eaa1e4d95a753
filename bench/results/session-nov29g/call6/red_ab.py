"""Session nov29g call 6: does the Hopper W split's reduce kernel cost time a wider reduce would save? (call 5's ncu:
the reduce of ResNet-50's 256 -> 64 @56 1x1 W at its best config ran 5.0 us, 64 blocks, 9% of DRAM bandwidth.)
For each of ResNet-50's 23 W layers (N=32, FP16 NHWC): the Hopper W solver's default config and call 4's tuned one,
where split (a reduce launch), timed with the reduce kernel built at RED_GROUPS = 4 (the solver's), 8, 16 and 32 (at
most the split count): kernel time of the whole solution (bench/kernel_timing.py: isolated = one call in a CUDA
graph, replayed; graph = 50 calls back to back), the output checked against RED_GROUPS = 4's (the sums' order
differs: relative difference printed). The first run (call6/first/) changed only the reduce kernel's macros, not
the grid the invoker launches (bound in get_solution): its RED_GROUPS > 4 rows left outputs unwritten (NaN) and do
not count. Usage: python red_ab.py TUNE_JSON OUT.json"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "bench"))
import cupy  # noqa: E402
import kernel_timing as kt  # noqa: E402
from miofind.invokers import build_invoker  # noqa: E402
from miofind.models import model_problems  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from miofind.solvers import implicit_gemm_hopper_wrw as wrw  # noqa: E402
from miofind.verify import random_array  # noqa: E402

W = get_solver("ConvImplicitGemmHopperWrw")


def with_groups(p, cfg, g):
    """The solution built with the module's RED_GROUPS = g (its macros and the reduce's grid alike; the main kernel's
    macros carry it too, so each g builds it again)."""
    old = wrw.RED_GROUPS
    wrw.RED_GROUPS = g
    try:
        return W.get_solution(p, cfg)
    finally:
        wrw.RED_GROUPS = old


def main():
    tuned = {o["key"]: x["config"] for o in json.load(open(sys.argv[1]))["outcomes"] for x in o["solvers"]
             if x["solver_id"] == W.id}
    probs = model_problems("resnet50", batch=32, dtypes=("FP16",), layouts=("NHWC",), directions="W")
    out = []
    for p in probs:
        if not W.applicability(p):
            continue
        sa, sb, so = p.io_shapes()
        rng = cupy.random.default_rng(3)
        a, b = random_array(sa, "FP16", rng), random_array(sb, "FP16", rng)
        for which, cfg in (("default", W.default_config(p)), ("tuned", tuned.get(p.key()))):
            if cfg is None or W.get_solution(p, cfg).workspace_bytes == 0:
                continue
            base = W.get_solution(p, cfg)
            ref = None
            for g in (4, 8, 16, 32):
                eff = dict(base.kernels[1].macros)["SPLITK"]
                if g > 4 and g > int(eff):
                    continue
                sol = with_groups(p, cfg, g)
                inv = build_invoker(p, sol)
                ws = cupy.empty(sol.workspace_bytes, dtype=cupy.uint8)
                y = cupy.full(so, cupy.nan, dtype=a.dtype)
                fn = lambda st, inv=inv, y=y, ws=ws: inv(a.data.ptr, b.data.ptr, y.data.ptr, ws.data.ptr, st)  # noqa
                fn(cupy.cuda.get_current_stream().ptr)
                cupy.cuda.get_current_stream().synchronize()
                yf = y.astype(cupy.float32)
                if ref is None:
                    ref = yf
                row = dict(key=p.key(), which=which, config=cfg, groups=g, splits=int(eff),
                           reduce_blocks=sol.kernels[1].grid[0], nan=int(cupy.isnan(y).sum()),
                           rel_diff=float(cupy.abs(yf - ref).max() / cupy.abs(ref).max()),
                           iso_us=1e3 * kt.isolated_ms(fn, 60), graph_us=1e3 * kt.graph_ms(fn, 50))
                out.append(row)
                print(p.key()[:40], which, g, eff, row["reduce_blocks"], round(row["iso_us"], 2),
                      round(row["graph_us"], 2), row["nan"], f"{row['rel_diff']:.1e}", flush=True)
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
