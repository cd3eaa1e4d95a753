"""One MC = 2 config (argv[1], JSON) of the Hopper W kernel on a small problem whose last j tile lies partly past J
(n = 3, 7 x 7: 147 pixels), checked against the float64 reference: the workload of call 1's sanitizer runs."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from gpu_helpers import check_solver  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402

W = get_solver("ConvImplicitGemmHopperWrw")
p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", n=3, c=128, k=64, in_size=(7, 7), filter_size=1)
cfg = json.loads(sys.argv[1])
err, tol = check_solver(W, p, seed=5, config=cfg)
print(f"{p.key()} {cfg}: error {err:.3g} tolerance {tol:.1g}: {'ok' if err <= tol else 'FAILED'}")
sys.exit(0 if err <= tol else 1)
