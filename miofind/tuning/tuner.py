"""Tuning: search a tunable solver's config space for one problem and keep the best in the PerfDB.

Per solver (MIOpen's search, as in MIOpen's src/solver/ searchable solvers and its GenericSearch): the space is the solver's valid configs minus
those recorded as failed under the same kernel sources; the configs a find measures beside the default
(the solver's ``find_configs``, e.g. the Hopper solvers' alternatives) are the first batch, so that a tuned
config is never slower than what a find measures; a strategy picks the next batches; each batch
compiles in parallel threads; each config is verified, then measured once (a short median); the
configs within ``near_best`` of the best are re-measured in full and the fastest is stored with the
default config's time beside it. A failed compile, launch or verification scores as infinite time
and is recorded, so a resumed tune never retries it. A trusted, valid PerfDB entry means the
solver is already tuned (unless ``retune``).

Per problem: tune every applicable tunable solver, then benchmark (as a benchmark-mode find does,
storing FindDB records) every candidate whose record is ``stale``: missing, untrusted, or measured
with another config than the PerfDB's tuned one. The other records stand, so tuning one solver
re-measures that solver, not all of them. A problem is done when no candidate is stale and the user
PerfDB has a trusted config for every solver this run tunes (or none is left to try); a killed tune
resumes at the first problem that is not, also when it died between storing a config and the find.
"""

from __future__ import annotations

import logging
import math
import random
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from .. import __version__
from ..db.findb import PerfRecord, TuneFailure, config_key
from ..db.system import Overlay
from ..harness import describe
from ..problem import ProblemDescription
from ..solver import Solver
from .strategies import STRATEGIES

INF = math.inf
_log = logging.getLogger(__name__)


@dataclass
class TuneOptions:
    strategy: str = "guided"
    max_configs: int | None = None      # per solver
    max_seconds: float | None = None    # per solver
    patience: int | None = None         # stop after this many configs without a better one
    near_best: float = 0.10             # re-measure configs within 10% of the best
    batch: int = 16                     # configs compiled in parallel per step
    seed: int | None = None
    retune: bool = False
    find: bool = True                   # after tuning, store the FindDB records of the problem
    solvers: tuple[str, ...] | None = None   # tune only these solver ids (find still runs them all)
    precompile: bool = True             # compile ahead in a process pool (tune_local / GpuMeasurer)
    first_batch: bool = False           # measure the first batch only (the find's and the stored configs), no search
    # the search (after the first batch) covers only configs whose value of each key is one of these (e.g. a new tile
    # shape: {"WGS": (3,)}); a config without the key does not match
    where: dict | None = None
    # a solver's own budget (Solver.tune_budget) widens max_configs and patience for it, never narrows them; False:
    # this budget for every solver (the CLI's --max-configs or --patience)
    solver_budgets: bool = True

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy={self.strategy!r}: expected one of {', '.join(STRATEGIES)}")
        for name in ("max_configs", "patience"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{name}={v!r}: expected a positive integer")
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ValueError(f"max_seconds={self.max_seconds!r}: expected a positive number of seconds")
        if not isinstance(self.batch, int) or self.batch < 1:
            raise ValueError(f"batch={self.batch!r}: expected a positive integer")
        if self.solvers is not None:
            if isinstance(self.solvers, str) or not all(isinstance(x, str) for x in self.solvers):
                raise ValueError(f"solvers={self.solvers!r}: expected a list of solver ids")
            self.solvers = tuple(self.solvers)
        if self.where is not None:
            if not isinstance(self.where, dict) or not self.where:
                raise ValueError(f"where={self.where!r}: expected a mapping of config keys to allowed values")
            self.where = {str(k): tuple(v) if isinstance(v, (list, tuple, set, frozenset)) else (v,)
                          for k, v in self.where.items()}
            if any(not v for v in self.where.values()):
                raise ValueError(f"where={self.where!r}: every key needs at least one allowed value")

    def as_json(self) -> dict:
        return {k: getattr(self, k) for k in ("strategy", "max_configs", "max_seconds", "patience", "near_best",
                                              "batch", "seed", "retune", "find", "solvers", "precompile",
                                              "first_batch", "where", "solver_budgets")}

    def for_solver(self, solver: Solver) -> "TuneOptions":
        """The options a tuning of ``solver`` searches under: its ``tune_budget`` widens max_configs and patience where
        ``solver_budgets`` and the budget is not unlimited already."""
        b = getattr(solver, "tune_budget", None)
        if not (self.solver_budgets and b):
            return self
        mc, pat = b
        return replace(self, max_configs=None if self.max_configs is None else max(self.max_configs, mc),
                       patience=None if self.patience is None else max(self.patience, pat))


class Budget:
    """Configs, seconds and patience left to one solver's search. ``checks`` records each ``exhausted``
    question as (configs tried, seconds since the start): where a tighter budget would have stopped the same
    search (``replay.replay_trace``)."""

    def __init__(self, opts: TuneOptions, space_size: int) -> None:
        self.opts = opts
        self.batch = opts.batch
        self.t0 = time.monotonic()
        self.tried = 0
        self.since_best = 0
        self.best = INF
        self.space_size = space_size
        self.checks: list[tuple[int, float]] = []

    def note(self, times) -> None:
        for t in times:
            self.tried += 1
            if t < self.best:
                self.best, self.since_best = t, 0
            else:
                self.since_best += 1

    def room(self) -> int:
        """How many more configs the config budget allows (the whole space when it sets none)."""
        cap = self.space_size if self.opts.max_configs is None else min(self.space_size, self.opts.max_configs)
        return max(0, cap - self.tried)

    def exhausted(self) -> bool:
        o = self.opts
        secs = time.monotonic() - self.t0
        self.checks.append((self.tried, round(secs, 4)))
        return (self.tried >= self.space_size
                or (o.max_configs is not None and self.tried >= o.max_configs)
                or (o.max_seconds is not None and secs >= o.max_seconds)
                or (o.patience is not None and self.since_best >= o.patience))


@dataclass
class Outcome:
    """What tuning one solver on one problem did."""

    solver_id: str
    status: str                      # "tuned", "cached", "no valid config", "all failed"
    config: dict | None = None
    time_ms: float | None = None
    default_time_ms: float | None = None
    tried: int = 0
    failed: int = 0
    seconds: float = 0.0
    # the search in order: (seconds since the solver's search started when the config's batch was measured, its
    # time in ms or None where it failed, the config), and the budget's stop questions (Budget.checks); the final
    # re-measure of the near-best configs is not in it
    trace: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    # the budget the search ran under (TuneOptions.for_solver): max_configs, patience, max_seconds
    budget: dict = field(default_factory=dict)


@dataclass
class ProblemOutcome:
    key: str
    status: str                      # "done" (tuned now), "skipped" (already done), "failed"
    solvers: list[Outcome] = field(default_factory=list)
    solutions: int = 0
    error: str = ""
    seconds: float = 0.0


class GpuMeasurer:
    """Measures configs of one problem on the current GPU through the shared harness."""

    def __init__(self, problem: ProblemDescription, precompile: bool = True) -> None:
        self.problem = problem
        self.precompile = precompile
        self._harness = None

    def evaluate(self, solver: Solver, configs: list[dict], *, warmup: int = 1, iters: int = 3):
        """[(time_ms or inf, (stage, reason) or None)] per config, in order."""
        from ..find import prepare_all
        from ..results import Failure
        from ..device import current_device
        from ..harness import Harness, failure_stage
        from .precompile import precompile, solution_kernels

        if self.precompile and solver.family != "cudnn":
            precompile(solution_kernels(self.problem, solver, configs), current_device().arch)

        prepared, ref = prepare_all(self.problem, [(solver, c) for c in configs], verify=self._harness is None,
                                    first_runs=False)
        if self._harness is None:   # shared with the find that follows the tuning (Harness.shared)
            self._harness = Harness.shared(self.problem, verify=True, reference_invoker=ref)[0]
        h, out = self._harness, []
        for sol, inv in prepared:
            if isinstance(sol, Failure):
                out.append((INF, (sol.stage, sol.reason)))
                continue
            try:
                out.append((h.measure(inv, h.workspace(sol.workspace_bytes), solver.family, warmup, iters).time_ms,
                            None))
            except Exception as e:
                out.append((INF, failure_stage(e)))
        return out


def matches_where(config, where: dict) -> bool:
    """Whether ``config`` (a dict) has each key of ``where`` at one of its allowed values."""
    return isinstance(config, dict) and all(k in config and config[k] in vals for k, vals in where.items())


def parse_where(text: str) -> dict:
    """``KEY=V[|V...][,KEY=...]`` (integer values where they parse) -> {KEY: (V, ...)}; ValueError naming the
    part that does not."""
    out: dict = {}
    for part in filter(None, (x.strip() for x in text.split(","))):
        key, sep, vals = part.partition("=")
        if not sep or not key.strip() or not vals.strip():
            raise ValueError(f"where={text!r}: {part!r} is not KEY=VALUE[|VALUE...]")
        conv = []
        for v in vals.split("|"):
            v = v.strip()
            try:
                conv.append(int(v))
            except ValueError:
                conv.append(v)
        out[key.strip()] = tuple(conv)
    if not out:
        raise ValueError(f"where={text!r}: no KEY=VALUE given")
    return out


def config_space(problem: ProblemDescription, solver: Solver, failed=frozenset()) -> list[dict]:
    """The solver's valid configs on ``problem`` whose ``config_key`` is not in ``failed``, each once,
    the default first: the space a strategy searches."""
    conv = problem.as_conv()
    default = solver.default_config(conv)
    seen, space = set(), []
    for c in ([default] if default else []) + list(solver.config_space(conv)):
        k = config_key(c)
        if k in seen or k in failed or not solver.is_valid_config(conv, c):
            continue
        seen.add(k)
        space.append(c)
    return space


class Tuner:
    """Tunes problems on one device into ``dbs.user`` (reading tuned configs from both layers).
    ``measurer(problem)`` times configs (GpuMeasurer); ``finder(problem, solver_ids)`` benchmarks
    those candidates and stores their FindDB records (a benchmark-mode find restricted to them)."""

    def __init__(self, dbs: Overlay, dev, options: TuneOptions | None = None, *,
                 measurer: Callable[[ProblemDescription], object] | None = None,
                 finder: Callable[[ProblemDescription, list[str]], object] | None = None,
                 on_event: Callable[[str], None] | None = None) -> None:
        self.dbs, self.dev = dbs, dev
        self.opts = options or TuneOptions()
        self.measurer = measurer or (lambda p: GpuMeasurer(p, self.opts.precompile))
        self.finder = finder or self._find
        self.on_event = on_event or (lambda msg: None)
        self.rng = random.Random(self.opts.seed)

    # -- per problem --------------------------------------------------------------------------
    def candidates(self, problem: ProblemDescription) -> list[Solver]:
        """The problem's find candidates, the naive reference solvers left out (as in a find)."""
        from ..find import candidates
        return candidates(problem, None, with_naive=False)[0]

    def to_tune(self, solver: Solver) -> bool:
        """Whether this run tunes ``solver`` (a candidate of the problem)."""
        # cuDNN's plans are already searched by every find (several per find); tuning them only when
        # asked for by id
        wanted = solver.id in self.opts.solvers if self.opts.solvers is not None else solver.family != "cudnn"
        return solver.tunable and wanted

    def is_done(self, problem: ProblemDescription) -> bool:
        """Whether no candidate of the problem is ``stale`` (when this run finds) and every solver this
        run tunes is ``settled``. (Find records alone, e.g. from ``--no-tune``, do not make a problem
        tuned; a config stored by a run killed before its find does not make it found.)"""
        cands = self.candidates(problem)
        if not cands:
            return True
        if self.opts.find and self.stale(problem, cands):
            return False
        return all(self.settled(problem, s) for s in cands if self.to_tune(s))

    def stale(self, problem: ProblemDescription, cands: list[Solver] | None = None) -> list[Solver]:
        """The candidates a find must benchmark: no trusted, verified user FindDB record, or a record
        measured with another config than the tuned one find would use now, except the default that a find
        measured beside it (``find.beside_tuned``: the record holds the faster), stored after that config."""
        from ..find import default_keys, trusted_solutions
        from ..trust import tuned_record

        cands = self.candidates(problem) if cands is None else cands
        recs = {r.solver_id: r for r in self.dbs.user.lookup(self.dev.db_name, problem.key())}
        out = []
        for s in cands:
            r = recs.get(s.id)
            _, trusted = trusted_solutions([r] if r else [], self.dev, problem, [s], True, None)
            tuned = tuned_record(self.dbs, self.dev, problem, s, report=False) if trusted else None
            if not trusted or (tuned is not None and config_key(r.config) != config_key(tuned.config)
                               and not (config_key(r.config) in default_keys(problem, s)
                                        and r.created_at >= tuned.created_at)):
                out.append(s)
        return out

    def settled(self, problem: ProblemDescription, solver: Solver) -> bool:
        """Whether tuning ``solver`` again would be a repeat: it has a trusted config, or no config is
        left to try, or as many configs as one run may try have failed (a solver whose every config
        fails must not keep a problem from being done). A stale entry is reported by ``tune_solver``,
        which acts on it, not here."""
        if self.cached(problem, solver, report=False) is not None:
            return True
        space, failed = self.space(problem, solver)
        mc = self.opts.for_solver(solver).max_configs
        return not space or (mc is not None and len(failed) >= mc)

    def tune_problem(self, problem: ProblemDescription) -> ProblemOutcome:
        t0 = time.monotonic()
        key = problem.key()
        if not self.opts.retune and self.is_done(problem):
            _log.info("%s: already tuned and found, skipped", key)
            return ProblemOutcome(key, "skipped")
        _log.info("tuning %s", key)
        out = ProblemOutcome(key, "done")
        try:
            m = self.measurer(problem)
            cands = self.candidates(problem)
            for s in cands:
                if self.to_tune(s):
                    self.on_event(f"{s.id} {key}")
                    out.solvers.append(self.tune_solver(problem, s, m))
            if self.opts.find:
                self.on_event(f"find {key}")
                todo = self.stale(problem, cands)
                if todo:
                    self.finder(problem, [s.id for s in todo])
                out.solutions = len(cands) - len(self.stale(problem, cands))
                if not out.solutions:
                    out.status, out.error = "failed", "no solver produced a verified solution"
        except Exception as e:
            out.status, out.error = "failed", describe(e)
        out.seconds = time.monotonic() - t0
        if out.status == "failed":
            _log.warning("%s: tuning failed after %.1f s: %s", key, out.seconds, out.error)
        else:
            _log.info("%s: %d solution(s) after %.1f s", key, out.solutions, out.seconds)
        return out

    def _find(self, problem: ProblemDescription, solver_ids: list[str]) -> None:
        from ..api import find_solutions
        # every candidate timed fully (no early stop): tuning writes complete records
        find_solutions(problem, mode="benchmark", db=self.dbs, solvers=solver_ids, cut_factor=0)

    # -- per solver ---------------------------------------------------------------------------
    def _trust_key(self, solver: Solver) -> str:
        from ..trust import trust_key
        return trust_key(solver)

    def cached(self, problem: ProblemDescription, solver: Solver, *, report: bool = True) -> PerfRecord | None:
        """The user PerfDB entry if trusted and still valid (a stale one is not used; it is reported
        unless ``report`` is False)."""
        from ..trust import first_trusted_perf

        recs = self.dbs.user.lookup_perf(self.dev.db_name, problem.key(), solver.id)
        return first_trusted_perf(recs, self.dev, problem, solver, where="user PerfDB" if report else None,
                                  consequence="re-tuning")

    def space(self, problem: ProblemDescription, solver: Solver) -> tuple[list[dict], set[str]]:
        """The valid configs not recorded as failed (the default first), and the keys of those that failed before."""
        khash = self._trust_key(solver)
        failed = {config_key(f.config) for f in self.dbs.user.failures(self.dev.db_name, problem.key(), solver.id)
                  if f.kernel_hash == khash}
        return config_space(problem, solver, failed), failed

    def prior_configs(self, problem: ProblemDescription, solver: Solver) -> list[dict]:
        """The PerfDB configs stored for ``solver`` on ``problem`` (user and system DB, whatever their trust key), as
        the solver reads them now (``legacy_config``)."""
        out = []
        try:
            for _, recs in self.dbs.lookup_perf(self.dev.db_name, problem.key(), solver.id):
                for r in recs:
                    c = r.config
                    if isinstance(c, dict) and hasattr(solver, "legacy_config"):
                        c = solver.legacy_config(c)
                    if isinstance(c, dict) and c:
                        out.append(dict(c))
        except Exception as e:      # a PerfDB that cannot be read only loses the seeds
            _log.debug("%s %s: stored configs not read: %s", solver.id, problem.key(), e)
        return out

    def retune_stored(self, problem: ProblemDescription, solver: Solver, measurer) -> Outcome | None:
        """Where the PerfDB holds configs for ``solver`` on ``problem`` under any trust key (e.g. tuned for an earlier
        build of its kernel, so no find uses them now): a tuning of its first batch only (the solver's find configs
        and those stored ones), storing the best under the current trust key. A re-measure of a solver's records
        after its kernel changed (``scripts/add-solver-records --keep-tuned``) then keeps what tuning found. None, measuring nothing, where nothing is stored or the solver is not tunable."""
        prior = self.prior_configs(problem, solver) if solver.tunable else []
        if not prior:
            return None
        saved = self.opts
        self.opts = replace(saved, retune=True, first_batch=True, max_configs=None, patience=None, max_seconds=None)
        try:
            return self.tune_solver(problem, solver, measurer)
        finally:
            self.opts = saved

    def tune_solver(self, problem: ProblemDescription, solver: Solver, measurer) -> Outcome:
        t0 = time.monotonic()
        if not self.opts.retune:
            hit = self.cached(problem, solver)
            if hit is not None:
                _log.debug("%s %s: tuned config in the user PerfDB: %s", solver.id, problem.key(), hit.config)
                return Outcome(solver.id, "cached", hit.config, hit.time_ms, hit.default_time_ms)
        space, failed_keys = self.space(problem, solver)
        failed_before = len(failed_keys)
        if not space:
            _log.info("%s %s: no valid config left to try (%d failed before)", solver.id, problem.key(), failed_before)
            return Outcome(solver.id, "no valid config", failed=failed_before)
        opts = self.opts.for_solver(solver)
        _log.debug("%s %s: %d config(s) to search, strategy %s, at most %s configs, patience %s%s", solver.id,
                   problem.key(), len(space), opts.strategy, opts.max_configs, opts.patience,
                   " (the solver's own budget)" if opts is not self.opts else "")
        conv = problem.as_conv()
        default = solver.default_config(conv)
        results: dict[str, tuple[dict, float]] = {}
        budget = Budget(opts, len(space))
        ran = {"max_configs": opts.max_configs, "patience": opts.patience, "max_seconds": opts.max_seconds}
        khash, dev, key = self._trust_key(solver), self.dev, problem.key()

        trace: list = []

        def evaluate(batch):
            batch = batch[:budget.room()]
            got = measurer.evaluate(solver, batch) if batch else []
            times, fails = [], []
            secs = round(time.monotonic() - budget.t0, 4)
            for cfg, (t, why) in zip(batch, got):
                results[config_key(cfg)] = (cfg, t)
                trace.append((secs, t if t < INF else None, dict(cfg)))
                times.append(t)
                if why is not None:
                    fails.append(TuneFailure(dev.db_name, key, solver.id, cfg, why[0], why[1][:4000], khash))
            if fails:
                self.dbs.user.store_failures(fails)
            budget.note(times)
            return times

        # the configs a find of the problem measures beside the default (find_configs: a solver's alternatives) are
        # measured first, so that a tuned config is never slower than what a find measures, and so are the configs
        # stored for it before (a re-tune never ends on a config slower than the one it replaces, even one tuned for
        # an earlier build of the kernel); the strategy searches the rest (cuDNN's find configs are its first plans,
        # already the start of its space)
        valid = {config_key(c) for c in space}
        first = []
        if solver.family != "cudnn":
            finds = [c for c in solver.find_configs(conv) if c and config_key(c) in valid]
            prior = [c for c in self.prior_configs(problem, solver) if config_key(c) not in failed_keys
                     and solver.is_valid_config(conv, c)]        # valid, if outside the space a tuning enumerates
            seen: set[str] = set()
            for c in finds + prior:
                if config_key(c) not in seen:
                    seen.add(config_key(c))
                    first.append(c)
        if first:
            evaluate(first)
            seeds = {config_key(c) for c in first}
            space = [c for c in space if config_key(c) not in seeds]
        if self.opts.where:
            space = [c for c in space if matches_where(c, self.opts.where)]
        if space and not budget.exhausted() and not self.opts.first_batch:
            STRATEGIES[self.opts.strategy](space, default, evaluate, budget, self.rng, problem=problem, solver=solver,
                                           dbs=self.dbs, sm_count=dev.sm_count)
        ok = sorted((t, k) for k, (_, t) in results.items() if t < INF)
        nfail = sum(1 for _, t in results.values() if t == INF)
        if not ok:
            _log.info("%s %s: all %d config(s) tried failed", solver.id, key, len(results))
            return Outcome(solver.id, "all failed", tried=len(results), failed=nfail + failed_before,
                           seconds=time.monotonic() - t0, trace=trace, checks=budget.checks, budget=ran)
        best_t = ok[0][0]
        near = [results[k][0] for t, k in ok if t <= best_t * (1 + self.opts.near_best)]
        dk = config_key(default) if default else None
        if dk in results and results[dk][1] < INF and results[dk][0] not in near:
            near.append(results[dk][0])  # the default is re-measured alongside, for default_time_ms
        final = measurer.evaluate(solver, near, warmup=3, iters=10)
        timed = [(t, config_key(c), c) for c, (t, _) in zip(near, final) if t < INF]
        default_t = next((t for t, k, _ in timed if k == dk), None)
        if not timed:
            _log.info("%s %s: every near-best config failed when measured again", solver.id, key)
            return Outcome(solver.id, "all failed", tried=len(results), failed=nfail + failed_before,
                           seconds=time.monotonic() - t0, trace=trace, checks=budget.checks, budget=ran)
        t, _, cfg = min(timed, key=lambda x: x[0])
        secs = time.monotonic() - t0
        self.dbs.user.store_perf([PerfRecord(
            device=dev.db_name, problem_key=key, solver_id=solver.id, config=cfg, time_ms=t,
            default_time_ms=default_t, strategy=self.opts.strategy, configs_tried=len(results), tune_seconds=secs,
            device_name=dev.name, package_version=__version__, kernel_hash=khash, cuda_version=dev.cuda_version)])
        _log.info("%s %s: tuned %s, %.4f ms (default %s) after %d config(s), %d failed, %.1f s", solver.id, key, cfg,
                  t, "n/a" if default_t is None else f"{default_t:.4f} ms", len(results), nfail, secs)
        return Outcome(solver.id, "tuned", cfg, t, default_t, len(results), nfail, secs, trace, budget.checks, ran)
