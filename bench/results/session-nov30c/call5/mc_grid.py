"""Session nov30c call 5: why the multicast twins (PERSIST = 3) ran 1.3-3.7x their PERSIST = 1 configs (call 4). The
same multicast config at persistent grids of 2 x k blocks (k clusters of two; the solver's grid_of gives 2 x 66 at one
block an SM), beside its PERSIST = 1 config at the solver's grid, isolated kernel time (median of three interleaved
passes), each verified first; and cuOccupancyMaxActiveClusters where the driver binding has it. FP16 NHWC, N = 32.
Usage: python mc_grid.py [k,k,... [out.json]]"""
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]
import kernel_timing  # noqa: E402
from miofind.harness import Harness  # noqa: E402
from miofind.invokers import build_invoker  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from miofind.solvers import implicit_gemm_hopper_base as hb  # noqa: E402
from shapes import _resnet50  # noqa: E402

F = get_solver("ConvImplicitGemmHopperFwd")
LAYERS = ("r50_1024to256_14_1x1s1", "r50_128to128_28_3x3s1", "r50_256to64_56_1x1s1", "r50_512to512_7_3x3s1")
KS = tuple(int(k) for k in sys.argv[1].split(",")) if len(sys.argv) > 1 else (16, 24, 32, 40, 48, 52, 56, 58, 60, 62, 64, 66)
real_sm = hb.sm_count
out = {}
for name in LAYERS:
    p = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **_resnet50(32)[name])
    d = F.default_config(p)
    mc = dict(d, PERSIST=3)
    h = Harness(p, verify=True, seed=0)
    calls = {}

    def add(label, sol):
        inv = build_invoker(p, sol)
        ws = h.workspace(sol.workspace_bytes)
        h.check(inv, ws, "implicit_gemm_hopper")
        pw = 0 if ws is None else ws.data.ptr
        pa, pb, po = h.a.data.ptr, h.b.data.ptr, h.out.data.ptr
        calls[label] = (lambda s_, inv=inv, pw=pw: inv(pa, pb, po, pw, s_), ws, sol.kernels[0].grid[0])

    add("P1", F.get_solution(p, d))
    bps = hb.blocks_per_sm(p, mc)
    for k in KS:
        hb.sm_count = lambda k=k: 2 * k // bps          # grid_of: 2 x min(pairs, sm_count() x bps // 2)
        add(f"P3 k={k}", F.get_solution(p, mc))
    hb.sm_count = real_sm
    times = {lab: [] for lab in calls}
    for _ in range(3):
        for lab, (fn, _ws, _g) in calls.items():
            times[lab].append(kernel_timing.isolated_ms(fn, 30))
    base = statistics.median(times["P1"])
    print(f"{name}: default {json.dumps(d)}; P1 {base * 1e3:.1f} us (grid {calls['P1'][2]})", flush=True)
    for lab, ts in times.items():
        if lab != "P1":
            print(f"  {lab:8s} grid {calls[lab][2]:4d}  {statistics.median(ts) * 1e3:6.1f} us  {statistics.median(ts) / base:.3f}",
                  flush=True)
    out[name] = {lab: {"grid": calls[lab][2], "passes_ms": ts} for lab, ts in times.items()}
    del h, calls
Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/r/mc_grid.json").write_text(json.dumps(out, indent=1))
try:
    import cupy
    from cupy.cuda import driver
    print("driver has occupancyMaxActiveClusters:", hasattr(driver, "occupancyMaxActiveClusters"))
    print("device:", cupy.cuda.runtime.getDeviceProperties(0)["name"])
except Exception as e:  # noqa: BLE001
    print("occupancy query:", type(e).__name__, e)
