"""The registry: stable, unique ids; applicability tables with reasons; no GPU needed."""

import pytest

from miofind.compile import kernel_source
from miofind.problem import ProblemDescription
from miofind.registry import _ROWS, applicability_table, get_solver, registry, solvers

P = ProblemDescription.make


def test_ids_stable_unique_ordered():
    nums = [r.number for r in registry()]
    assert nums == sorted(nums) == list(range(1, len(nums) + 1))
    assert len({r.id for r in registry()}) == len(nums)
    # the DB names of the first solvers never change
    assert [r[1] for r in _ROWS[:4]] == ["ConvDirectNaiveConvFwd", "ConvDirectNaiveConvBwd",
                                         "ConvDirectNaiveConvWrw", "ConvDirectTiledFwd"]


def test_lookup_by_name_and_number():
    assert get_solver("ConvDirectTiledFwd") is get_solver(4)
    with pytest.raises(ValueError, match="unknown"):
        get_solver("NoSuchSolver")


def test_declared_directions_and_direction_lists():
    # registry() checks each row's declared directions against its class (RuntimeError otherwise)
    live = [r.solver for r in registry() if r.solver is not None]
    for d in "FBW":
        assert solvers(d) == [s for s in live if d in s.directions]
    assert solvers() == live
    with pytest.raises(ValueError, match="direction='X'"):
        solvers("X")


def test_candidates_import_only_their_direction(tmp_path):
    """A new process listing the candidates of a W problem imports no forward or backward solver."""
    import os
    import subprocess
    import sys

    import miofind
    root = os.path.dirname(os.path.dirname(os.path.abspath(miofind.__file__)))
    code = ("import sys; from miofind.find import candidates; from miofind.problem import ProblemDescription as P\n"
            "c, _ = candidates(P.make('W', n=2, c=8, k=8, in_size=(9, 9), pads=1))\n"
            "mods = sorted(m for m in sys.modules if m.startswith('miofind.solvers.'))\n"
            "print(len(c), ' '.join(mods))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": root}).stdout.split()
    n, mods = int(out[0]), out[1:]
    assert n >= 3
    solver_mods = {m.rsplit(".", 1)[1] for m in mods} & {t.split(":")[0] for _, _, t, _ in _ROWS if t}
    # a W solver's module names its direction: ..._wrw, ..._wrw_<variant> (e.g. implicit_gemm_hopper_wrw_tf32_rn), or
    # gemm_wrw1x1
    assert solver_mods and all("wrw" in m.split("_") or m.endswith("wrw1x1") for m in solver_mods), solver_mods


def test_kernel_sources_exist():
    for s in solvers():
        files = getattr(s, "kernel_files", ())
        for f in files:
            assert kernel_source(f)           # headers (.cuh) are listed for the source hash
        if files:
            assert any("__global__" in kernel_source(f) for f in files if f.endswith(".cu"))


TABLE = [
    # problem, solver id, applies, reason fragment
    (P("F", n=2, c=8, k=8, in_size=(9, 9), pads=1), "ConvDirectTiledFwd", True, ""),
    (P("F", n=2, c=8, k=8, in_size=(9, 9), pads=1, layout="NHWC"), "ConvDirectTiledFwd", False, "NCHW only"),
    (P("F", n=2, c=8, k=8, in_size=(5, 9, 9), pads=1), "ConvDirectTiledFwd", False, "3D"),
    (P("B", n=2, c=8, k=8, in_size=(9, 9), pads=1), "ConvDirectTiledFwd", False, "direction B"),
    (P("F", n=2, c=8, k=8, in_size=(30, 30), filter_size=13, pads=6), "ConvDirectTiledFwd", False, "11x11"),
    (P("B", n=2, c=8, k=8, in_size=(9, 9), pads=1, transposed=True), "ConvDirectTiledFwd", True, ""),
    (P("W", n=2, c=8, k=8, in_size=(5, 9, 9), layout="NDHWC", groups=4, dtype="BF16"), "ConvDirectNaiveConvWrw", True, ""),
    (P("F", n=2, c=8, k=8, in_size=(9, 9)), "ConvDirectNaiveConvBwd", False, "direction F"),
    (ProblemDescription.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT8INT8INT32-F"),
     "ConvDirectNaiveConvFwd", False, "INT8"),
    (ProblemDescription.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-1-NCHW-FP32-F"), "ConvDirectNaiveConvFwd",
     False, "bias"),
    (ProblemDescription.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHWc-NCHWc-NCHWc-FP32-F"),
     "ConvDirectNaiveConvFwd", False, "layout"),
]


@pytest.mark.parametrize("problem,sid,applies,why", TABLE, ids=[f"{t[1]}-{t[0].key()}" for t in TABLE])
def test_applicability_table(problem, sid, applies, why):
    a = dict((s.id, a) for s, a in applicability_table(problem))[sid]
    assert bool(a) == applies
    if not applies:
        assert why in a.reason


def test_every_rejection_has_a_reason():
    for key in ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-B",
                "1-1-161-700-1x5x20-32-1-157-681-1-0x0x0-1x1x1-1x1x1-0-NCDHW-FP16-F",
                "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP8-W"):
        for s, a in applicability_table(ProblemDescription.from_key(key)):
            assert a or a.reason


def test_tiled_config_space_is_valid_and_default_in_it():
    s = get_solver("ConvDirectTiledFwd")
    p = P("F", n=2, c=8, k=8, in_size=(14, 14), pads=1)
    space = list(s.config_space(p))
    assert space and all(s.is_valid_config(p, c) for c in space)
    assert s.default_config(p) in space
    assert not s.is_valid_config(p, {"TILE_W": 7, "TILE_H": 8, "KPT": 8, "CCH": 8})
    big = P("F", n=1, c=32, k=32, in_size=(40, 40), filter_size=11, pads=5)
    assert not s.is_valid_config(big, {"TILE_W": 32, "TILE_H": 16, "KPT": 16, "CCH": 16})  # > 48 KiB shared
