"""bench/find_breakdown.py with the Hopper solvers' find configs as before this session (the default alone): the
'off' side of call 10's A/B. Same arguments as find_breakdown.py."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from miofind.solver import Solver  # noqa: E402
from solvers.implicit_gemm_hopper_base import ImplicitGemmHopperBase  # noqa: E402
from solvers.implicit_gemm_hopper_wrw import ImplicitGemmHopperWrw  # noqa: E402

for cls in (ImplicitGemmHopperBase, ImplicitGemmHopperWrw):
    cls.find_configs = Solver.find_configs
    cls.configs_now = None

import find_breakdown  # noqa: E402

sys.exit(find_breakdown.main(sys.argv[1:]))
