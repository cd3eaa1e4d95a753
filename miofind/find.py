"""The find procedure: candidates, answers from the FindDBs, benchmarking, predictions, storing.

A find checks applicability, compiles every candidate in parallel threads, runs each on fresh
random inputs with a poisoned output, verifies it against the float64 naive reference, times it
with CUDA events (median after warm-ups, with 20/80% quantiles), sorts, and stores the results in
the user FindDB. Tunable solvers run their tuned config from the PerfDB when it holds a trusted,
valid one (else their default). Find modes (MIOpen's) decide when the FindDBs (user over system)
answer instead:

- ``normal``: from the DB when every candidate has a trusted record, else benchmark all. The system (shipped)
  DB vouches for the solvers it holds records of: a solver it has no record of at all (one added after it was
  built) is not asked of its answer, and is measured only where that DB has no answer (``from_db``);
- ``fast``: from the DB when any candidate has a trusted record, else an immediate prediction;
  never benchmarks;
- ``hybrid``: from the DB when any candidate has a trusted record, else benchmark all;
- ``dynamic_hybrid``: as hybrid, but a miss benchmarks only the candidates that need no new
  compilation (library-only solutions, or kernels in the binary cache); a prediction if none;
- ``benchmark``: always benchmark.

A benchmark stores each measured solver's failures in the user FindDB (``FindDB.store_find_failures``:
stage, reason, trust key, CUDA version, per config) and clears them when it succeeds. Every mode but
``benchmark`` then treats a candidate whose failure was recorded under its current trust key and this
CUDA major version, for every config it would measure, as settled: it is not measured again (it shows
among the result's failures), is not offered from a DB record or a prediction (immediate mode
included), and does not keep a normal-mode find from answering from the DB. A change of its code (trust key) or CUDA major makes it a candidate again. Out-of-memory failures and
workspace-limit skips are not recorded (they depend on what else runs and on the caller).

What a benchmark spends: the naive reference solvers are candidates only when asked for
(``with_naive``, or named in ``solvers``) or where nothing else applies; candidates are timed in
order of expected time (``expected_order``) and one clearly slower than the best so far stops being
timed (``FIND_CUT_FACTOR``; recorded as a failure of stage ``cut``, not as a record), already in its
warm-up runs when they are all that slow, and is not verified (``Harness.measure`` verifies the
output after the timing, so a cut candidate costs no comparison with the reference); a miss that may
leave work to the background leaves there the candidates the learned cost model predicts clearly slower
(``predicted_losers``, ``MIOFIND_PREDICT_DEFER``); the float64 reference is computed once per benchmark
(``Harness.shared``); ``FindResult.timing`` says where the time went.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import __version__, env, tiered
from .compile import is_compiled
from .db import Record
from .db.base import FindFailure, config_key
from .db import fastread, fastwrite
from .db.handles import open_dbs, preload_store
from .db.system import Overlay, PerfSnapshot
from .device import DeviceInfo, current_device
from .env import DEFAULT_CUT_FACTOR
from .harness import SETTLE_SPREAD, Harness, describe, failure_stage, reference_invoker_for
from .isolate import context_broken, names_sticky_error
from .problem import ProblemDescription
from .registry import get_solver, solvers as all_solvers
from .results import Failure, FindResult, Solution
from .solver import Solver
from .trust import is_trusted, other_model, trust_key, tuned_config

log = logging.getLogger(__name__)

FIND_MODES = ("normal", "fast", "hybrid", "dynamic_hybrid", "benchmark")


class ContextBrokenError(RuntimeError):
    """A candidate left the CUDA context unusable (a sticky error such as an illegal address): the
    find stops there, names the candidate, and stores nothing; the process must be restarted. Also
    raised, with the finding process unharmed, when a risky problem's float64 reference broke the
    context of the child process that checks candidates (``miofind.isolate``): nothing can be verified."""


# families whose solutions plan GEMMs with cuBLASLt (miofind.cublas.LtGemm)
LT_FAMILIES = frozenset({"gemm", "winograd"})


def _sticky(reason: str) -> bool:
    """Whether this process's context is broken by the error ``reason`` names (a seam for tests)."""
    return context_broken(reason)


SORT_KEYS = ("time", "workspace")
# Timing budget per find candidate (harness.Harness.measure): one that fits keeps 3 warm-ups (the
# verification run the first) and 10 timed runs; a kernel slower than about 19 ms per run gets one
# warm-up and fewer timed runs (at least 3); one whose verification run alone exceeds the budget is
# recorded from that run.
FIND_TIME_BUDGET_MS = 250.0
# Early stop (MIOFIND_CUT_FACTOR, ``cut_factor=``): a candidate whose warm-up runs (at least
# harness.CUT_AFTER_WARMUPS), or else whose first harness.TIMED_FIRST_GROUP timed runs, all take at least this factor
# times the best median measured so far in the find stops being timed (and is not verified). It is
# reported with the figures of its runs and ``Solution.cut``;
# the user FindDB gets no record of it (its median is not a full one) but a find failure of stage
# "cut", so that normal mode answers from the DB without it, as for any settled candidate, until its
# code changes; benchmark mode measures it again, and ``cut_factor=0`` (what ``miofind tune`` uses)
# times every candidate fully.
FIND_CUT_FACTOR = DEFAULT_CUT_FACTOR
# With early stop on, a solver's second and later configs (e.g. cuDNN's plans) are also cut at this
# factor times that solver's best median so far: only a solver's fastest config becomes its record,
# so a config clearly slower than one already measured cannot change what the find returns first
# nor what it stores. It is listed as a cut solution, not recorded as a failure (its solver has a
# fully timed config).
CONFIG_CUT_FACTOR = 1.25
# And once a solver has a fully timed config, CONFIG_STOP_AFTER_CUTS of its later configs cut in a row
# end its configs: the rest are not measured (counted in the timing breakdown's ``configs_stopped``).
# cuDNN's plans come in its heuristic's order, and in the finds of ResNet-50's first training step
# (bench/results/cold-find/, 408 finds) stopping there moved no find's winning time by more than 0.2%, while
# those plans cost 11-30% of cuDNN's verify and timing time (slow fallback engines among them).
CONFIG_STOP_AFTER_CUTS = 3


# -- arguments ---------------------------------------------------------------------------------

def resolve_problem(problem_or_arrays, conv_kwargs) -> ProblemDescription:
    """A ProblemDescription from a ProblemDescription, a FindDB key or ``(x, w)`` arrays."""
    if isinstance(problem_or_arrays, ProblemDescription):
        if conv_kwargs:
            raise ValueError(f"convolution keywords {sorted(conv_kwargs)} are only for arrays, not a ProblemDescription")
        return problem_or_arrays
    if isinstance(problem_or_arrays, str):
        return ProblemDescription.from_key(problem_or_arrays)
    if isinstance(problem_or_arrays, (tuple, list)) and len(problem_or_arrays) == 2:
        x, w = problem_or_arrays
        return ProblemDescription.from_arrays(x, w, **conv_kwargs)
    raise ValueError(f"problem_or_arrays: expected a ProblemDescription, a key string or (x, w) arrays, "
                     f"got {type(problem_or_arrays).__name__}")


def check_mode(mode) -> str:
    """The find mode: ``mode``, else the environment's, else normal; ValueError naming a bad one."""
    if mode is None:
        from .env import find_mode
        mode = find_mode()   # MIOFIND_FIND_MODE, else MIOpen's MIOPEN_FIND_ENFORCE / MIOPEN_FIND_MODE
    mode = str(mode).strip().lower() or "normal"
    if mode not in FIND_MODES:
        raise ValueError(f"mode={mode!r}: expected one of {', '.join(FIND_MODES)}")
    return mode


def check_cut_factor(cut_factor) -> float:
    """The early-stop factor: ``cut_factor``, else $MIOFIND_CUT_FACTOR, else FIND_CUT_FACTOR; 0 is
    off. ValueError naming a bad one."""
    if cut_factor is None:
        from .env import cut_factor as env_cut_factor
        return env_cut_factor()
    if isinstance(cut_factor, bool) or not isinstance(cut_factor, (int, float)) or \
            not (cut_factor == 0 or 1 <= cut_factor < math.inf):
        raise ValueError(f"cut_factor={cut_factor!r}: expected a number of at least 1, or 0 (no early stop)")
    return float(cut_factor)


def check_with_naive(with_naive) -> bool:
    """``with_naive``, else $MIOFIND_WITH_NAIVE (default False)."""
    if with_naive is None:
        from .env import with_naive as env_with_naive
        return env_with_naive()
    return bool(with_naive)


def check_workspace_limit(workspace_limit) -> None:
    if workspace_limit is not None and (isinstance(workspace_limit, bool) or not isinstance(workspace_limit, int)
                                        or workspace_limit < 0):
        raise ValueError(f"workspace_limit={workspace_limit!r}: expected a non-negative integer of bytes")


def sort_key(sort_by):
    """The order of a find's or a DB's answer; equal times and workspaces (device timing gives tiny kernels equal
    medians at the events' resolution) by solver id, so that both answers list them alike."""
    if sort_by == "workspace":
        return lambda s: (s.workspace_bytes, s.time_ms, s.solver_id)
    return lambda s: (s.time_ms, s.workspace_bytes, s.solver_id)


def result(sols, *, problem, t0, sort_by, mode, rank=None, **kw) -> FindResult:
    """The FindResult of ``sols`` sorted by ``sort_by``; ``rank`` (solver id -> place, a cost model's
    ranking of predicted solutions) replaces the time in the "time" order, the times staying as stated."""
    if rank is not None and sort_by == "time":
        sols.sort(key=lambda s: (rank[s.solver_id], s.workspace_bytes))
    else:
        sols.sort(key=sort_key(sort_by))
    return FindResult(sols, problem=problem, elapsed_ms=(time.perf_counter() - t0) * 1e3, mode=mode, **kw)


# -- candidates and the DBs' answers -----------------------------------------------------------

def candidates(problem: ProblemDescription, solver_ids=None, *, with_naive: bool = False) -> tuple[list[Solver], list[Failure]]:
    """The applicable solvers (all registered, or only ``solver_ids``), and why the named ones that
    do not apply were skipped. Without ``solver_ids`` the naive reference solvers
    (``Solver.is_reference``) are left out unless ``with_naive``, as MIOpen leaves its naive solvers
    out unless enabled: they verify the others and are far slower; they stay in where no other
    solver applies, so that such a problem still has a solution."""
    direction = problem.as_conv().direction
    if solver_ids is None and direction in ("F", "B"):
        # the FFT solvers' trust keys need cuFFT's version: its library loads beside the imports
        from miofind.solvers import fft_cufft
        fft_cufft.prefetch_version()
    if solver_ids is None:
        # the GEMM and Winograd solvers' trust keys need cuBLASLt's version: its library loads meanwhile
        from miofind import cublas
        cublas.prefetch_version()
    # only the problem's direction's solvers (their modules imported on first use): the others' first
    # guard would refuse it
    pool = all_solvers(direction) if solver_ids is None else [get_solver(s) for s in solver_ids]
    cands, skipped = [], []
    for s in pool:
        try:
            a = s.applicability(problem)
        except Exception as e:
            skipped.append(Failure(s.id, "applicability", f"{e.__class__.__name__}: {e}"))
            continue
        if a:
            cands.append(s)
        elif solver_ids is not None:
            skipped.append(Failure(s.id, "applicability", a.reason))
    if solver_ids is None and not with_naive and any(not s.is_reference for s in cands):
        cands = [s for s in cands if not s.is_reference]
    return cands, skipped


def recorded_times(problem: ProblemDescription, dbs, dev: DeviceInfo) -> dict[str, float] | None:
    """{solver id: time in ms} of this problem's records in the FindDB layers (user first, trusted or
    not), or None where they cannot be read. One lookup of the problem's key."""
    seen: dict[str, float] = {}
    try:
        for _, records in dbs.lookup(dev.db_name, problem.key()):
            for r in records:
                seen.setdefault(r.solver_id, r.time_ms)
    except Exception as e:
        log.debug("find %s: the DBs' records cannot be read (%s)", problem.key(), e)
        return None
    return seen


def expected_order(problem: ProblemDescription, dbs, dev: DeviceInfo, cands: list[Solver],
                   recorded: dict[str, float] | None = None) -> list[Solver]:
    """``cands`` ordered by expected time, likely winners first, so that a benchmark's early stop
    (``FIND_CUT_FACTOR``) bites: a record of this problem in either FindDB layer (trusted or not: it
    only orders; ``recorded``, else ``recorded_times``), else the per-solver cost model
    (``miofind.predict.model_time_ms``). Cheap: no search for a nearest problem."""
    from .predict import model_time_ms

    # ordering is a hint: DBs that cannot be read order by the model
    seen = (recorded_times(problem, dbs, dev) if recorded is None else recorded) or {}

    def expected(s: Solver) -> float:
        if s.id in seen:
            return seen[s.id]
        try:
            return model_time_ms(problem, s, dev.sm_count)
        except Exception:
            return math.inf

    return sorted(cands, key=expected)   # stable: ties keep registry order


def predicted_losers(problem: ProblemDescription, dbs, dev: DeviceInfo, cands: list[Solver], factor: float,
                     recorded: dict[str, float] | None) -> dict[str, float]:
    """{solver id: predicted time / the fastest candidate's} of the ``cands`` that the learned cost model
    shipped next to the system DB (``miofind.costmodel``) predicts at least ``factor`` times slower than the
    candidate it predicts fastest (or the solver's own lower factor, ``defer_factor``), among the candidates it
    was trained on (a solver added after it was trained is never deferred, and does not keep the others from
    being). {} where ``factor`` is 0, there is no such model, it does not cover the problem and two candidates, or
    ``recorded`` (``recorded_times``) is None or holds a time of a candidate (measured times order such a find, not
    predictions). CPU only."""
    return predicted_deferrals(problem, dbs, dev, cands, factor, 0, recorded)[0]


def predicted_deferrals(problem: ProblemDescription, dbs, dev: DeviceInfo, cands: list[Solver], factor: float,
                        keep: int, recorded: dict[str, float] | None) -> tuple[dict[str, float], dict[str, tuple]]:
    """(``predicted_losers``' dict, the surplus): with ``keep`` (MIOFIND_PREDICT_KEEP; 0: none), the surplus is
    {solver id: (its place among the candidates the model ranks, how many it ranks, predicted time / the fastest)} of
    the own (not cuDNN) candidates left after the losers beyond the ``keep`` the model predicts fastest, counting every
    cuDNN candidate among those kept (always measured: the reference a find must never lose to) and keeping at least
    one own candidate. Neither holds a candidate the model was not trained on. One prediction serves both. CPU only."""
    if not (factor or keep) or len(cands) < 2 or recorded is None:
        return {}, {}
    path = getattr(getattr(dbs, "system", None), "path", None)
    if path is None:
        return {}, {}
    from .costmodel import default_config, model_for_db

    ids = {s.id for s in cands}
    try:
        model = model_for_db(path)
        if model is None or ids & recorded.keys():
            return {}, {}
        cands = [s for s in cands if model.supports(problem, (s.id,))]
        if len(cands) < 2:
            return {}, {}
        by_default = model.config_basis == "default"
        asked = [(s, default_config(s, problem) if by_default or not s.tunable
                  else tuned_config(dbs, dev, problem, s) or default_config(s, problem)) for s in cands]
        times = model.predict_ms(problem, asked, dev.sm_count)
    except Exception as e:      # noqa: BLE001  a hint: without it every candidate is measured now
        log.debug("find %s: no prediction to defer by (%s: %s)", problem.key(), type(e).__name__, e)
        return {}, {}
    best = min(times)
    if not best > 0:
        return {}, {}
    losers = {s.id: t / best for s, t in zip(cands, times)
              if factor and t >= defer_factor(s, factor) * best}
    surplus: dict[str, tuple] = {}
    if keep:
        ranked = sorted(((t, i, s) for i, (s, t) in enumerate(zip(cands, times))), key=lambda x: x[:2])
        left = [(t, s) for t, _, s in ranked if s.id not in losers]
        own = [(t, s) for t, s in left if s.family != "cudnn"]
        room = max(keep - (len(left) - len(own)), 1)
        place = {s.id: i + 1 for i, (_, _, s) in enumerate(ranked)}
        surplus = {s.id: (place[s.id], len(ranked), t / best) for t, s in own[room:]}
    return losers, surplus


def defer_factor(solver: Solver, factor: float) -> float:
    """The predicted slowdown from which a find defers ``solver``: ``factor`` (MIOFIND_PREDICT_DEFER), or the solver's
    own ``defer_factor`` where lower."""
    return min(factor, solver.defer_factor) if solver.defer_factor else factor


SURPLUS_REASON = ("ranked {place} of {ranked} by the cost model (predicted {ratio:.2f}x the fastest candidate): a find "
                  "measures at most {keep} candidates at once, cuDNN's among them (MIOFIND_PREDICT_KEEP={keep}); "
                  "measured in the background once no find runs, then stored in the user FindDB; "
                  "MIOFIND_PREDICT_KEEP=0 or defer=False measures it now")
PREDICTED_REASON = ("predicted {ratio:.1f}x slower than the fastest candidate by the cost model (deferred from "
                    "{factor:g}x: MIOFIND_PREDICT_DEFER={env:g}{own}): measured in the background once no find runs, "
                    "then stored in the user FindDB; MIOFIND_PREDICT_DEFER=0 or defer=False measures it now")


def trusted_solutions(records, dev: DeviceInfo, problem, cands, verify, workspace_limit, vouched=None):
    """Solutions from one DB layer's records for the candidates whose record is trusted, and
    whether every candidate had one (the caller leaves out candidates with a recorded failure); a record whose
    non-default config is device-bound and was made on another GPU model (``trust.other_model``) is not offered, as
    one over the workspace limit is not;
    ``vouched``: a function giving the solver ids whose missing record makes the answer incomplete (None from it, or
    no function: every candidate's), asked only where an answer would be complete but for missing records."""
    recs = {r.solver_id: r for r in records}
    out, complete, missing = [], True, []
    for s in cands:
        r = recs.get(s.id)
        if r is None:
            missing.append(s.id)
            continue
        ok, _ = is_trusted(r, s, dev.cuda_version)
        if not ok or (verify and not r.verified) or (r.config is not None and not s.is_valid_config(problem.as_conv(), r.config)):
            complete = False
            continue
        if workspace_limit is not None and r.workspace_bytes > workspace_limit:
            continue
        if other_model(r, dev, s) and r.config is not None and r.config != s.default_config(problem.as_conv()):
            continue        # its config (a cuBLASLt heuristic place of another GPU model) runs another kernel here
        out.append(Solution(s.id, s.algorithm, r.time_ms, r.workspace_bytes, r.config, r.verified, problem,
                            source="db", max_error=r.max_error, time_q20_ms=r.time_q20_ms, time_q80_ms=r.time_q80_ms))
    if missing and complete:
        ids = vouched() if vouched is not None and out else None
        complete = ids is not None and ids.isdisjoint(missing)
    return out, complete


def system_solvers(dbs) -> frozenset[str] | None:
    """The solvers of which the system layer of ``dbs`` holds any record (what it vouches for), or None where
    that cannot be read (every candidate is then asked of its answer)."""
    db = dict(getattr(dbs, "layers", ())).get("system")
    try:
        return db.solver_ids() if db is not None else None
    except Exception as e:      # noqa: BLE001  an unreadable file: the strict rule
        log.debug("system FindDB's solvers not read: %s", e)
        return None


def from_db(dbs, dev: DeviceInfo, problem, cands, verify, workspace_limit):
    """(solutions, complete, layer): the first layer (user, then system) whose trusted records cover
    every candidate (the system layer: every candidate it holds any record of, ``system_solvers``: a solver
    added after the shipped DB was built does not make its answers incomplete, and is measured where it has
    none); else the first layer with any trusted record, complete=False; else ([], False, None)."""
    partial = None
    for layer, records in dbs.lookup(dev.db_name, problem.key()):
        sols, complete = trusted_solutions(records, dev, problem, cands, verify, workspace_limit,
                                           (lambda: system_solvers(dbs)) if layer == "system" else None)
        if complete and sols:
            return sols, True, layer
        if sols and partial is None:
            partial = (sols, False, layer)
    return partial or ([], False, None)


def db_answer(db, dev: DeviceInfo, problem, cands, verify, workspace_limit, *, readonly: bool = False,
              marks: bool = True):
    """(settled, (solutions, complete, layer)): ``settled_failures`` of the candidates, then ``from_db``
    of the others, from the user FindDB ``db`` over the system FindDB, as ``open_dbs(db, dev,
    readonly=readonly)`` would read them. Read through ``miofind.db.fastread`` (the stdlib sqlite3, no
    SQLAlchemy) wherever it can, else, and on any error there, through ``open_dbs``. ``marks``: as
    ``settled_failures``'."""
    def answer(dbs):
        settled = settled_failures(dbs, dev, problem, cands, marks) if cands else {}
        return settled, from_db(dbs, dev, problem, [s for s in cands if s.id not in settled], verify, workspace_limit)

    dbs = fastread.overlay(db, dev, readonly=readonly)
    if dbs is not None:
        try:
            return answer(dbs)
        except fastread.Unusable:
            pass
    return answer(open_dbs(db, dev, readonly=readonly))


def _fast_reads(db, dev: DeviceInfo):
    """The user FindDB over the system FindDB, read-only through ``miofind.db.fastread`` (no SQLAlchemy),
    or None where fastread cannot read them (``open_dbs`` then does)."""
    try:
        return fastread.overlay(db, dev, readonly=True)
    except Exception:
        return None


def store_dbs(db, dev: DeviceInfo, reads, writer) -> Overlay:
    """The DBs a miss stores in: ``writer`` (``fastwrite.writer(db)``, found when the miss was known: the user
    FindDB written through ``sqlite3``, no SQLAlchemy) over ``reads``' system layer; where it is None,
    ``open_dbs``'."""
    if writer is not None:
        return Overlay(writer, reads.system if reads is not None else None)
    return open_dbs(db, dev)


MARKED_REASON = ("an earlier find left it to the background and its process ended before it was measured (a mark in "
                 "the user FindDB): measured in the background once no find runs, then stored; --mode benchmark "
                 "measures it now")


def mark_deferred(db, dev: DeviceInfo, problem, deferred: dict) -> None:
    """Mark the solvers a find left to the background (``deferred``: {solver id: (solver, configs)}) in ``db``'s
    find failures as stage ``deferred``, under their trust keys: until their background job stores a record or
    records their failures (either replaces the mark), a later process's normal find answers from the DB without
    them (``settled_failures`` gives them as deferred) and measures them in its own background
    (``resume_deferred``), rather than finding the problem again."""
    rows = [FindFailure(dev.db_name, problem.key(), sid, None, "deferred", MARKED_REASON, kernel_hash=trust_key(s),
                        cuda_version=dev.cuda_version, package_version=__version__)
            for sid, (s, _) in deferred.items()]
    db.store_find_failures(dev.db_name, problem.key(), list(deferred), rows)


def store_unmarked(db, dev: DeviceInfo, problem, sol: Solution) -> None:
    """Store a solution a background job measured, and drop its solver's ``deferred`` mark (``mark_deferred``)."""
    store_solutions(db, dev, problem, [sol])
    db.store_find_failures(dev.db_name, problem.key(), [sol.solver_id], [])


def deferral(reads, dev: DeviceInfo, problem, solver: Solver) -> tuple:
    """(solver, configs) of a solver a find leaves to the background (``tiered.after_find``'s ``deferred``): its tuned
    PerfDB config, else its find configs, listed once no find runs."""
    tuned = tuned_config(reads, dev, problem, solver)
    return solver, [tuned] if tuned is not None else tiered.config_listing(problem, solver)


def resume_deferred(db, dev: DeviceInfo, problem, marked, budget_ms) -> None:
    """Leave the solvers ``marked`` deferred in the FindDB (``mark_deferred``) to this process's background, as a
    find leaves its deferred solvers (``tiered.after_find``): each one's tuned config or its find configs measured
    once no find runs, the fastest verified one stored (its failures recorded where none verified), the mark
    dropped either way. Nothing where the user FindDB takes no writes."""
    reads = _fast_reads(db, dev) or open_dbs(db, dev)
    dbs = store_dbs(db, dev, reads, fastwrite.writer(db))
    if dbs.user.readonly:
        return
    deferred = {s.id: deferral(reads, dev, problem, s) for s in marked}
    log.info("find %s: %s, deferred by an earlier process, measured in the background", problem.key(),
             ", ".join(sorted(deferred)))
    tiered.after_find(problem, [], (), budget_ms=budget_ms, deferred=deferred,
                      store=lambda sol: store_unmarked(dbs.user, dev, problem, sol),
                      fail=lambda solver, fs: record_failures(dbs.user, dev, problem, [solver], fs, set()))


def needs_no_compilation(problem, solver: Solver, config) -> bool:
    """Whether every kernel of the solver's solution is loaded or in the binary cache (or, unless
    MIOFIND_SPECIALIZE=sync, those of its generic build: miofind.tiered)."""
    try:
        sol = solver.get_solution(problem, config)
        return all(is_compiled(k) for k in sol.kernels) or tiered.generic_compiled(problem, solver, config)
    except Exception:
        return False


def find_configs(dbs, dev: DeviceInfo, problem, solver: Solver, limit: int | None = None) -> list:
    """The configs a find measures for a solver: its tuned PerfDB config and, where it differs, the
    default beside it (``beside_tuned``), else its find configs; the first ``limit`` of them when
    given (a find that leaves a solver's other configs to the background: ``Solver.configs_now``)."""
    cfg = tuned_config(dbs, dev, problem, solver)
    if cfg is not None:
        if limit == 1:      # the default is then among the configs the background measures (config_listing)
            return [cfg]
        return [cfg] + beside_tuned(problem, solver, cfg)
    return list(solver.find_configs(problem, limit)) if limit else list(solver.find_configs(problem))


def beside_tuned(problem, solver: Solver, tuned) -> list:
    """[the default config as the solver's find lists it] where a find measures it beside ``tuned``, else []: for
    an own solver whose tuned config is not its default (``_listed_default``; a cuDNN plan stands alone). A tuned
    config's lead can lie within another process's or machine's noise (session nov30g: a GEMM split 1.8% ahead of
    the default in its tune measured 2-7% behind it in fresh processes on two machines, and 26% behind in one find,
    which measured it alone), so a find that measures both never answers slower than an untuned find would. Not
    where the default's kernels would compile and the tuned config's would not."""
    first, keys = _listed_default(problem, solver)
    if not keys or config_key(tuned) in keys:
        return []
    # never a compilation the tuned config alone would not wait for (dynamic_hybrid's promise, a warm find's time)
    if not needs_no_compilation(problem, solver, first) and needs_no_compilation(problem, solver, tuned):
        return []
    return [first]


def default_keys(problem, solver: Solver) -> set[str]:
    """The config keys (as listed and as resolved) of the default that ``beside_tuned`` sets beside a tuned config of
    ``solver``: what a find's record of it carries where the default was the faster; empty where none is set."""
    return _listed_default(problem, solver)[1]


def _listed_default(problem, solver: Solver) -> tuple:
    """(the default config as an own solver's find lists it, {its config keys as listed and as resolved}), or (None,
    set()) for a cuDNN plan (listing plans costs a find more than measuring one) or where the solver names none."""
    if solver.family == "cudnn":
        return None, set()
    try:
        first = solver.find_configs(problem, 1)[0]
        default = solver.default_config(problem.as_conv()) if first is None else first
    except Exception:       # noqa: BLE001  no default to set beside it: the tuned config alone
        return None, set()
    return first, {config_key(first), config_key(default)}


# -- failures recorded by earlier finds --------------------------------------------------------

# stages a later find would fail at again with the same code; OOM is about what else ran
_RECORDED_STAGES = ("solution", "compile", "launch", "verify", "isolate", "cut")
_TRANSIENT = ("OutOfMemory", "out of memory", "OUT_OF_MEMORY", "ALLOC_FAILED", "MemoryAllocation",
              "not checked:", "timed out")


def prefetch_cudnn(problem, dbs, dev: DeviceInfo, cands, limited: bool) -> bool:
    """Start listing the cuDNN candidate's plans in a thread (``cudnn_base.prefetch``) where the find will list them
    (no tuned config stands in for them), its first ``configs_now`` where the find is ``limited``; whether it started.
    ``benchmark`` lists such a candidate's configs after the other candidates', so that the thread has their time."""
    if env.cudnn_prefetch() == "off":      # read first: a bad value is the user's error, named, not passed over
        return False
    for s in cands:
        if s.family != "cudnn" or tuned_config(dbs, dev, problem, s) is not None:
            continue
        from .solvers import cudnn_base
        try:
            return cudnn_base.prefetch(problem, s.configs_now if limited else None) is not None
        except Exception as e:      # noqa: BLE001  the find lists them itself then
            log.debug("find %s: no cuDNN prefetch (%s: %s)", problem.key(), e.__class__.__name__, e)
    return False


def prefetch_solvers(problem, cands) -> list[str]:
    """Each candidate's ``Solver.prefetch`` of ``problem`` (its library's plans made in a thread while the find reads
    the DBs and prepares the others); the ids of those that started one. A failure there is the solution's to meet."""
    started = []
    for s in cands:
        if type(s).prefetch is Solver.prefetch:
            continue
        try:
            if s.prefetch(problem):
                started.append(s.id)
        except ValueError:
            raise       # a bad environment value (MIOFIND_FFT_PREFETCH), the user's error, named
        except Exception as e:      # noqa: BLE001  the candidate's preparation meets it again and reports it
            log.debug("find %s: no prefetch for %s (%s: %s)", problem.key(), s.id, e.__class__.__name__, e)
    return started


def _prefetch_wait(problem) -> float:
    """``cudnn_base.prefetch_wait`` where that module is loaded (else no thread can run), in ms."""
    mod = sys.modules.get("miofind.solvers.cudnn_base")
    return mod.prefetch_wait(problem) if mod is not None else 0.0


def settled_failures(dbs, dev: DeviceInfo, problem, cands, marks: bool = True) -> dict[str, Failure]:
    """{solver id: Failure} of the candidates a find need not measure again: their latest find failed
    under their current trust key and this CUDA major version, for every config a find would measure
    now (the tuned PerfDB config and the default beside it, else the default; for a solver that lists its
    configs at find time, such as cuDNN's plans, any recorded one); or a find left them to the background and
    marked them (``mark_deferred``: a Failure of stage ``deferred``, measured in the background, not failed;
    ``marks`` False: such a candidate is not settled, as one without a record). Read from the user FindDB, then the
    system FindDB (whatever device string its rows carry, as its records are read): a DB built by finds and given as
    the system DB (a fleet's file, ``MIOFIND_SYSTEM_DB``) holds no record of the candidates its finds cut or failed,
    only these rows."""
    rows = dbs.find_failures(dev.db_name, problem.key())
    if not rows:
        return {}
    out = {}
    for s in cands:
        mine = [f for f in rows if f.solver_id == s.id and is_trusted(f, s, dev.cuda_version)[0]]
        if mine and all(f.stage == "deferred" for f in mine):
            # marked by a find that left it to the background (mark_deferred): not a failure, not measured yet
            if marks:
                out[s.id] = Failure(s.id, "deferred", MARKED_REASON)
            continue
        mine = [f for f in mine if f.stage != "deferred"]
        if not mine:
            continue
        tuned = tuned_config(dbs, dev, problem, s, report=False)
        if tuned is not None:
            need = {config_key(c) for c in [tuned] + beside_tuned(problem, s, tuned)}
        elif type(s).find_configs is Solver.find_configs:
            need = {config_key(None)}
        else:
            need = set()
        failed = {config_key(f.config): f for f in mine}
        if need <= set(failed):
            f = failed[min(need)] if need else mine[0]
            when = time.strftime("%Y-%m-%d", time.localtime(f.created_at))
            out[s.id] = Failure(s.id, f.stage, f"{f.reason} (recorded by a find on {when}; not measured again until "
                                "its code or CUDA version changes, or --mode benchmark)", config=f.config)
    return out


def record_failures(db, dev: DeviceInfo, problem, measured, failures, succeeded) -> None:
    """Store in ``db`` the failures of the solvers ``measured`` by a benchmark, replacing what their
    earlier finds left (a solver that succeeded now has none; one that failed and is not in
    ``succeeded`` loses its find record of this problem). Out-of-memory failures are left out."""
    keep = [FindFailure(dev.db_name, problem.key(), f.solver_id, f.config, f.stage, f.reason[:4000],
                        kernel_hash=trust_key(s), cuda_version=dev.cuda_version, package_version=__version__)
            for f in failures for s in measured
            if s.id == f.solver_id and f.stage in _RECORDED_STAGES and not any(t in f.reason for t in _TRANSIENT)]
    db.store_find_failures(dev.db_name, problem.key(), [s.id for s in measured], keep,
                           failed={f.solver_id for f in keep} - set(succeeded))


# -- the procedure -----------------------------------------------------------------------------

def find(problem: ProblemDescription, **options) -> FindResult:
    """The find of ``miofind.find_solutions`` on a resolved problem and checked mode and options (those of
    ``_find``), marked as a find for the background work of ``miofind.tiered``, which waits for it; its reads of
    the user FindDB share one connection (``fastread.one_connection``)."""
    with tiered.foreground(), fastread.one_connection():
        return _find(problem, **options)


def _find(problem: ProblemDescription, *, mode: str, sort_by: str = "time", workspace_limit=None, solvers=None,
          verify: bool = True, db=None, store: bool = True, warmup: int = 3, iters: int = 10, seed=None,
          time_budget_ms: float | None = FIND_TIME_BUDGET_MS, with_naive: bool = False,
          cut_factor: float = FIND_CUT_FACTOR, t0: float | None = None, defer: bool | None = None) -> FindResult:
    t0 = time.perf_counter() if t0 is None else t0
    laps, t_lap = {}, t0

    def lap(name):   # the parts of lookup_ms, each the time since the previous
        nonlocal t_lap
        now = time.perf_counter()
        laps[name] = (now - t_lap) * 1e3
        t_lap = now

    lap("entry")
    if sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by={sort_by!r}: expected 'time' or 'workspace'")
    check_workspace_limit(workspace_limit)
    dev = current_device()
    if mode != "benchmark":
        fastread.prefetch(db, dev)   # the FindDBs' checks run in a thread while the candidates are found
    lap("device")
    cands, failures = candidates(problem, solvers, with_naive=with_naive)
    lap("candidates")
    done = lambda sols, **kw: result(sols, problem=problem, t0=t0, sort_by=sort_by, mode=mode, **kw)  # noqa: E731

    dbs = None
    if mode != "benchmark" and cands:
        # a recorded failure also keeps the solver out of the DBs' answer (e.g. a system-DB record); a solver an
        # earlier find of this process deferred, still measured in the background, is not waited for
        waiting = tiered.deferred_pending(problem)
        known = [s for s in cands if s.id not in waiting]
        # candidates an earlier find left to the background, whose process ended before it measured them: marked in
        # the user FindDB (``mark_deferred``), they leave the answer complete and are measured in this process's
        # background, where it has one for this find; else they are candidates without a record
        resumable = store and workspace_limit is None and env.specialize() == "background" and \
            (solvers is None if defer is None else defer)
        settled, (sols, complete, layer) = db_answer(db, dev, problem, known, verify, workspace_limit,
                                                     marks=resumable or mode != "normal")
        marked = [s for s in known if s.id in settled and settled[s.id].stage == "deferred"]
        if sols and (complete or mode != "normal"):
            log.debug("find %s: answered from the %s FindDB", problem.key(), layer)
            if marked and resumable:
                resume_deferred(db, dev, problem, marked, time_budget_ms)
            pending = [Failure(sid, "deferred", DEFERRED_REASON) for sid in sorted(waiting)]
            return done(sols, source="db", failures=failures + list(settled.values()) + pending, db_layer=layer)
        settled = {sid: f for sid, f in settled.items() if f.stage != "deferred"}   # no answer: measured with the rest
        failures += settled.values()
        cands = [s for s in cands if s.id not in settled]
        if not cands:   # every candidate failed before, under the same code
            log.debug("find %s: every candidate failed in an earlier find", problem.key())
            return done([], source="db", failures=failures, db_layer="user")
        if mode == "fast":
            return predicted(problem, open_dbs(db, dev), dev, cands, workspace_limit, failures, done)
        if mode == "dynamic_hybrid":
            dbs = open_dbs(db, dev)
            ready = [s for s in cands if needs_no_compilation(problem, s, tuned_config(dbs, dev, problem, s))]
            failures += [Failure(s.id, "dynamic_hybrid", "needs a new compilation") for s in cands if s not in ready]
            if not ready:
                return predicted(problem, dbs, dev, cands, workspace_limit, failures, done)
            cands = ready
    lap("db")

    # A miss reads the DBs (order, tuned configs) through fastread where it can, and writes a SQLite user DB
    # through fastwrite (neither imports SQLAlchemy); where FindDB must write, it opens the FindDBs that store
    # after the benchmark, their import started now in a thread.
    if any(s.family in LT_FAMILIES for s in cands):
        from . import cublas
        # cuBLASLt's once-per-process set-up, and its first query of this problem's GEMM kinds, overlap the miss
        cublas.prefetch_lt(cublas.gemm_kinds(problem.dtype, problem.math))
    timing_prefetch = prefetch_solvers(problem, cands)
    lap("solver_prefetch")
    reads, writer = dbs, None
    if reads is None:
        reads = _fast_reads(db, dev)
        writer = fastwrite.writer(db)
        if store and writer is None:
            preload_store()
        if reads is None:
            reads = dbs = open_dbs(db, dev)
    # the candidates' tuned configs are asked for several times below: the problem's PerfDB records read once
    reads = PerfSnapshot.of(reads)
    lap("reads")
    # deferred: a find of every applicable solver may leave those that would wait for NVRTC to the background, and
    # (later) the configs of a solver after its first ``configs_now``, measured once no find runs
    deferred = {} if (solvers is None if defer is None else defer) else None
    limited = deferred is not None and store and workspace_limit is None and env.specialize() == "background"
    prefetched = prefetch_cudnn(problem, reads, dev, cands, limited)
    lap("cudnn_prefetch")
    recorded = recorded_times(problem, reads, dev)
    cands = expected_order(problem, reads, dev, cands, recorded)
    log.info("find %s: benchmarking %d candidate(s)", problem.key(), len(cands))
    lap("order")
    timing = {"lookup_ms": (t_lap - t0) * 1e3, "lookup_parts": laps, "cudnn_prefetch": prefetched,
              "solver_prefetch": timing_prefetch}
    later = {} if limited else None
    if later is not None:
        # candidates the cost model predicts clearly slower are measured in the background (as deferred ones)
        factor, keep = env.predict_defer(), env.predict_keep()
        losers, surplus = predicted_deferrals(problem, reads, dev, cands, factor, keep, recorded)
        for s in cands:
            if s.id in losers:
                own = defer_factor(s, factor)
                reason = PREDICTED_REASON.format(ratio=losers[s.id], factor=own, env=factor,
                                                 own=", the solver's own lower factor" if own < factor else "")
            elif s.id in surplus:
                place, ranked, ratio = surplus[s.id]
                reason = SURPLUS_REASON.format(place=place, ranked=ranked, ratio=ratio, keep=keep)
            else:
                continue
            deferred[s.id] = deferral(reads, dev, problem, s)
            failures.append(Failure(s.id, "deferred", reason))
        cands = [s for s in cands if s.id not in deferred]
        timing["predicted_deferred"] = len(losers)
        timing["surplus_deferred"] = len(surplus)

    def configs(s):
        limit = s.configs_now if later is not None else None
        cfgs = find_configs(reads, dev, problem, s, limit)
        if limit and (len(cfgs) >= limit or s.more_configs(problem, cfgs)):
            later[s.id] = (s, cfgs)
        return cfgs

    isolate = to_isolate(reads, dev, problem, cands)
    t_bench = time.perf_counter()
    timing["select_ms"] = (t_bench - t0) * 1e3 - timing["lookup_ms"]
    sols, bench_failures, ws_skipped = benchmark(problem, cands, workspace_limit, verify, warmup, iters, seed,
                                                 configs=configs, budget_ms=time_budget_ms, isolate=isolate,
                                                 cut_factor=cut_factor, timing=timing, deferred=deferred)
    if deferred and not any(not s.cut for s in sols):
        # nothing measured now verified: the deferred solvers are measured now after all
        log.info("find %s: no solution measured at once; measuring the deferred %s", problem.key(), sorted(deferred))
        more, more_failures, more_ws = benchmark(problem, [s for s, _ in deferred.values()], workspace_limit, verify,
                                                 warmup, iters, seed, configs=lambda s: _listed(deferred[s.id][1]),
                                                 budget_ms=time_budget_ms, isolate=isolate, cut_factor=cut_factor)
        sols += more
        bench_failures = [f for f in bench_failures if f.stage != "deferred"] + more_failures
        ws_skipped |= more_ws
        deferred = {}
    timing["benchmark_ms"] = (time.perf_counter() - t_bench) * 1e3
    if dbs is None:
        dbs = store_dbs(db, dev, reads, writer)
    cuts = [f for f in bench_failures if f.stage == "cut"]   # reported as Solution.cut; recorded in the DB
    bench_failures = [f for f in bench_failures if f.stage != "cut"]
    failures += bench_failures
    for f in bench_failures:
        log.info("find %s: %s failed at %s: %s", problem.key(), f.solver_id, f.stage, f.reason)
    t_store = time.perf_counter()
    full = [s for s in sols if not s.cut]
    # failures whose specialised build miofind.tiered may try in this process: never one that broke a
    # child's context (stage isolate) or left a sticky error; a deferred one goes to after_find apart
    retry = [f for f in bench_failures if f.stage not in ("isolate", "deferred") and not _sticky(f.reason)]
    stored = False
    if store and not ws_skipped and full:
        store_solutions(dbs.user, dev, problem, full)
        stored = True
    if store and not dbs.user.readonly:
        # solvers a workspace limit kept from running were not measured: their record stays as it was;
        # nor is a generic build's failure the solver's (miofind.tiered tries its specialised build)
        skipped = {f.solver_id for f in bench_failures if f.stage == "workspace"} - {s.solver_id for s in sols}
        skipped |= tiered.generic_failures(problem, retry)
        skipped |= set(deferred or ())      # measured later (miofind.tiered): their records stay as they are
        record_failures(dbs.user, dev, problem, [s for s in cands if s.id not in skipped],
                        bench_failures + cuts, {s.solver_id for s in full})
        if deferred and stored:
            mark_deferred(dbs.user, dev, problem, deferred)
    if later and stored:
        # each such solver's remaining configs, against its best verified time of this find
        best_now = {s.solver_id: s.time_ms for s in full}
        later = {sid: (s, cfgs, best_now.get(sid, math.inf)) for sid, (s, cfgs) in later.items()}
        timing["configs_later"] = len(later)
    else:
        later = None
    tiered.after_find(problem, full, retry, budget_ms=time_budget_ms,
                      store=lambda s: store_unmarked(dbs.user, dev, problem, s) if store else None,
                      deferred=deferred, later=later,
                      fail=lambda solver, fs: record_failures(dbs.user, dev, problem, [solver], fs, set())
                      if store and not dbs.user.readonly else None)
    timing["store_ms"] = (time.perf_counter() - t_store) * 1e3
    res = done(sols, source="find", failures=failures, stored=stored, timing=timing)
    timing["total_ms"] = res.elapsed_ms
    log.info("find %s: %.1f ms: lookup %.1f, compile %.1f (wall), reference %.1f%s, verify %.1f, timing %.1f, "
             "store %.1f; %d of %d timed candidate(s) cut", problem.key(), res.elapsed_ms, timing["lookup_ms"],
             timing.get("compile_ms", 0.0), timing.get("reference_ms", 0.0),
             " (shared)" if timing.get("reference_shared") else "", timing.get("verify_ms", 0.0),
             timing.get("timing_ms", 0.0), timing["store_ms"], sum(1 for c in timing.get("candidates", ()) if c["cut"]),
             len(timing.get("candidates", ())))
    return res


def immediate(problem: ProblemDescription, *, dev: DeviceInfo, db=None, workspace_limit=None, solvers=None,
              with_naive: bool = False, t0: float | None = None) -> FindResult:
    """Immediate mode (``miofind.get_solutions``): the DBs' trusted answer, else a prediction. A
    solver whose find failure is recorded under its current trust key and CUDA major
    (``settled_failures``) is offered by neither; the result's ``failures`` list it."""
    t0 = time.perf_counter() if t0 is None else t0
    check_workspace_limit(workspace_limit)
    fastread.prefetch(db, dev)   # the FindDBs' checks run in a thread while the candidates are found
    cands, failures = candidates(problem, solvers, with_naive=with_naive)
    done = lambda sols, **kw: result(sols, problem=problem, t0=t0, sort_by="time", mode="immediate", **kw)  # noqa: E731
    with fastread.one_connection():
        settled, (sols, _, layer) = db_answer(db, dev, problem, cands, False, workspace_limit, readonly=True)
        failures += settled.values()
        cands = [s for s in cands if s.id not in settled]
        if sols:
            return done(sols, source="db", failures=failures, db_layer=layer)
        return predicted(problem, open_dbs(db, dev, readonly=True), dev, cands, workspace_limit, failures, done)


def predicted(problem, dbs, dev: DeviceInfo, cands, workspace_limit, failures, done) -> FindResult:
    """Solutions with predicted times: from the learned cost model shipped next to the system DB
    (``miofind.costmodel``) where it covers the problem and the candidates it was trained on (in the model's
    ranking order, which need not be the order of its stated times; candidates it was not trained on, solvers
    added after it, follow in the order of their times predicted as below), else scaled from the nearest known
    problem, else a per-solver cost model."""
    from .costmodel import default_config, model_for_db

    model = model_for_db(dbs.system.path) if dbs.system is not None else None
    known = [s for s in cands if model is not None and model.supports(problem, [s.id])]
    cfgs = {s.id: tuned_config(dbs, dev, problem, s) if s.tunable else None for s in cands}
    if known:
        # a model trained on default configs is asked with them (the solutions keep the tuned ones)
        asked = {s.id: default_config(s, problem) for s in known} if model.config_basis == "default" else \
            {s.id: cfgs[s.id] or default_config(s, problem) for s in known}
        times, order = model.rank(problem, [(s, asked[s.id]) for s in known], dev.sm_count)
        times = dict(zip((s.id for s in known), times))
        rest = [s for s in cands if s not in known]
        if rest:
            times.update(_fallback_times(problem, dbs, dev, rest)[0])
        sols = _predicted_solutions(problem, cands, cfgs, times, workspace_limit, failures)
        # ordered as the model ranks them (its ranking forest's order, where it has one), not by the times
        ids = [known[i].id for i in order] + [s.id for s in sorted(rest, key=lambda s: times[s.id])]
        return done(sols, source="predicted", failures=failures, basis="model", model_version=model.version,
                    rank={sid: place for place, sid in enumerate(ids)})

    times, basis = _fallback_times(problem, dbs, dev, cands)
    sols = _predicted_solutions(problem, cands, cfgs, times, workspace_limit, failures)
    return done(sols, source="predicted", failures=failures, basis=basis)


def _fallback_times(problem, dbs, dev: DeviceInfo, cands) -> tuple[dict[str, float], str]:
    """({solver id: predicted ms}, basis) without the learned model: scaled by FLOPs from the nearest known problem
    over both DB layers (its trusted-or-not records), else the per-solver cost model."""
    from .predict import nearest_problem, predict

    best = None
    key = problem.key()
    for layer, db in dbs.layers:
        device = dev.db_name if layer == "user" else None
        near = nearest_problem(problem, db.problem_keys(device, suffix=key[key.rfind("-"):]))
        if near is not None and (best is None or near[1] < best[0][1]):
            best = (near, db.lookup(device, near[0]))
    near, recs = best if best else (None, [])
    pred = predict(problem, cands, near, recs, dev.sm_count)
    basis = "per-solver cost model"
    if near is not None:
        basis = f"nearest known problem {near[0]} (log2 distance {near[1]:.2f}), FLOP-scaled"
    return {s.id: pred[s.id].time_ms for s in cands}, basis


def _predicted_solutions(problem, cands, cfgs, times, workspace_limit, failures) -> list[Solution]:
    """Predicted Solutions of ``cands`` (their workspace at their config), within the workspace limit."""
    sols = []
    for s in cands:
        try:
            ws = s.workspace_bytes(problem, cfgs[s.id])
        except Exception as e:
            failures.append(Failure(s.id, "workspace", f"{e.__class__.__name__}: {e}"))
            continue
        if workspace_limit is not None and ws > workspace_limit:
            continue
        sols.append(Solution(s.id, s.algorithm, times[s.id], ws, cfgs[s.id], False, problem, source="predicted"))
    return sols


def store_solutions(db, dev: DeviceInfo, problem, sols) -> None:
    """Write measured solutions to a FindDB as records carrying the solvers' trust keys."""
    now = time.time()
    recs = [Record(device=dev.db_name, device_name=dev.name, problem_key=problem.key(), solver_id=s.solver_id,
                   algorithm=s.algorithm, time_ms=s.time_ms, workspace_bytes=s.workspace_bytes, config=s.config,
                   verified=s.verified, max_error=s.max_error if s.max_error is not None and math.isfinite(s.max_error) else None,
                   package_version=__version__, kernel_hash=trust_key(get_solver(s.solver_id)),
                   driver_version=dev.driver_version, cuda_version=dev.cuda_version, cupy_version=dev.cupy_version,
                   created_at=now, time_q20_ms=s.time_q20_ms, time_q80_ms=s.time_q80_ms,
                   build=tiered.measured_build(problem, s.solver_id))
            for s in sols]
    db.store(recs)


# -- benchmarking --------------------------------------------------------------------------------

def to_isolate(dbs, dev: DeviceInfo, problem, cands) -> frozenset[str]:
    """The candidates a benchmark first checks in a child process (``miofind.isolate``): for a risky
    problem, those without a trusted, verified record of it for this device in either FindDB layer;
    for any other problem none (and no DB read)."""
    from .isolate import is_risky

    if not cands or not is_risky(problem):
        return frozenset()
    safe = set()
    for _, records in dbs.lookup(dev.db_name, problem.key()):
        safe |= {s.solver_id for s in trusted_solutions(records, dev, problem, cands, True, None)[0]}
    return frozenset(s.id for s in cands if s.id not in safe)


def isolate_candidates(problem, todo, prepared, isolate) -> None:
    """Check the prepared (solver, config) pairs of ``todo`` whose solver is in ``isolate`` in child
    processes (``miofind.isolate.check_in_child``) and replace each that fails there by its Failure,
    logging one line per excluded candidate. ContextBrokenError when the reference itself broke."""
    from . import isolate as iso

    idx = [i for i, ((s, _), (sol, _)) in enumerate(zip(todo, prepared))
           if s.id in isolate and not isinstance(sol, Failure)]
    if not idx:
        return
    log.info("find %s: checking %d candidate(s) in a child process first", problem.key(), len(idx))
    # the config as the find lists it (None: the default), as its own failures record it
    checks = [(todo[i][0].id, todo[i][1], iso.solver_ref(todo[i][0])) for i in idx]
    res = iso.check_in_child(problem, checks, device=iso.current_device_id())
    if res.reference is not None:
        if names_sticky_error(res.reference):
            raise ContextBrokenError(f"the float64 reference broke the CUDA context of a child process on "
                                     f"{problem.key()}: {res.reference.splitlines()[0]}; nothing was measured")
        res.failures = [Failure(todo[i][0].id, "isolate", f"not checked: the float64 reference failed in the child "
                                f"process: {res.reference}", config=todo[i][1]) for i in idx]
    for i, f in zip(idx, res.failures):
        if f is not None:
            log.warning("find %s: %s (config %s) excluded by its check in a child process: %s: %s", problem.key(),
                        f.solver_id, f.config, f.stage, (f.reason.splitlines() or [""])[0][:300])
            prepared[i] = (f, None)


def _prepare(problem, solver, config=None, memo=None, first_runs=True):
    """(Solution + compiled invoker, or a Failure and None, and the wall time in ms). Runs in a
    worker thread. ``memo``: the find's ``tiered.Solutions``; ``first_runs``: run a ``first_run_loads``
    solver's invoker once (``first_run``)."""
    stage = "solution"
    t0 = time.perf_counter()
    try:
        sol = (memo or tiered.Solutions()).specialised(problem, solver, config)
        stage = "compile"
        # a generic build on a miss (miofind.tiered)
        sol, inv = tiered.prepare(problem, solver, config, sol, memo=memo)
        if first_runs and solver.first_run_loads:
            first_run(problem, sol, inv)
        return sol, inv, (time.perf_counter() - t0) * 1e3
    except Exception as e:
        return Failure(solver.id, stage, describe(e), config=config), None, (time.perf_counter() - t0) * 1e3


FIRST_RUN_BYTES = 256 << 20     # first_run's scratch buffers stay under this; a larger problem's first run is the find's
_first_run_streams: dict[int, int] = {}     # device -> the raw stream first_run runs on (one per device, kept)
_FIRST_RUN_LOCK = threading.Lock()


def first_run(problem, sol, inv) -> bool:
    """Run a prepared invoker once on scratch buffers (contents arbitrary: nothing reads the output) on a stream of
    its own, and wait for it: for a ``first_run_loads`` solver, whose first run in a process loads library code (a
    cuBLASLt kernel's module; bench_cold's 16-bit GEMM candidates verified in 2.6-5.1 ms against 0.1-0.7 ms for the
    others, session nov29c call 3), so that the find's preparation threads pay it beside the other candidates'
    preparation instead of its verification run. Whether it ran; False where the
    buffers would pass FIRST_RUN_BYTES or the run failed (the find's own runs then report what fails)."""
    from .device import runtime
    from .launch import scratch
    from .tensors import numpy_dtype

    p = problem.as_conv()
    item = numpy_dtype(p.dtype).itemsize
    size = max(item * math.prod(shape) for shape in p.io_shapes())      # one size for all three: a transposed W swaps
    if 3 * size + sol.workspace_bytes + item * p.k > FIRST_RUN_BYTES:
        return False
    try:
        rt = runtime()
        dev = rt.getDevice()
        # a raw stream: no CuPy import in a PyTorch process (scratch takes PyTorch's memory)
        with _FIRST_RUN_LOCK:
            stream = _first_run_streams.get(dev)
            if stream is None:
                stream = _first_run_streams[dev] = rt.streamCreateWithFlags(rt.streamNonBlocking)
        bufs = [scratch(size, stream) for _ in range(3)]
        work = scratch(sol.workspace_bytes, stream) if sol.workspace_bytes else (None, 0)
        bias = scratch(item * p.k, stream) if problem.fused and problem.bias else (None, 0)
        # the buffers are alike, so a transposed W's swapped activations need no care (invokers.call's, without its
        # CuPy import); a fused problem's invoker takes the bias pointer (0 without one) as a sixth argument
        inv(*(a for _, a in bufs), work[1], stream, *((bias[1],) if problem.fused else ()))
        rt.streamSynchronize(stream)
        return True
    except Exception as e:      # noqa: BLE001 - a warm-up only
        log.debug("%s %s: first run on scratch buffers failed: %s", sol.solver_id, problem.key(), e)
        return False


DEFERRED_REASON = ("its kernels are not compiled, nor a generic build of them: compiling in the background "
                   "(MIOFIND_SPECIALIZE=background), then verified, timed and stored in the user FindDB; "
                   "MIOFIND_SPECIALIZE=sync or defer=False measures it now")


def _listed(configs) -> list:
    """A deferred solver's configs: a list, or a callable giving it (``tiered.config_listing``)."""
    return configs() if callable(configs) else list(configs)


def _timed_reference(problem):
    t0 = time.perf_counter()
    return reference_invoker_for(problem), (time.perf_counter() - t0) * 1e3


PREPARE_THREADS = 8
_prepare_pool: ThreadPoolExecutor | None = None
_PREPARE_POOL_LOCK = threading.Lock()


def _preparers() -> ThreadPoolExecutor:
    """The preparation threads, kept for the process: a thread's library state (its cuBLAS handle, made at a GEMM
    candidate's first run) then serves every later find, where fresh threads made one per find and never freed it.
    Their tasks submit nothing to this pool, so callers in several threads (a find, the background specialisation,
    a tuner) share it without waiting on each other's tasks."""
    global _prepare_pool
    with _PREPARE_POOL_LOCK:
        if _prepare_pool is None:
            _prepare_pool = ThreadPoolExecutor(max_workers=PREPARE_THREADS, thread_name_prefix="miofind-prepare")
        return _prepare_pool


def _caller_device():
    """The caller's current CUDA device, or None where there is none (no GPU: nothing is compiled then)."""
    try:
        from .device import runtime

        return runtime().getDevice()
    except Exception:       # noqa: BLE001 - no CUDA, no device: the tasks report their own errors
        return None


def _on_device(dev, fn, *args, **kw):
    """``fn(*args, **kw)`` in a kept preparation thread, on the caller's device ``dev``."""
    if dev is not None:
        from .device import runtime

        rt = runtime()
        if rt.getDevice() != dev:
            rt.setDevice(dev)
    return fn(*args, **kw)


def prepare_all(problem, todo, *, verify=True, times=None, memo=None, first_runs=True):
    """Compile every (solver, config) of ``todo`` in parallel threads (``_preparers``, on the caller's
    device), and the reference when verifying; returns ([(ConvSolution, invoker) or (Failure, None)],
    reference invoker). With a ``times`` dict, fills ``times["candidates"]`` with each item's wall time in ms (they
    overlap) and, when verifying, ``times["reference_compile_ms"]``. ``first_runs``: the ``first_run_loads`` solvers'
    invokers run once on scratch buffers in their thread (a find's; a tuner's batch of configs does not)."""
    ex, dev = _preparers(), _caller_device()
    ref_future = ex.submit(_on_device, dev, _timed_reference, problem) if verify else None
    futures = [ex.submit(_on_device, dev, _prepare, problem, *sc, memo=memo, first_runs=first_runs) for sc in todo]
    prepared = [f.result() for f in futures]
    ref, ref_ms = ref_future.result() if ref_future else (None, 0.0)
    if times is not None:
        times["candidates"] = [ms for _, _, ms in prepared]
        if verify:
            times["reference_compile_ms"] = ref_ms
    return [(sol, inv) for sol, inv, _ in prepared], ref


def defer_candidates(problem, todo, isolate=frozenset(), *, memo=None) -> dict:
    """{solver id: (solver, [configs])} of the solvers in ``todo`` ([(solver, config)]) a find leaves to the
    background (``tiered.deferrable`` for every config of the solver, not checked in a child process),
    as long as another solver is measured at once; {} otherwise."""
    by_solver: dict[str, tuple] = {}
    for s, cfg in todo:
        by_solver.setdefault(s.id, (s, []))[1].append(cfg)
    out = {sid: (s, cfgs) for sid, (s, cfgs) in by_solver.items()
           if sid not in isolate and all(tiered.deferrable(problem, s, c, memo=memo) for c in cfgs)}
    return out if len(out) < len(by_solver) else {}


def benchmark(problem, cands, workspace_limit, verify, warmup, iters, seed, configs=None, budget_ms=None,
              isolate=frozenset(), cut_factor: float = 0.0, timing: dict | None = None, deferred: dict | None = None):
    """Verify and time every candidate (each of its ``configs(solver)``, default its find configs),
    in the order given; returns (the fastest Solution per solver, failures, whether a workspace limit
    skipped any). The solvers named in ``isolate`` are first run and verified in a child process
    (``isolate_candidates``); those that fail there are not run here.

    With ``cut_factor`` (early stop; 0: off), a candidate clearly slower than ``cut_factor`` x the
    best median so far stops being timed (``Harness.measure``'s ``cut_ms``), and a candidate's timing ends
    once its runs agree (``settle``: harness.SETTLE_SPREAD); a solver whose best
    solution is such a cut one is returned with ``Solution.cut`` set and also listed among the
    failures with stage ``cut`` (the config as listed, the figures in its reason), which
    ``find`` records in place of a FindDB record. ``timing``, a dict, receives the breakdown:
    ``compile_ms`` (wall time of the parallel compilation, ``reference_compile_ms`` its reference
    part), ``isolate_ms``, ``reference_ms`` (computing the float64 reference: its GPU time when it
    overlapped the candidates' preparation, with ``reference_wait_ms`` the host time then still spent
    waiting for it; 0 with ``reference_shared`` when a live harness of the problem had it), ``prefetch_wait_ms`` (the
    wait for a cuDNN prefetch thread's first runs of its plans, MIOFIND_CUDNN_PREFETCH=load),
    ``setup_ms`` (the harness: inputs made and the reference queued), ``configs_ms`` (listing each
    candidate's workspace and configs: cuDNN builds its plans there; ``configs_by_solver`` each solver's
    part), ``verify_ms``, ``timing_ms``
    (sums over the candidates), ``measure_ms`` (their measurements' wall time, of which verify and timing
    are parts), ``configs_stopped`` (configs not measured: their solver had a fully
    timed config and then CONFIG_STOP_AFTER_CUTS cut ones in a row) and ``candidates``: per measured
    (solver, config), its compile, verify and timing wall times, timed runs, median and whether it was
    cut.

    With a ``deferred`` dict, the solvers ``defer_candidates`` picks are not measured: they are listed among
    the failures with stage ``deferred`` and put in that dict for ``tiered.after_find``."""
    failures: list[Failure] = []
    ws_skipped = False
    todo = []
    timing = {} if timing is None else timing
    compile_times: dict = {}
    h = None
    t_setup = time.perf_counter()
    if verify and not isolate:
        # the harness's inputs and float64 reference are queued on the GPU first, so that they overlap
        # the host work of listing the candidates (``Harness.ready`` waits for them); a module load among
        # the candidates' preparation waits for them (CUDA's module load waits for every kernel in flight),
        # which still measured faster than queuing them after (bench/results/session-nov27h/, calls 5 and 6);
        # with child-process checks they wait, to leave the GPU's memory to the child
        _, ref_inv = prepare_all(problem, [], verify=True, times=compile_times)
        h, fresh = Harness.shared(problem, verify=verify, seed=seed, reference_invoker=ref_inv, wait=False)
    tc = time.perf_counter()
    timing["setup_ms"] = (tc - t_setup) * 1e3
    listed: dict[str, list] = {}
    by_solver = timing["configs_by_solver"] = {}
    # cuDNN's configs last: a find's thread may still be listing its plans (find.prefetch_cudnn)
    for s in sorted(cands, key=lambda s: s.family == "cudnn"):
        ts = time.perf_counter()
        # asked only under a limit: cuDNN's workspace of its default plan lists the heuristics' plans
        if workspace_limit is not None:
            ws = s.workspace_bytes(problem)
            if ws > workspace_limit:
                failures.append(Failure(s.id, "workspace", f"needs {ws} bytes of workspace, limit {workspace_limit}"))
                ws_skipped = True
                continue
        try:
            listed[s.id] = configs(s) if configs is not None else list(s.find_configs(problem))
        except Exception as e:
            failures.append(Failure(s.id, "solution", describe(e)))
        by_solver[s.id] = (time.perf_counter() - ts) * 1e3
    todo += [(s, cfg) for s in cands if s.id in listed for cfg in listed[s.id]]
    memo = tiered.Solutions()     # the solutions the deferral check makes, reused by the preparation
    if deferred is not None:
        now = defer_candidates(problem, todo, isolate, memo=memo)
        deferred.update(now)
        for sid, (s, cfgs) in now.items():
            failures += [Failure(sid, "deferred", DEFERRED_REASON, config=cfg) for cfg in cfgs]
        todo = [(s, cfg) for s, cfg in todo if s.id not in now]
        timing["deferred"] = len(now)

    t0 = time.perf_counter()
    timing["configs_ms"] = (t0 - tc) * 1e3
    # no first runs where candidates are checked in a child process first: a first run would run them here before it
    prepared, ref_prepared = prepare_all(problem, todo, verify=verify and h is None, times=compile_times, memo=memo,
                                         first_runs=not isolate)
    t1 = time.perf_counter()
    timing["compile_ms"] = (t1 - t0) * 1e3
    timing["reference_compile_ms"] = compile_times.get("reference_compile_ms", 0.0)
    if isolate:
        isolate_candidates(problem, todo, prepared, isolate)
    t2 = time.perf_counter()
    timing["isolate_ms"] = (t2 - t1) * 1e3
    if h is None:
        h, fresh = Harness.shared(problem, verify=verify, seed=seed, reference_invoker=ref_prepared)
    h.ready()
    # MIOFIND_CUDNN_PREFETCH=load: the thread's first runs of the cuDNN plans end before anything is timed
    timing["prefetch_wait_ms"] = _prefetch_wait(problem)
    timing["reference_ms"] = h.reference_ms if fresh else 0.0
    timing["reference_wait_ms"] = h.reference_wait_ms if fresh else 0.0
    timing["reference_shared"] = not fresh
    timing["verify_ms"] = timing["timing_ms"] = timing["measure_ms"] = 0.0
    timing["configs_stopped"] = 0
    per = timing["candidates"] = []
    sols, cut_listed = [], {}
    best_ms = math.inf
    solver_best: dict[str, float] = {}    # each solver's best fully timed median so far
    cuts_since: dict[str, int] = {}       # each solver's configs cut in a row since its last fully timed one
    for i, ((s, cfg), (sol, inv)) in enumerate(zip(todo, prepared)):
        if isinstance(sol, Failure):
            failures.append(sol)
            continue
        if workspace_limit is not None and sol.workspace_bytes > workspace_limit:
            failures.append(Failure(s.id, "workspace", f"config {sol.config} needs {sol.workspace_bytes} bytes of "
                                    f"workspace, limit {workspace_limit}"))
            ws_skipped = True
            continue
        own = solver_best.get(s.id)
        if cut_factor and own is not None and cuts_since.get(s.id, 0) >= CONFIG_STOP_AFTER_CUTS:
            timing["configs_stopped"] += 1
            continue
        cut_ms = cut_factor * best_ms if cut_factor and math.isfinite(best_ms) else None
        if cut_factor and own is not None and (cut_ms is None or CONFIG_CUT_FACTOR * own < cut_ms):
            cut_ms = CONFIG_CUT_FACTOR * own
        tm = time.perf_counter()
        try:
            m = h.measure(inv, h.workspace(sol.workspace_bytes), s.family, warmup, iters, budget_ms, cut_ms=cut_ms,
                          settle=SETTLE_SPREAD if cut_factor else None)
        except Exception as e:
            timing["measure_ms"] += (time.perf_counter() - tm) * 1e3
            h.release()
            stage, reason = failure_stage(e)
            if _sticky(reason):
                left = len(todo) - len(sols) - len(failures) - 1
                raise ContextBrokenError(
                    f"{s.id} (config {sol.config}) broke the CUDA context on {problem.key()}: {reason.splitlines()[0]}; "
                    f"{max(0, left)} candidate(s) were not measured and nothing was stored; restart the process "
                    f"(exclude it with --solver/solvers=)") from None
            failures.append(Failure(s.id, stage, reason, config=cfg))
            continue
        timing["measure_ms"] += (time.perf_counter() - tm) * 1e3
        h.release()
        timing["verify_ms"] += m.verify_ms
        timing["timing_ms"] += m.timing_ms
        ctimes = compile_times.get("candidates") or []
        per.append({"solver_id": s.id, "config": sol.config, "compile_ms": ctimes[i] if i < len(ctimes) else None,
                    "verify_ms": m.verify_ms, "timing_ms": m.timing_ms, "runs": m.runs, "time_ms": m.time_ms,
                    "cut": m.cut})
        out = Solution(s.id, s.algorithm, m.time_ms, sol.workspace_bytes, sol.config, verify and not m.cut, problem,
                       max_error=m.max_error, time_q20_ms=m.q20_ms, time_q80_ms=m.q80_ms, cut=m.cut, runs=m.runs)
        if m.cut:
            cut_listed[id(out)] = Failure(s.id, "cut", f"timing stopped early after {m.runs} timed run(s): "
                                          f"{m.time_ms:.4g} ms (median of those runs), at least {cut_factor:g}x the best "
                                          f"median so far ({best_ms:.4g} ms); not stored as a FindDB record", config=cfg)
        else:
            best_ms = min(best_ms, m.time_ms)
            solver_best[s.id] = min(solver_best.get(s.id, math.inf), m.time_ms)
        cuts_since[s.id] = cuts_since.get(s.id, 0) + 1 if m.cut else 0
        sols.append(out)
    # a solver that offered several configs (e.g. one per cuDNN plan) keeps its fastest, as MIOpen
    # keeps the best per solver; a fully timed config beats a cut one
    best: dict[str, Solution] = {}
    for sol in sols:
        if sol.solver_id not in best or (sol.cut, sol.time_ms) < (best[sol.solver_id].cut, best[sol.solver_id].time_ms):
            best[sol.solver_id] = sol
    failures += [cut_listed[id(b)] for b in best.values() if b.cut]
    return list(best.values()), failures, ws_skipped
