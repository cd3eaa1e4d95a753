"""Every family on the 23 ResNet-50 v1.5 shapes at N=2: a find verifies every applicable solver
against the float64 reference; no candidate may fail verification or its launch (GPU). Each case
has at least two solvers besides cuDNN (CPU)."""

import pytest

from shapes import RESNET50_SMALL_N
from miofind import ProblemDescription, find_solutions

CASES = [(name, d, dt, lay) for name in RESNET50_SMALL_N for d in "FBW" for dt, lay in (("FP32", "NCHW"), ("FP16", "NHWC"))]


def test_resnet50_cases_have_solvers():
    from miofind.registry import solvers

    assert len(RESNET50_SMALL_N) == 23
    for name, direction, dtype, layout in CASES:
        p = ProblemDescription.make(direction, layout=layout, dtype=dtype, **RESNET50_SMALL_N[name])
        own = [s.id for s in solvers() if s.family != "cudnn" and s.applicability(p)]
        assert len(own) >= 2, f"{p.key()}: only {own}"


@pytest.mark.gpu
@pytest.mark.parametrize("name,direction,dtype,layout", CASES, ids=[f"{n}-{d}-{dt}-{l}" for n, d, dt, l in CASES])
def test_resnet50_find_verifies(name, direction, dtype, layout, tmp_db):
    p = ProblemDescription.make(direction, layout=layout, dtype=dtype, **RESNET50_SMALL_N[name])
    res = find_solutions(p, mode="benchmark", store=False, iters=2, warmup=1, defer=False)   # every solver now
    bad = [f"{f.solver_id} ({f.stage}): {f.reason[:300]}" for f in res.failures if f.stage in ("verify", "launch", "compile", "solution")]
    assert not bad, f"{p.key()}: " + "; ".join(bad)
    assert len(res) >= 2, f"{p.key()}: only {[s.solver_id for s in res]}"
