"""The learned cost model (miofind.costmodel) on the CPU: training on a small FindDB made here, the
numpy tree evaluator against LightGBM's own, save and load, ranking, immediate mode's use of a model
next to the system DB, and what happens without LightGBM or without a model file."""

from __future__ import annotations

import logging
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

import miofind.api as api
import miofind.costmodel as cm
from miofind import __version__
from miofind.cli import main as cli
from miofind.db import FindDB, Record
from miofind.device import DeviceInfo
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.trust import trust_key

DEV = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")
FAST_SMALL, FAST_LARGE = "GemmFwdRest", "ConvImplicitGemmFwd"   # the rule the small DB follows
SLOW = "ConvDirectNaiveConvFwd"


def rule_time(p: ProblemDescription, sid: str) -> float:
    """Synthetic times: GemmFwdRest wins below 128 channels, implicit GEMM from 128 up, naive never."""
    work = p.flops() / 1e9
    if sid == SLOW:
        return 50 * work + 0.1
    small = p.c < 128
    return work * ((1.0 if small else 3.0) if sid == FAST_SMALL else (2.0 if small else 1.0))


def problem(c, hw, k=64, n=8):
    return ProblemDescription.make("F", n=n, c=c, k=k, in_size=(hw, hw), filter_size=3, pads=1)


def store(db, problems):
    recs = []
    for p in problems:
        for sid in (FAST_SMALL, FAST_LARGE, SLOW):
            s = get_solver(sid)
            recs.append(Record(device=DEV.db_name, device_name=DEV.name, problem_key=p.key(), solver_id=sid,
                               algorithm=s.algorithm, time_ms=rule_time(p, sid), workspace_bytes=0, verified=True,
                               package_version=__version__, kernel_hash=trust_key(s), cuda_version="13.0",
                               created_at=time.time()))
    db.store(recs)


TRAIN = [problem(c, hw, k) for c in (16, 32, 48, 64, 96, 112, 128, 160, 192, 256, 384, 512)
         for hw in (7, 14, 28, 56) for k in (32, 64, 128)]
TEST = [problem(c, hw, k=96, n=4) for c in (24, 80, 144, 320) for hw in (10, 20, 40)]


@pytest.fixture
def small_db(tmp_path):
    path = tmp_path / "sm_90-132.sqlite"
    db = FindDB(str(path))
    store(db, TRAIN)
    db.close()
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    pytest.importorskip("lightgbm")
    path = tmp_path_factory.mktemp("cm") / "sm_90-132.sqlite"
    db = FindDB(str(path))
    store(db, TRAIN)
    samples = cm.samples_from_db(db)
    db.close()
    return cm.train(samples, rounds=200), samples


def test_trained_model_ranks_unseen_problems_by_the_rule(trained):
    model, samples = trained
    assert len(samples) == 3 * len(TRAIN) and model.meta["problems"] == len(TRAIN)
    assert model.supports(TEST[0], [FAST_SMALL, FAST_LARGE, SLOW])
    solvers = [get_solver(s) for s in (FAST_SMALL, FAST_LARGE, SLOW)]
    right, rel = 0, []
    for p in TEST:
        pred = model.predict_ms(p, [(s, None) for s in solvers])
        truth = [rule_time(p, s.id) for s in solvers]
        right += int(np.argmin(pred) == np.argmin(truth))
        rel += [abs(a / b - 1) for a, b in zip(pred, truth)]
        assert pred[2] > max(pred[:2])   # the naive solver is never ranked first
    assert right >= len(TEST) - 2, right   # near the c=128 boundary a split may fall either side
    assert np.median(rel) < 0.5


def test_numpy_trees_equal_lightgbm_predictions():
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 6))
    y = np.sin(x[:, 0]) + x[:, 1] * (x[:, 2] > 0) + 0.1 * rng.normal(size=400)
    booster = lgb.train({"verbosity": -1, "use_missing": False, "num_leaves": 15}, lgb.Dataset(x, y),
                        num_boost_round=50)
    trees = cm._Trees.from_lightgbm(booster.dump_model())
    q = rng.normal(size=(64, 6))
    np.testing.assert_allclose(trees.predict(q), booster.predict(q), rtol=1e-9, atol=1e-9)


def test_save_load_round_trip_and_bad_files(trained, tmp_path):
    model, _ = trained
    path = model.save(tmp_path / "m.model.npz")
    again = cm.CostModel.load(path)
    assert again.version == model.version and again.solver_ids == model.solver_ids
    pairs = [(get_solver(s), None) for s in (FAST_SMALL, FAST_LARGE, SLOW)]
    assert again.predict_ms(TEST[0], pairs) == pytest.approx(model.predict_ms(TEST[0], pairs), rel=1e-12)
    bad = tmp_path / "bad.model.npz"
    bad.write_bytes(b"not a model")
    with pytest.raises(cm.CostModelError, match="bad.model.npz"):
        cm.CostModel.load(bad)


def test_without_lightgbm_training_fails_cleanly_and_a_model_file_still_predicts(trained, tmp_path, monkeypatch,
                                                                                   small_db):
    model, samples = trained
    path = model.save(tmp_path / "m.model.npz")
    monkeypatch.setitem(sys.modules, "lightgbm", None)   # `import lightgbm` now fails
    with pytest.raises(cm.CostModelError, match=r"miofind\[model\]"):
        cm.train(samples)
    res = CliRunner().invoke(cli, ["db", "train-model", "--db", str(small_db), "--folds", "0"])
    assert res.exit_code != 0 and "miofind[model]" in res.output and "Traceback" not in res.output
    assert not cm.model_path_for(small_db).exists()
    loaded = cm.CostModel.load(path)   # numpy alone
    assert loaded.predict_ms(TEST[0], [(get_solver(FAST_SMALL), None)])[0] > 0


def test_cli_train_model_writes_next_to_the_db_and_reports_cross_validation(small_db):
    pytest.importorskip("lightgbm")
    res = CliRunner().invoke(cli, ["db", "train-model", "--db", str(small_db), "--folds", "3"])
    assert res.exit_code == 0, res.output
    assert "3-fold cross-validation" in res.output and "top-1" in res.output
    m = cm.CostModel.load(cm.model_path_for(small_db))
    assert m.version in res.output and m.meta["problems"] == len(TRAIN)


def test_cli_train_model_bad_db_is_one_line(tmp_path):
    res = CliRunner().invoke(cli, ["db", "train-model", "--db", str(tmp_path / "none" / "x.sqlite")])
    assert res.exit_code != 0 and "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def _immediate(system_path, monkeypatch, p):
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(system_path))
    cm._loaded.clear()
    api._memo.clear()   # the memo would answer the same problem as before
    from miofind.db import system
    system._opened.clear()
    return api.get_solutions(p, device=DEV, solvers=[FAST_SMALL, FAST_LARGE, SLOW])   # the solvers it knows


def test_immediate_mode_ranks_a_miss_by_the_model_next_to_the_system_db(trained, small_db, tmp_db, monkeypatch):
    model, _ = trained
    p = TEST[0]
    res = _immediate(small_db, monkeypatch, p)   # no model file yet: today's predictor
    assert res.predicted and res.basis != "model" and res.model_version is None
    model.save(cm.model_path_for(small_db))
    res = _immediate(small_db, monkeypatch, p)
    assert res.predicted and res.basis == "model" and res.model_version == model.version
    everyone = api.get_solutions(p, device=DEV)   # solvers the model never saw: today's predictor answers
    assert everyone.predicted and everyone.basis != "model"
    by_id = {s.solver_id: s.time_ms for s in res}
    cands = [get_solver(s) for s in by_id]
    want = model.predict_ms(p, [(s, s.default_config(p) if s.tunable else None) for s in cands])
    assert [by_id[s.id] for s in cands] == pytest.approx(want)
    assert res[0].time_ms == min(by_id.values())


def test_unreadable_model_file_falls_back_with_a_warning(small_db, tmp_db, monkeypatch, caplog):
    cm.model_path_for(small_db).write_bytes(b"garbage")
    with caplog.at_level(logging.WARNING, logger="miofind.costmodel"):
        res = _immediate(small_db, monkeypatch, TEST[0])
    assert res.predicted and res.basis != "model"
    assert any("cannot be read" in r.getMessage() for r in caplog.records)


def test_shipped_model_loads_and_covers_the_shipped_solvers():
    from miofind.db.system import system_db_path

    db = system_db_path("sm_90", 132)
    model = cm.model_for_db(db)
    assert model is not None, cm.model_path_for(db)
    p = ProblemDescription.make("F", n=16, c=96, k=96, in_size=(40, 40), filter_size=3, pads=1)
    from miofind.find import candidates
    cands = candidates(p)[0]
    assert model.supports(p, [s.id for s in cands])
    t = model.predict_ms(p, [(s, None) for s in cands])
    assert all(np.isfinite(t)) and min(t) > 0


def _walk(trees, row) -> float:
    """The plain reference: follow each tree's node table from its root to a leaf."""
    total = 0.0
    for node in trees.roots:
        while trees.children[node, 0] != node:
            node = trees.children[node, int(row[trees.feature[node]] > trees.threshold[node])]
        total += trees.value[node]
    return total


def test_heap_evaluator_equals_a_node_by_node_walk_of_the_shipped_model():
    from miofind.db.system import system_db_path

    model = cm.model_for_db(system_db_path("sm_90", 132))
    trees = model.trees
    assert trees.depth >= 2 and len(trees.roots) > 100
    rng = np.random.default_rng(3)
    # rows whose values sit on, just above and away from the model's own thresholds, so that ties
    # (x == threshold goes left) and both branches are hit, plus the feature rows of real problems
    inner = trees.children[:, 0] != np.arange(len(trees.feature))
    thr = trees.threshold[inner]
    x = rng.choice(thr, size=(300, model.n_features))
    x[100:200] = np.nextafter(x[100:200], np.inf)
    x[200:] += rng.normal(size=(100, model.n_features))
    from miofind.find import candidates
    for n, c in ((1, 64), (32, 256)):
        p = ProblemDescription.make("F", n=n, c=c, k=c, in_size=(28, 28), filter_size=3, pads=1)
        x = np.vstack([x, model.rows(p, [(s, None) for s in candidates(p)[0]])[0]])
    got = trees.predict(x)
    want = np.array([_walk(trees, r) for r in x])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert np.ptp(want) > 0.1   # the rows do reach different leaves
    assert trees.predict(x[:1]).shape == (1,) and trees.predict(x[:0]).shape == (0,)
