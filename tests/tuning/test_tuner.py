"""The tuner on the CPU: strategies, budgets, PerfDB entries, failed configs, resume, stale configs."""

from __future__ import annotations

import math
import random
import warnings
from dataclasses import replace

import pytest

from fakes import DEV, FakeMeasurer, fake_finder, fake_time
from miofind.db import FindDB, FindDBWarning
from miofind.db.findb import config_key
from miofind.db.system import Overlay
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.tuning import Budget, Tuner, TuneOptions
from miofind.tuning.strategies import STRATEGIES

P = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
IGEMM = get_solver("ConvImplicitGemmFwd")


@pytest.fixture
def dbs(tmp_path):
    with FindDB(str(tmp_path / "user.sqlite")) as user:
        yield Overlay(user)


def tuner(dbs, **kw):
    FakeMeasurer.calls = []
    return Tuner(dbs, DEV, TuneOptions(**kw), measurer=FakeMeasurer, finder=fake_finder(dbs))


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_strategies_respect_budget_and_never_repeat(strategy):
    space = [{"a": a, "b": b} for a in (1, 2, 4, 8) for b in (16, 32, 64)]
    seen = []

    def evaluate(batch):
        seen.extend(map(str, batch))
        return [abs(c["a"] - 4) + abs(c["b"] - 32) / 16 for c in batch]

    budget = Budget(TuneOptions(max_configs=7, batch=3), len(space))
    STRATEGIES[strategy](space, space[0], lambda b: (lambda t: (budget.note(t), t)[1])(evaluate(b)), budget,
                         random.Random(0))
    assert len(seen) == len(set(seen)) and 1 <= len(seen) <= 7 + 2  # a started batch may finish
    assert seen[0] == str(space[0])


def test_exhaustive_finds_the_optimum():
    space = [{"a": a} for a in range(20)]
    best = []
    budget = Budget(TuneOptions(batch=4), len(space))

    def evaluate(batch):
        t = [abs(c["a"] - 13) for c in batch]
        best.extend(zip(t, batch))
        budget.note(t)
        return t

    STRATEGIES["exhaustive"](space, space[0], evaluate, budget, random.Random(0))
    assert min(best, key=lambda x: x[0])[1] == {"a": 13} and len(best) == 20


def test_patience_stops_a_search():
    space = [{"a": a} for a in range(100)]
    budget = Budget(TuneOptions(patience=5, batch=1), len(space))
    n = []

    def evaluate(batch):
        n.extend(batch)
        t = [1.0 for _ in batch]
        budget.note(t)
        return t

    STRATEGIES["random"](space, space[0], evaluate, budget, random.Random(1))
    assert len(n) == 6  # the first sets the best, five more without improvement


def test_tune_solver_stores_best_valid_config_and_failures(dbs):
    t = tuner(dbs, strategy="exhaustive")
    space, _ = t.space(P, IGEMM)
    out = t.tune_solver(P, IGEMM, FakeMeasurer(P))
    assert out.status == "tuned" and IGEMM.is_valid_config(P, out.config)
    measured = {str(c): fake_time(IGEMM.id, c) for _, c in FakeMeasurer.calls}
    assert out.config is not None and fake_time(IGEMM.id, out.config) == min(measured.values())
    (rec,) = dbs.user.lookup_perf(DEV.db_name, P.key(), IGEMM.id)
    assert rec.config == out.config and rec.configs_tried == out.tried and rec.strategy == "exhaustive"
    assert rec.default_time_ms == fake_time(IGEMM.id, IGEMM.default_config(P))
    fails = dbs.user.failures(DEV.db_name, P.key(), IGEMM.id)
    assert fails and all(math.isinf(fake_time(IGEMM.id, f.config)) for f in fails)
    assert len(fails) == sum(math.isinf(v) for v in measured.values())
    # failed configs leave the space of a later search
    space2, failed_before = t.space(P, IGEMM)
    assert failed_before == {config_key(f.config) for f in fails} and len(space2) == len(space) - len(fails)


def test_cached_entry_skips_and_stale_entry_is_retuned_with_warning(dbs):
    t = tuner(dbs, strategy="random", max_configs=6, seed=3)
    assert t.tune_solver(P, IGEMM, FakeMeasurer(P)).status == "tuned"
    FakeMeasurer.calls = []
    assert t.tune_solver(P, IGEMM, FakeMeasurer(P)).status == "cached" and FakeMeasurer.calls == []
    (rec,) = dbs.user.lookup_perf(DEV.db_name, P.key(), IGEMM.id)
    for stale in (replace(rec, kernel_hash="0" * 16), replace(rec, config={**rec.config, "BM": 7})):
        dbs.user.store_perf([stale])
        with pytest.warns(FindDBWarning, match="not trusted"):
            assert t.tune_solver(P, IGEMM, FakeMeasurer(P)).status == "tuned"


def test_stale_entry_is_reported_once_per_tune(dbs):
    t = tuner(dbs, strategy="random", max_configs=4, seed=1, solvers=(IGEMM.id,))
    assert t.tune_problem(P).status == "done"
    (rec,) = dbs.user.lookup_perf(DEV.db_name, P.key(), IGEMM.id)
    dbs.user.store_perf([replace(rec, kernel_hash="0" * 16)])
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        o = t.tune_problem(P)
    assert o.status == "done" and o.solvers[0].status == "tuned"
    assert [w.category for w in got] == [FindDBWarning] and "not trusted" in str(got[0].message)


def test_budget_max_configs(dbs):
    t = tuner(dbs, strategy="guided", max_configs=5, batch=2)
    out = t.tune_solver(P, IGEMM, FakeMeasurer(P))
    assert out.tried <= 6


def test_tune_problem_then_skip_when_done(dbs):
    t = tuner(dbs, strategy="random", max_configs=4, seed=1)
    o = t.tune_problem(P)
    assert o.status == "done" and o.solutions > 0
    assert {s.solver_id for s in o.solvers} >= {"ConvImplicitGemmFwd", "ConvDirectTiledFwd"}
    assert t.is_done(P)
    FakeMeasurer.calls = []
    assert t.tune_problem(P).status == "skipped" and FakeMeasurer.calls == []


def test_find_records_alone_do_not_make_a_problem_tuned(dbs):
    # a --no-tune run (find with default configs) stores complete find records; a later tune of the
    # implicit GEMM solver must still tune it, then skip the problem on resume
    assert tuner(dbs, solvers=()).tune_problem(P).status == "done"
    assert tuner(dbs, solvers=()).is_done(P)
    t = tuner(dbs, strategy="random", max_configs=4, seed=5, solvers=(IGEMM.id,))
    assert not t.is_done(P)
    o = t.tune_problem(P)
    assert o.status == "done" and [s.solver_id for s in o.solvers] == [IGEMM.id] and o.solvers[0].status == "tuned"
    assert t.is_done(P) and t.tune_problem(P).status == "skipped"
    # other tunable solvers, not asked for, stay untuned, so a tune of all of them is not done
    assert not tuner(dbs).is_done(P)


def test_find_after_tuning_benchmarks_only_the_retuned_solvers(dbs):
    # a --no-tune run finds every candidate; tuning implicit GEMM then re-measures that solver alone,
    # and its record carries the tuned config
    base = tuner(dbs, solvers=())
    assert base.tune_problem(P).status == "done"
    every = base.finder.calls[0]
    assert IGEMM.id in every and len(every) > 1
    t = tuner(dbs, strategy="random", max_configs=4, seed=5, solvers=(IGEMM.id,))
    assert [s.id for s in t.stale(P)] == []           # find records complete, config not yet tuned
    o = t.tune_problem(P)
    assert o.status == "done" and o.solutions == len(every)
    assert t.finder.calls == [[IGEMM.id]]
    (rec,) = [r for r in dbs.user.lookup(DEV.db_name, P.key()) if r.solver_id == IGEMM.id]
    assert rec.config == o.solvers[0].config
    assert t.stale(P) == [] and t.is_done(P)


def test_a_tune_killed_between_its_config_and_its_find_finds_on_resume(dbs):
    assert tuner(dbs, solvers=()).tune_problem(P).status == "done"
    t = tuner(dbs, strategy="random", max_configs=4, seed=3, solvers=(IGEMM.id,))
    out = t.tune_solver(P, IGEMM, FakeMeasurer(P))     # the PerfDB entry is stored; then the process dies
    assert out.config is not None
    assert [s.id for s in t.stale(P)] == [IGEMM.id] and not t.is_done(P)
    FakeMeasurer.calls = []
    o = t.tune_problem(P)
    assert o.status == "done" and FakeMeasurer.calls == []   # the config is not tuned again
    assert t.finder.calls == [[IGEMM.id]] and t.is_done(P)


def test_a_find_record_of_the_default_beside_a_tuned_config_is_not_stale(dbs):
    # a find measures the default beside the tuned config and keeps the faster: a record of the default stored after
    # the tuned config is that find's answer; one stored before it is not
    assert tuner(dbs, solvers=()).tune_problem(P).status == "done"
    t = tuner(dbs, strategy="random", max_configs=4, seed=3, solvers=(IGEMM.id,))
    out = t.tune_solver(P, IGEMM, FakeMeasurer(P))
    assert out.config != IGEMM.default_config(P.as_conv())
    (rec,) = [r for r in dbs.user.lookup(DEV.db_name, P.key()) if r.solver_id == IGEMM.id]
    assert rec.config in (None, IGEMM.default_config(P.as_conv())) and [s.id for s in t.stale(P)] == [IGEMM.id]
    (perf,) = dbs.user.lookup_perf(DEV.db_name, P.key(), IGEMM.id)
    dbs.user.store([replace(rec, created_at=perf.created_at + 1)])
    assert t.stale(P) == [] and t.is_done(P)


def test_an_untrusted_find_record_is_benchmarked_again(dbs):
    assert tuner(dbs, solvers=()).tune_problem(P).status == "done"
    recs = dbs.user.lookup(DEV.db_name, P.key())
    other = next(r for r in recs if r.solver_id != IGEMM.id)
    dbs.user.store([replace(other, kernel_hash="0" * 16)])   # its kernel source changed since
    t = tuner(dbs, solvers=())
    assert [s.id for s in t.stale(P)] == [other.solver_id] and not t.is_done(P)
    assert t.tune_problem(P).status == "done" and t.finder.calls == [[other.solver_id]]


@pytest.mark.parametrize("space, failed, max_configs, done", [
    ([], 5, None, True),           # nothing left to try
    ([{"BM": 64}], 3, 3, True),    # a run's whole budget failed
    ([{"BM": 64}], 2, 3, False),   # a run stopped before its budget was spent: try the rest
    ([{"BM": 64}], 9, None, False),
])
def test_a_solver_whose_configs_failed(dbs, monkeypatch, space, failed, max_configs, done):
    t = tuner(dbs, solvers=(IGEMM.id,), find=False, max_configs=max_configs)
    keys = {f"failed-{i}" for i in range(failed)}      # the keys of as many configs that failed before
    monkeypatch.setattr(Tuner, "space", lambda self, problem, solver: (space, keys))
    assert t.is_done(P) is done


def test_find_uses_the_tuned_config(dbs, monkeypatch):
    import miofind.find as find
    import miofind.trust as trust

    t = tuner(dbs, strategy="random", max_configs=4, seed=2)
    out = t.tune_solver(P, IGEMM, FakeMeasurer(P))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert trust.tuned_config(dbs, DEV, P, IGEMM) == out.config
        assert find.find_configs(dbs, DEV, P, IGEMM) == [out.config] + find.beside_tuned(P, IGEMM, out.config)
    # a config that no longer validates is ignored with a warning; find uses the default
    (rec,) = dbs.user.lookup_perf(DEV.db_name, P.key(), IGEMM.id)
    dbs.user.store_perf([replace(rec, config={"BM": 3})])
    with pytest.warns(FindDBWarning, match="no longer validates"):
        assert find.find_configs(dbs, DEV, P, IGEMM) == list(IGEMM.find_configs(P))


def test_options_are_validated():
    for kw in ({"strategy": "annealing"}, {"max_configs": 0}, {"patience": -1}, {"max_seconds": 0}, {"batch": 0}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            TuneOptions(**kw)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("max_configs", [1, 3, 5])
def test_config_budget_cuts_batches_short(dbs, strategy, max_configs):
    t = tuner(dbs, strategy=strategy, max_configs=max_configs, batch=4, seed=0)
    out = t.tune_solver(P, IGEMM, FakeMeasurer(P))
    measured_in_search = out.tried
    assert out.status in ("tuned", "all failed") and measured_in_search == max_configs


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_a_finds_alternatives_are_measured_first(dbs, strategy):
    """The configs a find measures beside the default (a solver's find_configs: the Hopper solvers' alternatives) are
    the tuner's first batch, whatever the strategy; the strategy then searches the rest, none measured twice."""
    wrw = get_solver("ConvImplicitGemmHopperWrw")
    p = ProblemDescription.make("W", n=32, c=512, k=512, in_size=(14, 14), filter_size=3, pads=1, layout="NHWC",
                                dtype="FP16")
    alts = [c for c in wrw.find_configs(p) if c]
    assert len(alts) == 3
    t = tuner(dbs, strategy=strategy, max_configs=8, seed=2, batch=4, solver_budgets=False)
    out = t.tune_solver(p, wrw, FakeMeasurer(p))
    measured = [c for _, c in FakeMeasurer.calls][:out.tried]      # after them: the best re-measured
    assert out.tried <= 8 and measured[:len(alts)] == alts
    assert len({str(sorted(c.items())) for c in measured}) == len(measured)
    ok = [fake_time(wrw.id, c) for c in alts if fake_time(wrw.id, c) < math.inf]
    assert not ok or fake_time(wrw.id, out.config) <= min(ok)


def test_a_retune_measures_the_stored_config_first(dbs):
    """A re-tune measures the config stored for the problem before (here one tuned for an earlier build of the kernel,
    written before a tunable existed: read as the solver reads it now) in its first batch, so that it never ends on a
    config slower than the one it replaces."""
    from miofind.db.findb import PerfRecord

    wrw = get_solver("ConvImplicitGemmHopperWrw")
    p = ProblemDescription.make("W", n=32, c=256, k=256, in_size=(14, 14), filter_size=3, pads=1, layout="NHWC",
                                dtype="FP16")
    old = {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 6, "SPLITK": 7, "CLUSTER": 1, "WSPEC": 1, "TMA": 1}
    assert wrw.is_valid_config(p, old) and old not in [c for c in wrw.find_configs(p) if c]
    dbs.user.store_perf([PerfRecord(device=DEV.db_name, problem_key=p.key(), solver_id=wrw.id, config=old, time_ms=0.02,
                                    default_time_ms=0.03, strategy="guided", configs_tried=9, tune_seconds=1.0,
                                    device_name=DEV.name, package_version="0", kernel_hash="an-earlier-build",
                                    cuda_version=DEV.cuda_version)])
    t = tuner(dbs, strategy="guided", max_configs=6, seed=1, batch=4, retune=True, solver_budgets=False)
    out = t.tune_solver(p, wrw, FakeMeasurer(p))
    first = [c for _, c in FakeMeasurer.calls][:4]
    assert wrw.legacy_config(old) in first and out.tried <= 6


def test_retune_stored_keeps_a_tuned_config_across_a_kernel_change(dbs):
    """After a kernel change (the stored config's trust key is an earlier build's), ``retune_stored`` measures the
    find's configs and the stored one, nothing more, and stores the best under the current trust key, where a find
    then reads it (``scripts/add-solver-records --keep-tuned``). With nothing stored it measures nothing."""
    from miofind.db.findb import PerfRecord
    from miofind.trust import trust_key, tuned_config

    fwd = get_solver("ConvImplicitGemmHopperFwd")
    p = ProblemDescription.make("F", n=32, c=512, k=512, in_size=(14, 14), filter_size=3, pads=1, layout="NHWC",
                                dtype="FP16")
    finds = [c for c in fwd.find_configs(p) if c]
    old = {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 6, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1}
    assert fwd.is_valid_config(p, old) and fwd.legacy_config(old) not in finds
    t = tuner(dbs, retune=False, max_configs=64, patience=24)
    assert t.retune_stored(p, fwd, FakeMeasurer(p)) is None and FakeMeasurer.calls == []
    dbs.user.store_perf([PerfRecord(device=DEV.db_name, problem_key=p.key(), solver_id=fwd.id, config=old, time_ms=0.02,
                                    default_time_ms=0.03, strategy="guided", configs_tried=9, tune_seconds=1.0,
                                    device_name=DEV.name, package_version="0", kernel_hash="an-earlier-build",
                                    cuda_version=DEV.cuda_version)])
    assert tuned_config(dbs, DEV, p, fwd, report=False) is None          # a find would measure the alternates alone
    out = t.retune_stored(p, fwd, FakeMeasurer(p))
    first = {config_key(c) for c in finds + [fwd.legacy_config(old)]}
    tried = {config_key(c) for _, c in FakeMeasurer.calls}
    assert out.status == "tuned" and out.tried <= len(first) and config_key(fwd.legacy_config(old)) in tried
    assert tried <= first | {config_key(fwd.default_config(p))}          # nothing beyond them (and the default)
    best = min(first, key=lambda k: fake_time(fwd.id, next(c for c in finds + [fwd.legacy_config(old)]
                                                               if config_key(c) == k)))
    assert config_key(tuned_config(dbs, DEV, p, fwd, report=False)) == best
    assert [r.kernel_hash for r in dbs.user.lookup_perf(DEV.db_name, p.key(), fwd.id)] == [trust_key(fwd)]
    assert t.opts.max_configs == 64 and t.opts.retune is False             # the run's own options are back


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_where_limits_the_search_to_matching_configs(dbs, strategy):
    """``where`` (``miofind tune --where WGS=3``): the find's configs are measured first as always, then the strategy
    searches only the configs with those values (here the Hopper W solver's three-warpgroup tiles)."""
    from miofind.tuning.tuner import matches_where, parse_where

    wrw = get_solver("ConvImplicitGemmHopperWrw")
    p = ProblemDescription.make("W", n=32, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1, layout="NHWC",
                                dtype="FP16")
    where = parse_where("WGS=3, STAGES=4|5")
    assert where == {"WGS": (3,), "STAGES": (4, 5)}
    alts = [c for c in wrw.find_configs(p) if c]
    t = tuner(dbs, strategy=strategy, max_configs=12, seed=3, batch=4, where=where)
    out = t.tune_solver(p, wrw, FakeMeasurer(p))
    measured = [c for _, c in FakeMeasurer.calls][:out.tried]
    assert measured[:len(alts)] == alts and len(measured) > len(alts)
    assert all(matches_where(c, where) for c in measured[len(alts):])
    assert not all(matches_where(c, where) for c in alts)
    assert TuneOptions(where={"WGS": [3]}).as_json()["where"] == {"WGS": (3,)}
    for bad in ("WGS", "=3", "WGS=", ""):
        with pytest.raises(ValueError, match="where="):
            parse_where(bad)
    with pytest.raises(ValueError, match="where="):
        TuneOptions(where={"WGS": []})


@pytest.mark.parametrize("strategy", ["guided", "random", "exhaustive"])
def test_a_trace_replays_a_tighter_budget_as_that_run_would_stop(tmp_path, strategy):
    """A tune's trace (every config it measured, in order) and its budget's stop questions answer where a tighter
    budget would have stopped: the same configs, the same best, as a run with that budget and seed."""
    from miofind.tuning.replay import replay_trace

    wrw = get_solver("ConvImplicitGemmHopperWrw")
    p = ProblemDescription.make("W", n=32, c=256, k=256, in_size=(28, 28), filter_size=3, pads=1, layout="NHWC",
                                dtype="FP16")

    def run(name, **kw):
        with FindDB(str(tmp_path / f"{name}.sqlite")) as user:
            t = tuner(Overlay(user), strategy=strategy, seed=3, batch=16, solver_budgets=False, **kw)
            out = t.tune_solver(p, wrw, FakeMeasurer(p))
            return out, [c for _, c in FakeMeasurer.calls][:out.tried]

    loose, measured = run("loose", patience=60, max_configs=150)
    assert len(loose.trace) == loose.tried == len(measured) and [e[2] for e in loose.trace] == measured
    assert [e[1] for e in loose.trace] == [None if math.isinf(t) else t for t in (fake_time(wrw.id, c)
                                                                                   for c in measured)]
    assert loose.checks and all(a[0] <= b[0] for a, b in zip(loose.checks, loose.checks[1:]))
    opts = {"patience": 60, "max_configs": 150}
    assert replay_trace(loose.trace, loose.checks, run_options=opts, **opts)["tried"] == loose.tried
    for kw in ({"patience": 4, "max_configs": 150}, {"patience": 12, "max_configs": 40}, {"patience": 60, "max_configs": 17}):
        got = replay_trace(loose.trace, loose.checks, run_options=opts, **kw)
        tight, m = run("p{patience}m{max_configs}".format(**kw), **kw)
        assert got["tried"] == tight.tried and got["best_config"] in m
        ok = [fake_time(wrw.id, c) for c in m if fake_time(wrw.id, c) < math.inf]
        assert got["best_ms"] == min(ok)
    with pytest.raises(ValueError, match="patience"):
        replay_trace(loose.trace, loose.checks, run_options=opts, patience=61, max_configs=150)


def test_a_trace_replays_a_time_budget_at_the_question_that_would_have_stopped():
    from miofind.tuning.replay import replay_trace

    trace = [(0.5, 3.0, {"a": 0}), (0.5, 2.0, {"a": 1}), (1.5, None, {"a": 2}), (1.5, 1.0, {"a": 3}),
             (2.5, 0.5, {"a": 4})]
    checks = [(2, 0.6), (4, 1.6), (5, 2.6)]
    assert replay_trace(trace, checks, max_seconds=1.0) == {"tried": 4, "best_ms": 1.0, "best_config": {"a": 3},
                                                             "seconds": 1.5}
    assert replay_trace(trace, checks, max_seconds=0.5)["tried"] == 2
    assert replay_trace(trace, checks)["tried"] == 5
    # patience counts failures as configs without a gain, and is asked only where the search asked
    trace2 = [(0.5, 3.0, {"a": 0}), (0.5, 2.0, {"a": 1}), (1.0, None, {"a": 2}), (1.5, 2.5, {"a": 3}),
              (2.0, 0.5, {"a": 4})]
    checks2 = [(2, 0.6), (3, 1.1), (4, 1.6), (5, 2.1)]
    assert replay_trace(trace2, checks2, patience=1) == {"tried": 3, "best_ms": 2.0, "best_config": {"a": 1},
                                                         "seconds": 1.0}
    assert replay_trace(trace2, checks2, patience=2)["tried"] == 4
    assert replay_trace(trace2, checks2[:1] + checks2[2:], patience=1)["tried"] == 4
    assert replay_trace(trace2, checks2, patience=3)["tried"] == 5


def test_a_solvers_own_budget_widens_the_default_one_and_never_narrows_it():
    wrw = get_solver("ConvImplicitGemmHopperWrw")
    assert wrw.tune_budget == (400, 48) and get_solver("ConvImplicitGemmHopperWrwNchw").tune_budget == (400, 48)
    assert get_solver("ConvImplicitGemmHopperBwd").tune_budget is None
    o = TuneOptions(max_configs=16, patience=8, max_seconds=5.0)
    w = o.for_solver(wrw)
    assert (w.max_configs, w.patience, w.max_seconds) == (400, 48, 5.0)
    assert o.for_solver(get_solver("ConvImplicitGemmHopperBwd")) is o
    wide = TuneOptions(max_configs=1000, patience=None)
    assert (wide.for_solver(wrw).max_configs, wide.for_solver(wrw).patience) == (1000, None)
    fixed = TuneOptions(max_configs=16, patience=8, solver_budgets=False)
    assert fixed.for_solver(wrw) is fixed
    assert TuneOptions(**o.as_json()).solver_budgets is True


@pytest.mark.parametrize("solver_budgets", [True, False])
def test_a_tune_searches_under_the_solvers_budget_unless_told_not_to(dbs, solver_budgets):
    wrw = get_solver("ConvImplicitGemmHopperWrw")
    p = ProblemDescription.make("W", n=32, c=256, k=256, in_size=(28, 28), filter_size=3, pads=1, layout="NHWC",
                                dtype="FP16")
    t = tuner(dbs, strategy="random", max_configs=16, patience=8, seed=1, solver_budgets=solver_budgets)
    out = t.tune_solver(p, wrw, FakeMeasurer(p))
    if solver_budgets:
        assert out.budget == {"max_configs": 400, "patience": 48, "max_seconds": None}
        # random times: the search runs until 48 configs in a row bring no gain, well past 16
        assert 16 + 48 <= out.tried <= 400
    else:
        assert out.budget == {"max_configs": 16, "patience": 8, "max_seconds": None} and out.tried <= 16
    assert len(out.trace) == out.tried
