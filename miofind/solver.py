"""The solver contract: applicability with reasons, workspace, ConvSolution, invokers.

Solvers are stateless. ``applicability(problem)`` is a chain of guard clauses that runs in
constant time and launches nothing; it returns ``Applicable`` (truthy) or ``NotApplicable(reason)``.
``get_solution(problem, config)`` describes the kernels to build (source file in ``kernels_src/``,
kernel name, compile options and macros, grid and block) and an invoker factory that binds the
run-time tensors to the compiled kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from .problem import ProblemDescription


@dataclass(frozen=True)
class Applicability:
    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


APPLICABLE = Applicability(True)


def not_applicable(reason: str) -> Applicability:
    return Applicability(False, reason)


@dataclass(frozen=True)
class KernelInfo:
    """One kernel to compile: ``source`` is a file in kernels_src/, ``name`` an extern "C" symbol."""

    source: str
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    macros: tuple[tuple[str, str], ...] = ()
    options: tuple[str, ...] = ()

    def compile_options(self) -> tuple[str, ...]:
        return tuple(self.options) + tuple(f"-D{k}={v}" for k, v in self.macros)


# An invoker runs one solution: invoker(a, b, out, workspace, stream). a, b, out are device
# pointers (ints) to dense tensors in the order of ProblemDescription.io_shapes(), workspace a
# device pointer to the solution's workspace_bytes (0 when it needs none), stream a raw
# cudaStream_t handle; every launch and library call goes to that stream (miofind.launch). For a
# fused problem (ProblemDescription.fused) a sixth argument follows: the bias's device pointer (k
# elements of the data type; 0 when the problem has no bias).
Invoker = Callable[..., None]
InvokerFactory = Callable[[Sequence[Any]], Invoker]


@dataclass
class ConvSolution:
    solver_id: str
    kernels: list[KernelInfo]
    workspace_bytes: int
    invoker_factory: InvokerFactory
    config: dict | None = None
    # True when the solution runs only library calls (cuBLAS, cuFFT, cuDNN) and needs no NVRTC build
    prebuilt: bool = False


class Solver:
    """Base class. Subclasses set the class attributes and implement applicability/get_solution."""

    id: str = ""                       # stable DB name, never reused
    family: str = ""                   # direct, depthwise, gemm, winograd, fft, implicit_gemm, cudnn
    algorithm: str = ""                # MIOpen algorithm name it reports as
    directions: frozenset = frozenset("FBW")
    dtypes: frozenset = frozenset({"FP32", "FP16", "BF16"})
    tunable: bool = False
    # (max_configs, patience) that a tuning of this solver searches at least, unless the user sets a budget: for a
    # large space whose good configs lie far apart, where the tuner's default budget (16 configs, patience 8) stops
    # early. None: the tuner's budget
    tune_budget: tuple[int, int] | None = None
    # Bumped by hand when the Python-side launch logic changes (macros, launch geometry, workspace
    # layout): joins the trust key, so stored results of the old logic stop being trusted.
    version: int = 1
    is_reference: bool = False         # the naive solvers: used to verify others on the GPU
    # True when the kernels accept an output size the formula does not give (MIOpen same/valid modes)
    arbitrary_out_size: bool = False
    # True when repeated runs give bitwise-equal results (no atomics, a fixed summation order): what
    # torch.use_deterministic_algorithms(True) may run (miofind.torch)
    deterministic: bool = True
    # True when the solver computes fused forward problems (``ProblemDescription.fused``: bias and/or
    # activation in the epilogue); its invoker then takes the bias pointer as a sixth argument
    fused_epilogue: bool = False
    # How many of ``find_configs`` a find that may leave work to the background (``miofind.tiered``,
    # ``MIOFIND_SPECIALIZE=background``) measures at once, the first ones; the others are measured in the
    # background and replace the solver's record where faster. None: all of them at once
    configs_now: int | None = None
    # A find that may leave work to the background defers this solver where the learned cost model predicts it at least
    # this many times slower than the candidate it predicts fastest, when that is lower than MIOFIND_PREDICT_DEFER: for
    # solvers whose preparation costs far more than their measurement. None: MIOFIND_PREDICT_DEFER alone
    defer_factor: float | None = None
    # True when a config names a choice that means the same kernel only on the GPU model it was made on (a cuBLASLt
    # heuristic place: the heuristic ranks its algorithms for the GPU it runs on). A tuned config stored from another
    # device name (the system DB serves every GPU of an architecture and SM count, e.g. the H100 and the H200) is then
    # not used: the find runs the default config, the heuristic's first on this GPU (``trust.first_trusted_perf``)
    config_device_bound: bool = False
    # True when an invoker's first run in a process loads library code lazily (cuBLASLt's kernel modules): a find's
    # preparation then runs it once on scratch buffers (``find.first_run``), beside the other candidates' preparation
    first_run_loads: bool = False

    # -- applicability ------------------------------------------------------------------------
    def applicability(self, problem: ProblemDescription) -> Applicability:
        """Common guard clauses; subclasses call this first, then add their own.

        Transposed problems are judged as their equivalent ordinary problem (``as_conv``).
        """
        p = problem.as_conv()
        if not p.solvable:  # a MIOpen key kept as stated that describes no runnable convolution
            return not_applicable(p.unsolvable_reason)
        if p.direction not in self.directions:
            return not_applicable(f"direction {p.direction} not supported (supports {''.join(sorted(self.directions))})")
        if not p.solvable_dtype:
            return not_applicable(f"data types {'/'.join(p.dtypes)}"
                                  + (" with cast types" if any(p.cast_types) else "") + " not supported")
        if p.dtype not in self.dtypes:
            return not_applicable(f"data type {p.dtype} not supported (supports {', '.join(sorted(self.dtypes))})")
        if p.fused and not self.fused_epilogue:
            parts = (["bias"] if p.bias else []) + ([p.activation] if p.activation != "none" else [])
            return not_applicable(f"fused epilogue ({' + '.join(parts)}) not supported")
        if p.out_size_override is not None and not self.arbitrary_out_size:
            return not_applicable(f"output size {p.out_size} differs from the convolution formula "
                                  "(same/valid padding mode) and is not supported")
        return APPLICABLE

    def prefetch(self, problem: ProblemDescription) -> bool:
        """Start, in a background thread, host work that ``get_solution(problem, config)``'s invoker would otherwise do
        in the caller's thread whatever the config (a library's plans), so that a find's lookup and other candidates
        overlap it; whether anything started. Launches nothing on the caller's stream and never raises for a problem
        the solver is applicable to: the solution meets any failure again and reports it. Default: nothing."""
        return False

    def library_versions(self) -> dict[str, str | None]:
        """Versions of the libraries that run part of the solution (e.g. ``{"cufft": "12000"}``),
        None where unreadable here: they join the trust key (miofind.trust)."""
        return {}

    def workspace_bytes(self, problem: ProblemDescription, config: Mapping | None = None) -> int:
        return 0

    def get_solution(self, problem: ProblemDescription, config: Mapping | None = None) -> ConvSolution:
        raise NotImplementedError

    # -- tuning (tunable solvers override) ------------------------------------------------------
    def default_config(self, problem: ProblemDescription) -> dict | None:
        return None

    def config_space(self, problem: ProblemDescription) -> Iterable[dict]:
        return ()

    def find_configs(self, problem: ProblemDescription, limit: int | None = None) -> list:
        """The configs a find measures (the fastest is kept), at most ``limit`` (the first ones) when
        given: by default only the default config (None lets get_solution choose it; a tuned config
        from a PerfDB comes later)."""
        return [None]

    def more_configs(self, problem: ProblemDescription, listed: list) -> bool:
        """Whether ``find_configs(problem)`` holds configs that ``listed``, a limited listing, passed over (not
        only cut at the limit), so that a find measures them once no find runs."""
        return False

    def is_valid_config(self, problem: ProblemDescription, config: Mapping) -> bool:
        return config is None or not config

    def __repr__(self) -> str:
        return f"<solver {self.id}>"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class SolverInfo:
    """A registry row: a stable numeric id, the DB name, and the solver (None once retired)."""

    number: int
    id: str
    solver: Solver | None = field(default=None)
