"""What a find returns: solutions, failures, and the list that carries both."""

from __future__ import annotations

from dataclasses import dataclass

from .problem import ProblemDescription


@dataclass
class Solution:
    """One verified, timed way to solve a problem (from a find, or from the FindDB)."""

    solver_id: str
    algorithm: str
    time_ms: float
    workspace_bytes: int
    config: dict | None
    verified: bool
    problem: ProblemDescription
    source: str = "find"               # "find" (benchmarked now), "db" or "predicted" (immediate mode)
    max_error: float | None = None     # relative L2 error against the float64 reference
    time_q20_ms: float | None = None
    time_q80_ms: float | None = None
    cut: bool = False                  # a find stopped timing it early: clearly slower than the best, and
                                       # not verified (``verified`` False; never stored as a record)
    runs: int | None = None            # timed runs behind time_ms, when measured now

    @property
    def solver(self):
        from .registry import get_solver
        return get_solver(self.solver_id)

    def prepare(self):
        """This solution bound to its problem for repeated runs (``miofind.invokers.Prepared``):
        kernels loaded, arguments packed, plans made once; a call costs a few microseconds of host
        time. Compiles on first use when the kernels are not in the binary cache."""
        from .invokers import prepare
        return prepare(self.problem, self.solver_id, self.config)


@dataclass
class Failure:
    solver_id: str
    stage: str            # "applicability", "solution", "compile", "launch", "verify", "workspace", "isolate",
                          # "cut" (timing stopped early in an earlier find: recorded, not measured again)
    reason: str
    config: dict | None = None   # the config that failed (None: the solver's default, or not one config)


class FindResult(list):
    """A list of Solutions (sorted) with what was skipped or failed, and how long the find took.

    ``source`` is "find" (benchmarked now), "db" (``db_layer`` says "user" or "system") or
    "predicted" (no measurement: ``basis`` says how the times were predicted; "model" for the learned
    cost model, whose version ``model_version`` names). A benchmarked result has ``timing``, where
    the find's time went (``miofind.find.benchmark``: lookup, select, setup, configs, compile, reference,
    measure with its verify and timing, and store in ms, and per candidate; ``lookup_parts``: lookup_ms split
    into entry, device, candidates, db, reads, cudnn_prefetch and order); None otherwise."""

    def __init__(self, items=(), *, problem=None, source="find", failures=(), elapsed_ms=0.0, stored=False,
                 db_layer=None, basis=None, mode=None, timing=None, model_version=None):
        super().__init__(items)
        self.problem = problem
        self.source = source
        self.failures: list[Failure] = list(failures)
        self.elapsed_ms = elapsed_ms
        self.stored = stored
        self.db_layer = db_layer
        self.basis = basis
        self.mode = mode
        self.timing: dict | None = timing
        self.model_version = model_version

    @property
    def predicted(self) -> bool:
        return self.source == "predicted"
