"""A find's preparation runs a ``first_run_loads`` solver's invoker once on scratch buffers (find.first_run: the
GEMM solvers, whose first cuBLASLt launch in a process loads its kernel's module), only in a find (not a tuner's
batch), within FIRST_RUN_BYTES; on the GPU, the run happens and the solver's find result still verifies."""

from __future__ import annotations

import pytest

from miofind import find, tiered
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, solvers

P16 = ProblemDescription.make("B", layout="NHWC", dtype="FP16", n=16, c=256, k=256, in_size=(28, 28), filter_size=3,
                              pads=1, strides=2)


def test_only_the_gemm_family_loads_on_first_run():
    assert {s.id for s in solvers() if s.first_run_loads} == {s.id for s in solvers() if s.family == "gemm"}


@pytest.mark.parametrize("first_runs", [True, False])
def test_prepare_runs_it_once_in_a_find_only(monkeypatch, first_runs):
    ran = []
    monkeypatch.setattr(tiered, "prepare", lambda problem, solver, config, sol, memo=None: (sol, "inv"))
    monkeypatch.setattr(find, "first_run", lambda problem, sol, inv: ran.append((sol.solver_id, inv)))
    gemm, hopper = get_solver("GemmBwdRest"), get_solver("ConvImplicitGemmHopperBwd")
    for s in (gemm, hopper):
        sol, inv, _ = find._prepare(P16, s, None, first_runs=first_runs)
        assert inv == "inv", sol
    assert ran == ([("GemmBwdRest", "inv")] if first_runs else [])


def test_a_problem_over_the_cap_is_left_to_the_find(monkeypatch):
    big = ProblemDescription.make("F", layout="NHWC", dtype="FP16", n=256, c=256, k=256, in_size=(112, 112),
                                  filter_size=1)
    sol = get_solver("GemmFwd1x1_0_1").get_solution(big)
    # 3 x 822 MB: no buffer is made, so no GPU is needed to say so
    assert find.first_run(big, sol, lambda *a: pytest.fail("ran")) is False


@pytest.mark.gpu
def test_first_run_runs_and_the_find_still_verifies():
    from miofind.api import find_solutions
    from miofind.invokers import build_invoker

    s = get_solver("GemmBwdRest")
    sol = s.get_solution(P16)
    assert find.first_run(P16, sol, build_invoker(P16, sol)) is True
    res = find_solutions(P16, mode="benchmark", store=False, solvers=[s.id])
    assert not res.failures, res.failures
    assert [x.solver_id for x in res] == [s.id] and res[0].verified and res.source == "find", res
