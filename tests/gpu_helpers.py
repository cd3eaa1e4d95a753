"""Shared by every family's tests: the claim grid (every solver x direction x shape x dtype x layout a
family could claim), its split by applicability (CPU, at collection time), the pin on what a family
accepts, running one solver on the GPU against the numpy float64 reference, and a fake compiled kernel for building
invokers and their launch recipes on the CPU."""

from __future__ import annotations

import collections
import zlib
from typing import NamedTuple

import numpy as np

from shapes import DTYPES, layouts_for
from miofind.problem import ProblemDescription

STRICT = tuple((dt, "strict") for dt in DTYPES)


class FakeKernel:
    """What a solution's invoker factory reads of a compiled kernel: building an invoker and its launch recipe on the
    CPU, with nothing compiled or launched."""

    class kernel:       # noqa: N801
        ptr = 0xF00D
    max_dynamic_shared_size_bytes = 0


class Claim(NamedTuple):
    """One (solver, direction, shape, dtype, layout, math) case of a family's claim grid."""

    solver: object
    direction: str
    shape: str
    kw: dict
    dtype: str
    layout: str
    math: str = "strict"

    @property
    def id(self) -> str:
        tail = "" if self.math == "strict" else f"-{self.math}"
        return f"{self.solver.id}-{self.direction}-{self.shape}-{self.dtype}-{self.layout}{tail}"

    def problem(self) -> ProblemDescription:
        return ProblemDescription.make(self.direction, layout=self.layout, dtype=self.dtype, math=self.math,
                                       **self.kw)

    def applicability(self):
        return self.solver.applicability(self.problem())


def claim_grid(family, shapes, modes=STRICT) -> list[Claim]:
    """Every case a family could claim: its solvers x their directions x ``shapes`` (name -> make
    keywords) x ``modes`` ((dtype, math) pairs) x the layouts of the shape's rank."""
    return [Claim(s, d, name, kw, dt, lay, math) for s in family for d in "FBW" if d in s.directions
            for name, kw in shapes.items() for dt, math in modes for lay in layouts_for(kw)]


def accepted(grid) -> list[Claim]:
    """The cases whose solver claims the problem (a CPU check): the GPU tests are parametrised
    over these only, and ``assert_claims_pinned`` guards this filter."""
    return [c for c in grid if c.applicability()]


def params(cases):
    """``cases`` as pytest parameters of one argument, with readable ids."""
    import pytest

    return [pytest.param(c, id=c.id) for c in cases]


def claims_digest(cases) -> str:
    """A short, order-independent fingerprint of a set of cases (crc32 of the sorted ids)."""
    return f"{zlib.crc32(chr(10).join(sorted(c.id for c in cases)).encode()):08x}"


def assert_claims_pinned(grid, per_solver: dict[str, int], digest: str):
    """The accepted cases of ``grid`` are exactly the pinned ones: ``per_solver`` counts them by
    solver id and ``digest`` (claims_digest) fixes which they are; every rejection carries a reason.
    A changed applicability rule fails here, naming the rejections, instead of becoming a GPU skip."""
    acc, rejected = [], []
    for c in grid:
        a = c.applicability()
        if a:
            acc.append(c)
        else:
            assert a.reason, f"{c.id}: rejected without a reason"
            rejected.append((c, a.reason))
    counts = dict(collections.Counter(c.solver.id for c in acc))
    got = {s: counts.get(s, 0) for s in sorted({c.solver.id for c in grid})}
    if got != dict(sorted(per_solver.items())) or claims_digest(acc) != digest:
        reasons = collections.Counter(f"{c.solver.id}: {why}" for c, why in rejected)
        listing = "\n".join(f"  {n:4d} x {r}" for r, n in sorted(reasons.items()))
        raise AssertionError(f"accepted per solver {got} (total {len(acc)} of {len(grid)}), digest "
                             f"{claims_digest(acc)!r}; pinned {per_solver} (total {sum(per_solver.values())}), "
                             f"{digest!r}. Rejections:\n{listing}")
    return acc, rejected


def check_solver(solver, problem, seed=0, config=None):
    """Run ``solver`` on fresh random inputs with a NaN-poisoned output; return (error, tolerance)."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.reference import conv_reference
    from miofind.verify import poison, random_array, rel_error, to_float64, tolerance

    rng = cupy.random.default_rng(seed)
    sa, sb, so = problem.io_shapes()
    dt = problem.dtype
    a, b = random_array(sa, dt, rng), random_array(sb, dt, rng)
    # a fused problem's bias (k elements), scaled like the outputs so that it moves them
    bias = random_array((problem.k,), dt, rng, scale=4.0) if problem.bias else None
    out = cupy.empty(so, dtype=a.dtype)
    poison(out, dt)
    cfg = config if config is not None else solver.default_config(problem.as_conv())
    sol = Solution(solver.id, solver.algorithm, 0.0, solver.workspace_bytes(problem), cfg, False, problem)
    run_solution(sol, a, b, out, bias=bias)
    cupy.cuda.get_current_stream().synchronize()
    ref = conv_reference(problem, cupy.asnumpy(to_float64(a, dt)), cupy.asnumpy(to_float64(b, dt)),
                         None if bias is None else cupy.asnumpy(to_float64(bias, dt)))
    err = rel_error(to_float64(out, dt), cupy.asarray(ref))
    tol = tolerance(dt, solver.family, problem.as_conv().direction, problem.math)
    assert np.isfinite(err), f"{solver.id}: non-finite output (unwritten elements or overflow)"
    return err, tol


def check_configs(solver, problem, configs):
    """Every config of ``configs`` (at least one) is valid for ``solver`` on ``problem`` and verifies against the
    float64 reference (``check_solver``, seeded by the problem's key and the config)."""
    assert configs
    for cfg in configs:
        assert solver.is_valid_config(problem, cfg), cfg
        seed = zlib.crc32(repr((problem.key(), cfg)).encode()) & 0xFFFF
        err, tol = check_solver(solver, problem, seed=seed, config=cfg)
        assert err <= tol, f"{problem.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


def check_claim(claim: Claim):
    """An accepted case verifies against the float64 reference (GPU)."""
    p = claim.problem()
    a = claim.solver.applicability(p)
    assert a, f"{claim.solver.id} rejected {p.key()}: {a.reason}"
    seed = zlib.crc32(repr((claim.shape, claim.dtype, claim.layout, claim.math)).encode()) & 0xFFFF
    err, tol = check_solver(claim.solver, p, seed=seed)
    assert err <= tol, f"{claim.solver.id} {p.key()}: relative error {err:.3g} > {tol:.1g}"
