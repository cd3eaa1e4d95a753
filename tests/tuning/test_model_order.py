"""The "model" and "model_guided" tuning strategies on the CPU: the order a config-aware model gives, batches and budgets,
guided's search where no model answers, and a config-aware model trained on a small DB made here,
loaded next to the DB and used by the tuner."""

from __future__ import annotations

import logging
import math
import random
import time

import numpy as np
import pytest
from click.testing import CliRunner

import miofind.costmodel as cm
from fakes import DEV, FakeMeasurer, fake_finder
from miofind import __version__
from miofind.cli import main as cli
from miofind.db import FindDB, Record
from miofind.db.findb import PerfRecord
from miofind.db.system import Overlay
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.trust import trust_key
from miofind.tuning import Budget, Tuner, TuneOptions
from miofind.tuning.strategies import STRATEGIES, guided, model_order

P = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
IGEMM = get_solver("ConvImplicitGemmFwd")
SPACE = [{"a": a, "b": b} for a in (1, 2, 4, 8, 16) for b in (16, 32, 64, 128)]
DEFAULT = {"a": 4, "b": 32}
SPACE.remove(DEFAULT)
SPACE.insert(0, DEFAULT)   # the tuner's space: the default first


class StandIn:
    """A config-aware model stand-in: predicted time ``rule(config)``; answers for the ``solvers``
    given, with config features ``keys``."""

    def __init__(self, rule, keys=("a", "b"), solvers=(IGEMM.id,)):
        self.rule, self.config_keys, self.solvers = rule, tuple(keys), set(solvers)
        self.meta = {"version": "stand-in"}

    def supports(self, problem, solver_ids):
        return set(solver_ids) <= self.solvers

    def predict_ms(self, problem, pairs, sm_count=132):
        return [self.rule(c) for _, c in pairs]


def run(strategy, space, times, model=None, seed=0, **opts):
    """(batches measured, configs measured in order) of ``strategy`` on ``space`` with ``times(config)``."""
    budget = Budget(TuneOptions(**opts), len(space))
    batches = []

    def evaluate(batch):
        batch = batch[:budget.room()]   # as the tuner's evaluate
        batches.append([dict(c) for c in batch])
        t = [times(c) for c in batch]
        budget.note(t)
        return t

    STRATEGIES[strategy](space, space[0], evaluate, budget, random.Random(seed), problem=P, solver=IGEMM,
                         model=model)
    return batches, [c for b in batches for c in b]


def true_time(c):
    return 1.0 + abs(math.log2(c["a"] / 16)) + abs(math.log2(c["b"] / 128)) / 2   # best: a=16, b=128


def test_configs_are_measured_default_first_then_in_the_models_order_in_batches():
    pred = lambda c: -c["a"] * 1000 - c["b"]   # noqa: E731  the model: larger a, then larger b, faster
    batches, seen = run("model", SPACE, true_time, StandIn(pred), batch=4)
    want = [DEFAULT] + sorted((c for c in SPACE if c != DEFAULT), key=pred)
    assert seen == want
    assert [len(b) for b in batches] == [4] * 5 and len(SPACE) == 20
    assert seen[1] == {"a": 16, "b": 128}   # the first pick after the default is the predicted fastest


def test_equal_predictions_keep_guideds_order_nearest_to_the_default_first():
    batches, seen = run("model", SPACE, true_time, StandIn(lambda c: 1.0 if c["a"] == 16 else 2.0), batch=20)
    assert seen[0] == DEFAULT
    assert seen[1:5] == [{"a": 16, "b": 32}, {"a": 16, "b": 16}, {"a": 16, "b": 64}, {"a": 16, "b": 128}]
    assert all(c["a"] != 16 for c in seen[5:])
    rest = seen[5:]
    dist = [model_order._distance(c, DEFAULT) for c in rest]
    assert dist == sorted(dist) and dist[0] == 1.0


@pytest.mark.parametrize("opts,most", [({"max_configs": 7, "batch": 3}, 7), ({"patience": 4, "batch": 1}, 5),
                                       ({"max_configs": 1, "batch": 16}, 1)])
def test_budget_rules_stop_the_model_order(opts, most):
    # predicted fastest first, but measured times only grow: patience stops after the first + 4
    _, seen = run("model", SPACE, lambda c: c["a"] + c["b"] / 1000 + (0 if c == DEFAULT else 100),
                  StandIn(lambda c: -c["a"]), **opts)
    assert len(seen) == most and len({str(c) for c in seen}) == len(seen)


def test_no_model_falls_back_to_guided_and_says_so(caplog):
    caplog.set_level(logging.INFO, logger="miofind.tuning.strategies.model_order")
    ref_batches, _ = run("guided", SPACE, true_time, seed=3, batch=5, max_configs=12)
    got_batches, _ = run("model", SPACE, true_time, seed=3, batch=5, max_configs=12)
    assert got_batches == ref_batches
    assert "no config-aware model; guided search instead" in caplog.text
    assert IGEMM.id in caplog.text and P.key() in caplog.text


@pytest.mark.parametrize("model", [StandIn(lambda c: c["a"], keys=("x",)),                 # no feature of the solver's
                                   StandIn(lambda c: c["a"], solvers=("ConvDirectTiledFwd",))])  # unknown solver
def test_a_model_that_cannot_order_the_solvers_configs_falls_back_to_guided(model, caplog):
    caplog.set_level(logging.INFO, logger="miofind.tuning.strategies.model_order")
    ref, _ = run("guided", SPACE, true_time, seed=1, batch=4, max_configs=10)
    got, _ = run("model", SPACE, true_time, model=model, seed=1, batch=4, max_configs=10)
    assert got == ref and "cannot order its configs; guided search instead" in caplog.text


def test_model_guided_starts_with_the_models_picks_then_descends_from_the_best_measured():
    # the model's first batch lands near the best (a=16, b=16 is predicted fastest, a=16, b=128 is): the
    # descent then measures the neighbours of the best so far (one parameter changed, nearest first)
    pred = lambda c: abs(math.log2(c["a"] / 16)) + abs(math.log2(c["b"] / 16))   # noqa: E731
    batches, seen = run("model_guided", SPACE, true_time, StandIn(pred), batch=3)
    order = model_order.order(SPACE, DEFAULT, StandIn(pred), P, IGEMM)
    assert batches[0] == [SPACE[i] for i in order[:3]] and batches[0][0] == DEFAULT
    best_after_first = min(batches[0], key=true_time)
    assert best_after_first == {"a": 16, "b": 16}
    want = [SPACE[i] for i in guided._neighbours(best_after_first, SPACE,
                                                 {SPACE.index(c) for c in batches[0]})][:3]
    assert batches[1] == want and {"a": 16, "b": 32} in batches[1]
    assert seen.index({"a": 16, "b": 128}) < len(SPACE) - 1
    assert len({str(c) for c in seen}) == len(seen) == len(SPACE)   # the whole space, each config once


def test_model_guided_restarts_from_the_models_order_not_at_random():
    # every neighbour step fails (the default is the fastest): each restart is the next batch of the
    # model's order, the same for every seed
    pred = lambda c: -c["a"] * 1000 - c["b"]   # noqa: E731
    slow_but_default = lambda c: 0.0 if c == DEFAULT else 1.0 + c["a"] + c["b"]   # noqa: E731
    a, seen_a = run("model_guided", SPACE, slow_but_default, StandIn(pred), seed=1, batch=4)
    b, seen_b = run("model_guided", SPACE, slow_but_default, StandIn(pred), seed=7, batch=4)
    assert a == b
    order = [SPACE[i] for i in model_order.order(SPACE, DEFAULT, StandIn(pred), P, IGEMM)]
    near = [SPACE[i] for i in guided._neighbours(DEFAULT, SPACE, {SPACE.index(c) for c in a[0]})]
    assert a[1] == near[:4]                                  # the descent's step from the default
    assert a[2] == [c for c in order if c not in a[0] + a[1]][:4]   # then the model's next picks


def test_model_guided_without_a_model_is_guided(caplog):
    caplog.set_level(logging.INFO, logger="miofind.tuning.strategies.model_order")
    ref, _ = run("guided", SPACE, true_time, seed=2, batch=4, max_configs=12)
    got, _ = run("model_guided", SPACE, true_time, seed=2, batch=4, max_configs=12)
    assert got == ref and "guided search instead" in caplog.text


@pytest.mark.parametrize("opts,most", [({"max_configs": 7, "batch": 3}, 7), ({"patience": 4, "batch": 1}, 5)])
def test_budget_rules_stop_model_guided(opts, most):
    _, seen = run("model_guided", SPACE, lambda c: c["a"] + c["b"] / 1000 + (0 if c == DEFAULT else 100),
                  StandIn(lambda c: -c["a"]), **opts)
    assert len(seen) == most and len({str(c) for c in seen}) == len(seen)


def test_options_and_cli_accept_the_model_strategy():
    assert TuneOptions(strategy="model").strategy == "model"
    assert TuneOptions(strategy="model_guided").strategy == "model_guided"
    with pytest.raises(ValueError, match="strategy='modle'"):
        TuneOptions(strategy="modle")
    out = CliRunner().invoke(cli, ["tune", "--help"])
    assert out.exit_code == 0 and "model" in out.output and "model_guided" in out.output


# -- a real model file: hand-made trees (no LightGBM) and one trained on a small DB -----------------

def _one_split_model(solver_id: str, key: str | None, threshold: float) -> cm.CostModel:
    """One tree: config parameter ``key`` <= ``threshold`` predicts 10x faster than above it (no
    ``key``: the first problem feature instead)."""
    meta = {"format": 1, "solvers": [solver_id], "config_keys": [key] if key else [], "support": ["F-FP32-dense"],
            "version": "t"}
    col = cm.CostModel(cm._Trees.empty(), meta).n_features - 1 if key else 0
    trees = cm._Trees(np.asarray([col, 0, 0], np.int32), np.asarray([threshold, math.inf, math.inf]),
                      np.asarray([[1, 2], [1, 1], [2, 2]], np.int32), np.asarray([0.0, -1.0, 0.0]),
                      np.asarray([0], np.int32), 1)
    return cm.CostModel(trees, meta)


def test_model_file_next_to_the_user_db_orders_the_tuners_configs(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="miofind.tuning.strategies.model_order")
    model = _one_split_model(IGEMM.id, "BM", 64.5)
    path = model.save(cm.tune_model_path_for(tmp_path / "user.sqlite"))
    assert path.name == "user.tune.model.npz"
    t0 = time.perf_counter()
    loaded = cm.tune_model_for_db(tmp_path / "user.sqlite")
    assert time.perf_counter() - t0 < 0.1 and loaded.config_keys == ("BM",)
    with FindDB(str(tmp_path / "user.sqlite")) as user:
        dbs = Overlay(user)
        FakeMeasurer.calls = []
        t = Tuner(dbs, DEV, TuneOptions(strategy="model", max_configs=6, batch=3), measurer=FakeMeasurer,
                  finder=fake_finder(dbs))
        out = t.tune_solver(P, IGEMM, FakeMeasurer(P))
    assert out.status == "tuned" and "guided search instead" not in caplog.text
    default = IGEMM.default_config(P.as_conv())
    tried = [c for sid, c in FakeMeasurer.calls if sid == IGEMM.id][:6]   # the search, before the re-measure
    assert default["BM"] > 64 and tried[0] == default
    assert all(c["BM"] <= 64 for c in tried[1:])   # the model's faster half first
    assert tried[1] == dict(default, BM=64)          # nearest to the default among them


def test_model_file_without_config_features_or_unreadable_is_not_used(tmp_path, caplog):
    _one_split_model(IGEMM.id, None, 0.5).save(cm.tune_model_path_for(tmp_path / "a.sqlite"))
    (tmp_path / "b.tune.model.npz").write_bytes(b"not a model")
    with caplog.at_level(logging.WARNING, logger="miofind.costmodel"):
        assert cm.tune_model_for_db(tmp_path / "a.sqlite") is None
        assert cm.tune_model_for_db(tmp_path / "b.sqlite") is None
    assert "no config features" in caplog.text and "cannot be read" in caplog.text


def _small_tuned_db(path):
    """Find records of ConvImplicitGemmFwd at a tuned config (BM 64) and PerfDB entries with the
    default config (another BM) 1.5x slower, over the problems whose default is not BM 64."""
    db = FindDB(str(path))
    recs, perf = [], []
    for c in (16, 32, 64, 128, 256):
        for hw in (14, 28, 56):
            for k in (32, 64, 128):
                p = ProblemDescription.make("F", n=8, c=c, k=k, in_size=(hw, hw), filter_size=3, pads=1)
                default = IGEMM.default_config(p.as_conv())
                if default["BM"] == 64:
                    continue
                tuned = dict(default, BM=64)
                t = p.flops() / 1e10
                recs.append(Record(device=DEV.db_name, device_name=DEV.name, problem_key=p.key(), solver_id=IGEMM.id,
                                   algorithm=IGEMM.algorithm, time_ms=t, workspace_bytes=0, config=tuned,
                                   verified=True, package_version=__version__, kernel_hash=trust_key(IGEMM),
                                   cuda_version="13.0"))
                perf.append(PerfRecord(DEV.db_name, p.key(), IGEMM.id, tuned, t, 1.5 * t, "guided", 8, 1.0,
                                       DEV.name, __version__, trust_key(IGEMM), "13.0"))
    assert len(perf) >= 20
    db.store(recs)
    db.store_perf(perf)
    db.close()


def test_train_model_configs_trains_the_config_aware_model_next_to_the_db(tmp_path):
    pytest.importorskip("lightgbm")
    path = tmp_path / "fleet.sqlite"
    _small_tuned_db(path)
    r = CliRunner().invoke(cli, ["db", "train-model", "--configs", "--db", str(path), "--folds", "0"])
    assert r.exit_code == 0, r.output
    assert "config features (tuned configs): BK,BM,BN,STAGES,TM,TN" in r.output and "fleet.tune.model.npz" in r.output
    assert not cm.model_path_for(path).exists()   # immediate mode's model is not touched
    model = cm.tune_model_for_db(path)
    assert model is not None and model.meta["configs"] is True and model.rank_trees == 0
    unseen = ProblemDescription.make("F", n=16, c=96, k=48, in_size=(20, 20), filter_size=3, pads=1)
    default = IGEMM.default_config(unseen.as_conv())
    assert default["BM"] != 64
    pair = [default, dict(default, BM=64)]
    assert cm.config_order(model, unseen, IGEMM, pair) == [1, 0]   # learnt: BM 64 beats the default
    assert cm.config_order(model, unseen, get_solver("ConvDirectTiledFwd"), [{"TILE_W": 8}]) is None
    order = model_order.order([default] + [dict(default, BM=b) for b in (32, 64, 256)], default, model, unseen, IGEMM)
    assert order[0] == 0 and order[1] == 2
