"""The learned cost model (miofind.costmodel) on the CPU: training on a small FindDB made here, the
numpy tree evaluator against LightGBM's own, save and load, ranking, immediate mode's use of a model
next to the system DB, and what happens without LightGBM or without a model file."""

from __future__ import annotations

import json
import logging
import math
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
    return cm.train(samples, rounds=200, rank_rounds=0, perceptron=False), samples   # the regression trees alone


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
    assert m.rank_trees == cm.RANK_ROUNDS > 0 and f"{cm.RANK_ROUNDS} LambdaRank trees" in res.output
    # the immediate-mode model learns the solvers' default configs unless told not to
    assert "config features (default configs)" in res.output and m.config_basis == "default" and m.config_keys


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
    # solvers the model never saw (added after it was trained) follow its ranking of those it knows, in the order of
    # their times as today's predictor states them
    everyone = api.get_solutions(p, device=DEV)
    assert everyone.predicted and everyone.basis == "model"
    ids = [s.solver_id for s in everyone]
    n = sum(i in {FAST_SMALL, FAST_LARGE, SLOW} for i in ids)     # the naive SLOW is no default candidate
    assert n >= 2 and ids[:n] == [s.solver_id for s in res if s.solver_id in ids]
    rest = [s.time_ms for s in everyone][n:]
    assert rest and rest == sorted(rest)
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
    from miofind.find import candidates
    # FP32 NCHW, FP16 NHWC and FP16 NCHW, where the Hopper family is a candidate with its NCHW wrappers and the
    # copy-engine-store forward: every candidate has a place in the model. The presets' records lack the wrappers and
    # the store forward (they joined after); session dec03a's random layers, which hold a record of every applicable
    # solver, brought them into the shipped DB
    for kw in ({}, dict(layout="NHWC", dtype="FP16"), dict(dtype="FP16")):
        for d in "FBW":
            p = ProblemDescription.make(d, n=16, c=96, k=96, in_size=(40, 40), filter_size=3, pads=1, **kw)
            cands = candidates(p)[0]
            assert model.supports(p, [s.id for s in cands]), (p.key(), [s.id for s in cands])
            t = model.predict_ms(p, [(s, None) for s in cands])
            assert all(np.isfinite(t)) and min(t) > 0
    assert {"ConvImplicitGemmHopperFwd", "ConvImplicitGemmHopperBwd", "ConvImplicitGemmHopperWrw",
            "ConvImplicitGemmHopperFwdTmaStore", "ConvImplicitGemmHopperFwdNchw"} <= set(model.solver_ids)
    # the swapped-operand solvers too: immediate mode ranks a narrow channels-last problem's candidates, the swapped
    # one among them, by the model alone (before, it listed the swapped one after the model's ranking)
    from miofind import api as _api
    from miofind.solvers import implicit_gemm_hopper_base as hb
    for d, swap in (("F", "ConvImplicitGemmHopperFwdSwap"), ("B", "ConvImplicitGemmHopperBwdSwap")):
        p = ProblemDescription.make(d, n=24, c=64, k=64, in_size=(200, 200), filter_size=3, pads=1, layout="NHWC",
                                    dtype="FP16")
        assert swap in model.solver_ids
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(hb, "device_arch", lambda: None)
            res = _api.get_solutions(p, device="sm_90-132")
        ids = [s.solver_id for s in res]
        assert res.basis == "model" and swap in ids and all(i in model.solver_ids for i in ids), ids


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


# -- the per-problem evaluator (predict_ms: bitmask tables, ``costmodel._Exits``) ---------------

def _descent_ms(model, p, pairs):
    """The times the feature rows and the heap descent give (the evaluator before ``_Exits``): the
    regression trees' leaves, summed as the exit tables sum them."""
    x, base = model.rows(p, pairs)
    if not model.rank_trees:
        return 10.0 ** (base + model.trees.predict(x))
    cut = len(model.trees.roots) - model.rank_trees
    return 10.0 ** (base + np.add.reduceat(model.trees.leaves(x), [0, cut], axis=1)[:, 0])


def _shipped():
    from miofind.db.system import system_db_path

    path = system_db_path("sm_90", 132)
    return FindDB(str(path), readonly=True, immutable=True), cm.CostModel.load(cm.model_path_for(path))


def _default(s, p):
    try:
        return s.default_config(p.as_conv()) if s.tunable else None
    except Exception:
        return None


def test_exit_tables_equal_the_descent_for_every_record_of_the_shipped_db():
    db, model = _shipped()
    assert model.trees.exits is not None   # the shipped model takes the fast path
    assert model.perceptron is not None    # which states its times; its trees alone are checked here
    trees = cm.CostModel(model.trees, {k: v for k, v in model.meta.items() if k != "perceptron"})
    by_key = {}
    for r in db.iter_records(None):
        by_key.setdefault(r.problem_key, []).append(r)
    db.close()
    assert len(by_key) > 2000
    worst, identical, cases, worst_perceptron = 0.0, 0, 0, 0.0
    for key, recs in by_key.items():
        p = cm.parse_problem_key(key)
        solvers = [get_solver(r.solver_id) for r in recs]
        # as recorded (tuned configs) and as a miss (default configs)
        for pairs in ([(s, r.config) for s, r in zip(solvers, recs)], [(s, _default(s, p)) for s in solvers]):
            got, want = np.array(trees.predict_ms(p, pairs)), _descent_ms(model, p, pairs)
            worst = max(worst, float(np.max(np.abs(got / want - 1))))
            identical += int(np.array_equal(got, want))
            cases += 1
            # the perceptron's times made without the feature rows, against its layers on the full rows
            x, base = model.rows(p, pairs)
            full = base + model.perceptron.predict(x)
            worst_perceptron = max(worst_perceptron, float(np.max(np.abs(np.log10(model.predict_ms(p, pairs)) - full))))
    assert worst < 1e-12, worst
    assert identical == cases   # the same leaves, summed in the same order
    assert worst_perceptron < 1e-12, worst_perceptron


def test_problem_parts_agree_with_the_problem_shapes():
    from miofind.predict import Roofline, model_time_ms

    probs = [ProblemDescription.make(d, n=2, c=6, k=4, in_size=(5, 7, 9), filter_size=(3, 1, 2), pads=(1, 0, 1),
                                     strides=(2, 1, 1)) for d in "FBW"]
    probs += [ProblemDescription.make(d, n=3, c=8, k=12, in_size=(17,), filter_size=(3,), pads=(1,)) for d in "FBW"]
    probs += [ProblemDescription.make(d, n=3, c=8, k=12, in_size=(17, 19), filter_size=3, groups=4, dilations=2,
                                      layout="NHWC", dtype="FP16") for d in "FBW"]
    probs += [ProblemDescription.make(d, n=3, c=8, k=12, in_size=(17, 19), filter_size=3, transposed=True, strides=2)
              for d in "FBW"]
    names = list(cm._PROBLEM_FEATURES)
    for p in probs:
        feats, conv, flops, elements, (m, n, g) = cm._problem_parts(p)
        a, b, o = conv.io_shapes()
        assert flops == conv.flops() and elements == sum(math.prod(s) for s in (a, b, o)), p.key()
        cpg, kpg, taps = conv.c // conv.groups, conv.k // conv.groups, math.prod(conv.filter_size)
        assert g == conv.groups and (m, n) == {"F": (conv.n * math.prod(conv.out_size), kpg),   # the implicit
                                               "B": (conv.n * math.prod(conv.in_size), cpg),    # GEMM of the
                                               "W": (kpg, cpg * taps)}[conv.direction], p.key()   # direction
        esize = 2 if conv.dtype in ("FP16", "BF16") else 4
        assert feats[names.index("log_bytes")] == math.log2(esize * elements)
        assert feats[names.index("log_flops")] == math.log2(flops)
        for sid in (SLOW, FAST_SMALL, "ConvCudnnFwd"):
            s = get_solver(sid)
            assert Roofline(conv, flops, elements).ms(s.family, s.is_reference) == model_time_ms(p, s)


@pytest.fixture(scope="module")
def tuned_samples():
    """Synthetic measured times of ConvImplicitGemmFwd at several configs, GemmFwdRest and the naive
    solver: the model splits on config columns as well as on the problem and the solver."""
    rng = np.random.default_rng(5)
    out = []
    for p in TRAIN[::2]:
        for sid in (FAST_SMALL, SLOW):
            out.append(cm.Sample(p.key(), sid, None, rule_time(p, sid)))
        for _ in range(4):
            cfg = {"BM": int(rng.choice([32, 64, 128])), "BN": int(rng.choice([32, 64])), "STAGES": int(rng.integers(2, 5))}
            t = rule_time(p, FAST_LARGE) * (1 + abs(cfg["BM"] - 64) / 64) * (1.2 if cfg["STAGES"] == 2 else 1.0)
            out.append(cm.Sample(p.key(), FAST_LARGE, cfg, t))
    return out


def _pairs_with_configs(rng, n):
    big = get_solver(FAST_LARGE)
    return [(get_solver(FAST_SMALL), None), (get_solver(SLOW), None)] + [
        (big, {"BM": int(rng.choice([16, 32, 64, 96, 128, 256])), "BN": int(rng.choice([32, 64, 128])),
               "STAGES": int(rng.integers(1, 6))}) for _ in range(n)]


@pytest.mark.parametrize("rounds,tile,align", [(60, False, False), (61, False, False), (60, True, False),
                                               (60, True, True)])   # an odd forest pads the uint64 table with a column
def test_exit_tables_equal_lightgbm_predict(tuned_samples, monkeypatch, rounds, tile, align):
    lgb = pytest.importorskip("lightgbm")
    boosters = []
    real = lgb.train
    monkeypatch.setattr(lgb, "train", lambda *a, **k: boosters.append(real(*a, **k)) or boosters[-1])
    model = cm.train(tuned_samples, rounds=rounds, configs=True, rank_rounds=0, tile_features=tile,
                     align_features=align)
    assert model.align_features == align and model.meta["feature_names"][len(cm._PROBLEM_FEATURES)] == \
        ("align_out" if align else "log_roofline_ms")
    assert model.trees.exits is not None and len(model.trees.roots) == rounds
    assert {"BM", "BN", "STAGES"} <= set(model.config_keys)
    rng = np.random.default_rng(7)
    used = {int(f) for f in model.trees.feature}
    c0 = model._tile_col - len(model.config_keys)
    assert any(c0 <= f < model._tile_col for f in used)   # config splits exist
    assert model.tile_features == tile and model.n_features == model._tile_col + 2 * tile
    if tile:   # and tile-count splits: the per-row features take their own table rows
        assert any(f >= model._tile_col for f in used)
    for p in TEST + TRAIN[::7]:
        pairs = _pairs_with_configs(rng, 4)
        x, base = model.rows(p, pairs)
        want = 10.0 ** (base + boosters[0].predict(x))
        np.testing.assert_allclose(model.predict_ms(p, pairs), want, rtol=1e-9)
        np.testing.assert_allclose(model.predict_ms(p, pairs), _descent_ms(model, p, pairs), rtol=1e-12)


def test_default_training_leaves_configs_and_default_config_samples_out(tuned_samples):
    pytest.importorskip("lightgbm")
    extra = [cm.Sample(s.problem_key, s.solver_id, s.config, s.time_ms * 3, default=True)
             for s in tuned_samples if s.config]
    model = cm.train(tuned_samples + extra, rounds=30, rank_rounds=0, perceptron=False)
    assert model.config_keys == () and model.meta["configs"] is False
    assert model.meta["samples"] == len(tuned_samples)   # the PerfDB default-config samples are not learnt
    with_configs = cm.train(tuned_samples + extra, rounds=30, configs=True, rank_rounds=0)
    assert with_configs.meta["samples"] == len(tuned_samples) + len(extra) and with_configs.config_keys
    rng = np.random.default_rng(3)
    for p in TEST[:4]:
        pairs = _pairs_with_configs(rng, 3)
        t = model.predict_ms(p, pairs)
        assert t[2] == t[3] == t[4]   # the same solver at any config: one time
        assert t == list(_descent_ms(model, p, pairs))


@pytest.fixture(scope="module")
def three_bases(tuned_samples):
    """Small models of each config basis: "none" (plain), "default" (with a ranking forest) and the tuner's "tuned"."""
    pytest.importorskip("lightgbm")
    return (cm.train(tuned_samples, rounds=10, rank_rounds=0, perceptron=False),
            cm.train(tuned_samples, rounds=10, rank_rounds=5, default_configs=True, perceptron=False),
            cm.train(tuned_samples, rounds=10, rank_rounds=0, configs=True))


def test_immediate_mode_models_draw_random_thresholds_and_the_tuners_model_does_not(tuned_samples, three_bases):
    plain, default, tuner = three_bases
    assert plain.meta["params"]["extra_trees"] is True and default.meta["params"]["extra_trees"] is True
    assert default.meta["rank_params"]["extra_trees"] is True          # the ranking forest too
    assert "extra_trees" not in tuner.meta["params"] and tuner.config_basis == "tuned"
    off = cm.train(tuned_samples, rounds=10, rank_rounds=0, params={"extra_trees": False}, perceptron=False)
    assert off.meta["params"]["extra_trees"] is False                  # an explicit parameter wins


def test_immediate_mode_models_have_the_alignment_features_and_the_tuners_model_does_not(tuned_samples, three_bases):
    plain, default, tuner = three_bases
    assert cm.IMMEDIATE_ALIGN and plain.align_features and default.align_features and not tuner.align_features
    names = cm.problem_feature_names(True)
    assert names == cm._PROBLEM_FEATURES + cm._ALIGN_FEATURES and tuple(default.meta["feature_names"][:len(names)]) == names
    unaligned = cm.train(tuned_samples, rounds=10, rank_rounds=0, align_features=False, perceptron=False)   # asked off
    assert not unaligned.align_features and plain.n_features == unaligned.n_features + 4
    # a file written before the features (no "align_features" in its meta) reads its columns as before
    old = cm.CostModel(tuner.trees, {k: v for k, v in tuner.meta.items() if k != "align_features"})
    assert not old.align_features and old.n_features == tuner.n_features
    rng = np.random.default_rng(4)
    for p in TEST[:4]:
        pairs = _pairs_with_configs(rng, 3)
        assert default.predict_ms(p, pairs) == list(_descent_ms(default, p, pairs))
        assert old.predict_ms(p, pairs) == tuner.predict_ms(p, pairs)


def test_alignment_features_are_the_byte_alignment_of_the_gemm_leading_dimensions():
    assert [cm._align_log2(v, 2) for v in (49, 64, 58, 60, 1, 8, 4096)] == [1, 4, 2, 3, 1, 4, 4]
    assert [cm._align_log2(v, 4) for v in (49, 2, 6, 12)] == [2, 3, 3, 4]
    # ResNet-50's 512 -> 512 3x3 at 7x7 in FP16 NCHW: 49 output pixels per plane (98 bytes: 2-byte aligned), 196
    # input pixels of the stride-2 one (392 bytes: 8-byte aligned); 512 channels: 16 bytes
    p = ProblemDescription.make("F", n=32, c=512, k=512, in_size=(14, 14), filter_size=3, pads=1, strides=2,
                                dtype="FP16")
    feats = cm._problem_parts(p, True)[0]
    assert feats[:len(cm._PROBLEM_FEATURES)] == cm._problem_parts(p)[0]
    assert feats[len(cm._PROBLEM_FEATURES):] == [1.0, 3.0, 4.0, 4.0]
    g = ProblemDescription.make("B", n=2, c=116, k=58, in_size=(28, 28), filter_size=1, groups=2, dtype="FP32")
    assert cm._problem_parts(g, True)[0][len(cm._PROBLEM_FEATURES):] == [4.0, 4.0, 3.0, 2.0]   # 58 and 29 per group


def _balanced_tree_trees(depth: int) -> "cm._Trees":
    """One complete tree of ``depth`` splitting on feature 0 at 0.5, 1.5, ... (2^depth leaves)."""
    feature, threshold, children, value = [], [], [], []

    def add(lo, hi, d):
        i = len(feature)
        feature.append(0), threshold.append(math.inf), children.append([i, i]), value.append(0.0)
        if d == depth:
            value[i] = float(lo)
            return i
        mid = (lo + hi) // 2
        threshold[i] = mid - 0.5
        children[i] = [add(lo, mid, d + 1), add(mid, hi, d + 1)]
        return i

    add(0, 1 << depth, 0)
    return cm._Trees(np.asarray(feature, np.int32), np.asarray(threshold), np.asarray(children, np.int32),
                     np.asarray(value), np.asarray([0], np.int32), depth)


def test_exit_tables_leave_trees_of_more_than_32_leaves_to_the_descent():
    small, big = _balanced_tree_trees(5), _balanced_tree_trees(6)
    assert small.exits is not None and big.exits is None
    x = np.arange(-1, 65, 0.5)[:, None]
    want = np.clip(np.ceil(x[:, 0] - 0.5), 0, 63)   # the leaf holding x (x <= threshold goes left)
    np.testing.assert_array_equal(big.predict(x), want)
    np.testing.assert_array_equal(small.predict(x), np.minimum(want, 31))
    rows = np.array([small.exits.rows_for([(0, v)]) for v in x[:, 0]])
    np.testing.assert_array_equal(small.exits.score([list(rows[:, 0]), [0] * len(rows)], [0]), np.minimum(want, 31))
    # a model of such trees predicts through the feature rows
    meta = {"solvers": [FAST_SMALL], "config_keys": [], "support": ["F-FP32-dense"], "version": "t"}
    model = cm.CostModel(big, meta)
    pairs = [(get_solver(FAST_SMALL), None)]
    assert model.predict_ms(TEST[0], pairs) == list(_descent_ms(model, TEST[0], pairs))


def _config_model(seed: int = 2, ntrees: int = 61, depth: int = 5) -> "cm.CostModel":
    """A model of random trees (no LightGBM needed) over the shipped model's solvers and the implicit
    GEMM config columns, half of whose splits are on config columns: the shipped model has none
    (``train``'s ``configs`` is off), a model trained with ``configs=True`` has them."""
    db, shipped = _shipped()
    db.close()
    keys = ["BK", "BM", "BN", "STAGES", "TM", "TN"]
    meta = {"solvers": list(shipped.solver_ids), "config_keys": keys, "support": shipped.meta["support"], "version": "t"}
    nfeat = cm.CostModel(cm._Trees.empty(), meta).n_features
    rng = np.random.default_rng(seed)
    feature, threshold, children, value, roots = [], [], [], [], []

    def add(d):
        i = len(feature)
        feature.append(0), threshold.append(math.inf), children.append([i, i]), value.append(0.0)
        if d == depth or (d > 1 and rng.random() < 0.2):
            value[i] = float(rng.normal(scale=0.05))
            return i
        if rng.random() < 0.5:
            feature[i] = int(nfeat - len(keys) + rng.integers(len(keys)))
            threshold[i] = float(rng.choice([4.5, 8.5, 16.5, 32.5, 64.5, 96.0, 128.5, 2.5, 3.5]))
        else:
            feature[i] = int(rng.integers(nfeat - len(keys)))
            threshold[i] = float(rng.normal(scale=3.0))
        children[i] = [add(d + 1), add(d + 1)]
        return i

    for _ in range(ntrees):
        roots.append(add(0))
    trees = cm._Trees(np.asarray(feature, np.int32), np.asarray(threshold), np.asarray(children, np.int32),
                      np.asarray(value), np.asarray(roots, np.int32), depth)
    model = cm.CostModel(trees, meta)
    assert trees.exits is not None and any(f >= nfeat - len(keys) for f in feature)
    return model


def test_config_rows_past_the_bound_and_odd_configs_predict_as_the_descent(monkeypatch):
    model = _config_model()
    monkeypatch.setattr(cm._Exits, "MAX_BOUNDED", 3)
    rng = np.random.default_rng(11)
    p = ProblemDescription.make("F", n=16, c=96, k=96, in_size=(40, 40), filter_size=3, pads=1)
    big = get_solver("ConvImplicitGemmFwd")
    for i in range(12):   # 3 configs get a joined row, the rest their config columns' rows
        pairs = [(get_solver("GemmFwdRest"), None), (big, {"BM": int(rng.choice([32, 64, 128])), "BN": 64,
                                                          "BK": int(rng.choice([8, 16])), "STAGES": 3, "TN": 8, "TM": 8})]
        if i % 3 == 1:   # values the model reads as -1 (bool, str), unknown keys, an unhashable value
            pairs.append((big, {"BM": True, "BN": "64", "BK": 16.0, "XYZ": 3, "tags": [1, 2]}))
        np.testing.assert_array_equal(model.predict_ms(p, pairs), _descent_ms(model, p, pairs))
    assert model.trees.exits._bounded == 3


def test_concurrent_predictions_growing_the_table_agree_with_sequential_ones():
    import threading

    shared, reference = _config_model(), _config_model()
    big = get_solver("ConvImplicitGemmFwd")
    p = ProblemDescription.make("F", n=8, c=128, k=64, in_size=(28, 28), filter_size=3, pads=1)
    configs = [{"BM": bm, "BN": bn, "BK": bk, "STAGES": st, "TN": 8, "TM": 8}
               for bm in (32, 64, 128, 256) for bn in (32, 64, 128) for bk in (8, 16, 32) for st in (2, 3, 4)]
    assert len(configs) > 64   # more joined rows than the table's spare rows: it grows while read
    want = {i: reference.predict_ms(p, [(big, c)])[0] for i, c in enumerate(configs)}
    got, errors = {}, []

    def work(start):
        try:
            for i in range(start, start + len(configs)):
                i %= len(configs)
                got.setdefault(i, set()).add(shared.predict_ms(p, [(get_solver("GemmFwdRest"), None), (big, configs[i])])[1])
        except Exception as e:   # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k * 17,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    exits = shared.trees.exits
    assert exits._used - exits._first > 64 and len(exits.table) > exits._first + 64   # it grew
    assert all(got[i] == {want[i]} for i in want)


# -- the ranking forest (``train(rank_rounds=...)``, ``CostModel.rank``) -------------------------

RANK_ROUNDS = 60


@pytest.fixture(scope="module")
def ranked(trained):
    """The small DB's model with a LambdaRank forest after the same 200 regression trees, and the
    LightGBM boosters ``train`` made for it (regression, ranker)."""
    lgb = pytest.importorskip("lightgbm")
    _, samples = trained
    boosters = []
    real = lgb.train
    lgb.train = lambda *a, **k: boosters.append(real(*a, **k)) or boosters[-1]
    try:
        model = cm.train(samples, rounds=200, rank_rounds=RANK_ROUNDS, perceptron=False)
    finally:
        lgb.train = real
    return model, boosters


def _three():
    return [(get_solver(s), None) for s in (FAST_SMALL, FAST_LARGE, SLOW)]


def test_ranking_forest_orders_unseen_problems_and_the_regression_trees_state_the_times(trained, ranked):
    reg, _ = trained
    model, boosters = ranked
    assert model.meta["format"] == 2 and model.rank_trees == RANK_ROUNDS
    assert len(model.trees.roots) == 200 + RANK_ROUNDS and reg.meta["format"] == 1 and reg.rank_trees == 0
    right = 0
    for p in TEST:
        pairs = _three()
        times, order = model.rank(p, pairs)
        # the same (deterministic) regression trees: the times are the regression-only model's
        assert times == pytest.approx(reg.predict_ms(p, pairs), rel=1e-12)
        assert model.predict_ms(p, pairs) == times
        truth = [rule_time(p, s.id) for s, _ in pairs]
        assert sorted(order) == [0, 1, 2] and order[-1] == 2   # the naive solver is ranked last
        right += int(order[0] == int(np.argmin(truth)))
        # the ranking scores from the exit tables are LightGBM's ranker's, and the descent's
        x, _ = model.rows(p, pairs)
        score = -np.array(model._evaluate(p, pairs, 132)[1])
        np.testing.assert_allclose(score, boosters[1].predict(x), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(score, model.trees.leaves(x)[:, 200:].sum(axis=1), rtol=1e-12, atol=1e-12)
        assert order == sorted(range(3), key=lambda i: -score[i])
    assert right >= len(TEST) - 2, right


def test_ranked_model_file_round_trip_and_bad_rank_trees(ranked, tmp_path):
    model, _ = ranked
    again = cm.CostModel.load(model.save(tmp_path / "r.model.npz"))
    assert again.version == model.version and again.rank_trees == RANK_ROUNDS
    for p in TEST[:4]:
        assert again.rank(p, _three()) == model.rank(p, _three())
    for meta in (dict(model.meta, rank_trees=len(model.trees.roots)), dict(model.meta, format=1)):
        cm.CostModel(model.trees, meta).save(tmp_path / "bad.model.npz")
        with pytest.raises(cm.CostModelError, match="rank_trees"):
            cm.CostModel.load(tmp_path / "bad.model.npz")
    with pytest.raises(cm.CostModelError, match="format 4"):
        cm.CostModel(model.trees, dict(model.meta, format=4)).save(tmp_path / "new.model.npz")
        cm.CostModel.load(tmp_path / "new.model.npz")


def test_format_1_model_orders_by_its_times(trained, tmp_path):
    reg, _ = trained
    old = cm.CostModel.load(reg.save(tmp_path / "old.model.npz"))
    assert old.meta["format"] == 1 and old.rank_trees == 0
    for p in TEST[:4]:
        times, order = old.rank(p, _three())
        assert order == sorted(range(3), key=times.__getitem__) and times == old.predict_ms(p, _three())


def test_immediate_mode_orders_by_the_ranking_and_states_the_regression_times(ranked, small_db, tmp_db, monkeypatch):
    model, _ = ranked
    # the ranking forest negated: it now ranks the naive solver first, against the times
    t = model.trees
    value = t.value.copy()
    value[t.roots[len(t.roots) - model.rank_trees]:] *= -1   # the ranker's nodes follow the regression's
    flipped = cm.CostModel(cm._Trees(t.feature, t.threshold, t.children, value, t.roots, t.depth),
                           dict(model.meta, version="flipped"))
    flipped.save(cm.model_path_for(small_db))
    p = TEST[0]
    res = _immediate(small_db, monkeypatch, p)
    assert res.predicted and res.basis == "model" and res.model_version == "flipped"
    cands = [get_solver(s.solver_id) for s in res]
    times, order = flipped.rank(p, [(s, None) for s in cands])
    assert [s.time_ms for s in res] == pytest.approx(times)            # the regression trees' times
    assert [cands[i].id for i in order] == [s.solver_id for s in res]  # in the ranking's order
    assert res[0].solver_id == SLOW and res[0].time_ms == max(times)   # not the order of the times


def _joined(a: "cm.CostModel", b: "cm.CostModel") -> "cm.CostModel":
    """``a``'s trees then ``b``'s as one model whose ranking forest is ``b``'s (no LightGBM)."""
    ta, tb = a.trees, b.trees
    n = len(ta.feature)
    trees = cm._Trees(np.concatenate([ta.feature, tb.feature]), np.concatenate([ta.threshold, tb.threshold]),
                      np.concatenate([ta.children, tb.children + n]).astype(np.int32),
                      np.concatenate([ta.value, tb.value]), np.concatenate([ta.roots, tb.roots + n]).astype(np.int32),
                      max(ta.depth, tb.depth))
    return cm.CostModel(trees, dict(a.meta, format=2, rank_trees=len(tb.roots)))


def test_two_forests_in_one_table_score_as_each_alone(tmp_path):
    reg, ranker = _config_model(seed=2, ntrees=61), _config_model(seed=4, ntrees=40)
    both = cm.CostModel.load(_joined(reg, ranker).save(tmp_path / "both.model.npz"))   # numpy alone
    assert both.trees.exits is not None and both.rank_trees == 40
    p = ProblemDescription.make("F", n=16, c=96, k=96, in_size=(40, 40), filter_size=3, pads=1)
    from miofind.find import candidates
    pairs = [(s, _default(s, p)) for s in candidates(p, with_naive=True)[0]]
    assert len(pairs) > 3
    times, order = both.rank(p, pairs)
    np.testing.assert_allclose(times, reg.predict_ms(p, pairs), rtol=1e-12)
    x, _ = ranker.rows(p, pairs)
    score = ranker.trees.predict(x)
    np.testing.assert_allclose(-np.array(both._evaluate(p, pairs, 132)[1]), score, rtol=1e-12, atol=1e-12)
    assert order == sorted(range(len(pairs)), key=lambda i: -score[i])
    both.trees.exits = None   # as for trees of more than 32 leaves: the descent gives the same
    again, again_order = both.rank(p, pairs)
    np.testing.assert_allclose(again, times, rtol=1e-12)
    assert again_order == order


# -- default-config features: the solvers' heuristic configs as features of any problem ------------

def test_default_config_samples_give_each_find_record_its_solvers_default_config(tuned_samples):
    extra = [cm.Sample(s.problem_key, s.solver_id, s.config, s.time_ms * 3, default=True)
             for s in tuned_samples if s.config]
    out = cm.default_config_samples(tuned_samples + extra)
    assert len(out) == len(tuned_samples)   # PerfDB default-config samples are dropped
    replaced = 0
    for s, o in zip(tuned_samples, out):
        solver, p = get_solver(s.solver_id), cm.parse_problem_key(s.problem_key)
        assert (o.problem_key, o.solver_id, o.time_ms, o.default) == (s.problem_key, s.solver_id, s.time_ms, False)
        assert o.config == (solver.default_config(p.as_conv()) if solver.tunable else None)
        replaced += o.config != s.config
    assert replaced >= len([s for s in tuned_samples if s.config]) // 2   # the recorded configs are gone


def test_default_config_model_trains_config_features_and_is_asked_with_default_configs(small_db, tmp_db,
                                                                                        monkeypatch):
    pytest.importorskip("lightgbm")
    from miofind.db.base import PerfRecord

    db = FindDB(str(small_db))
    model = cm.train(cm.samples_from_db(db), rounds=80, rank_rounds=20, default_configs=True, perceptron=False)
    assert model.config_basis == "default" and model.meta["configs"] is True
    big = get_solver(FAST_LARGE)
    assert set(model.config_keys) >= set(big.default_config(TRAIN[0]))   # its default config's parameters
    # a trusted tuned config of the implicit GEMM for the asked problem, unlike its default
    p = TEST[0]
    default = cm.default_config(big, p)
    tuned = dict(default, BM=128 if default["BM"] != 128 else 64)
    db.store_perf([PerfRecord(DEV.db_name, p.key(), FAST_LARGE, tuned, 1.0, package_version=__version__,
                              kernel_hash=trust_key(big), cuda_version="13.0")])
    db.close()
    model.save(cm.model_path_for(small_db))
    asked, rank = [], cm.CostModel.rank
    monkeypatch.setattr(cm.CostModel, "rank", lambda self, q, pairs, *a: asked.append(pairs) or rank(self, q, pairs, *a))
    res = _immediate(small_db, monkeypatch, p)
    assert res.predicted and res.basis == "model" and res.model_version == model.version
    assert [c for s, c in asked[0] if s.id == FAST_LARGE] == [default]   # asked with the default config
    by_id = {s.solver_id: s for s in res}
    assert by_id[FAST_LARGE].config == tuned   # the solution runs the tuned config ...
    cands = [get_solver(s) for s in by_id]
    times, order = model.rank(p, [(s, cm.default_config(s, p)) for s in cands])   # ... the model saw the default
    assert [by_id[s.id].time_ms for s in cands] == pytest.approx(times)
    assert [s.solver_id for s in res] == [cands[i].id for i in order]


def test_cli_train_model_without_config_features_and_conflicting_flags(small_db):
    pytest.importorskip("lightgbm")
    res = CliRunner().invoke(cli, ["db", "train-model", "--db", str(small_db), "--folds", "0", "--no-default-configs"])
    assert res.exit_code == 0 and "config features" not in res.output, res.output
    assert cm.CostModel.load(cm.model_path_for(small_db)).config_basis == "none"
    both = CliRunner().invoke(cli, ["db", "train-model", "--db", str(small_db), "--configs", "--default-configs"])
    assert both.exit_code != 0 and "choose one" in both.output and "Traceback" not in both.output
    tiles = CliRunner().invoke(cli, ["db", "train-model", "--db", str(small_db), "--folds", "0", "--tile-features"])
    assert tiles.exit_code == 0 and "tile features" in tiles.output, tiles.output
    assert cm.CostModel.load(cm.model_path_for(small_db)).tile_features
    bad = CliRunner().invoke(cli, ["db", "train-model", "--db", str(small_db), "--configs", "--tile-features"])
    assert bad.exit_code != 0 and "--tile-features" in bad.output and "Traceback" not in bad.output


def test_config_basis_of_older_model_files(trained, tuned_samples):
    model, _ = trained
    assert model.config_basis == "none"
    meta = {k: v for k, v in model.meta.items() if k != "config_basis"}   # files before the field
    assert cm.CostModel(model.trees, meta).config_basis == "none"
    pytest.importorskip("lightgbm")
    tuner = cm.train(tuned_samples, rounds=10, configs=True, rank_rounds=0)
    assert tuner.config_basis == "tuned"
    del tuner.meta["config_basis"]
    assert tuner.config_basis == "tuned"


def test_tile_values_count_the_blocks_and_their_waves():
    # F: M = N*Ho*Wo = 8*14*14 = 1568, N = K = 96; BM 64 x BN 64: 25 x 2 = 50 blocks, one wave of 132
    p = ProblemDescription.make("F", n=8, c=64, k=96, in_size=(14, 14), filter_size=3, pads=1)
    tiling = cm._problem_parts(p)[4]
    assert tiling == (1568, 96, 1)
    assert cm._tile_values(tiling, {"BM": 64, "BN": 64}, 132) == (math.log2(50), 50 / 132)
    assert cm._tile_values(tiling, {"BM": 64, "BN": 64, "SPLITK": 4}, 132) == (math.log2(200), 200 / 264)
    assert cm._tile_values(tiling, {"BM": 64}, 132) == cm._tile_values(tiling, None, 132) == (-1.0, -1.0)
    assert cm._tile_values(tiling, {"BM": 64.0, "BN": 64}, 132) == (-1.0, -1.0)   # not an integer tiling
    # W: M = K/G, N = C/G * taps; 4 groups of 24 -> 16 outputs: 1 x 4 blocks per group (BN 64 of 216)
    w = ProblemDescription.make("W", n=8, c=96, k=64, in_size=(14, 14), filter_size=3, pads=1, groups=4)
    tiling = cm._problem_parts(w)[4]
    assert tiling == (16, 24 * 9, 4)
    assert cm._tile_values(tiling, {"BM": 64, "BN": 64}, 132) == (math.log2(16), 16 / 132)


# -- the exit tables in C (``miofind._native``'s qs_score and qs_lookup) against numpy ---------------------------

@pytest.fixture
def native(monkeypatch):
    """``miofind._native`` with the exit tables' functions (MIOFIND_NATIVE unset: models made in the test use
    them), or a skip saying why there is none."""
    try:
        from miofind import _native
    except ImportError:
        pytest.skip("miofind._native is not built (no C compiler at install)")
    if not (hasattr(_native, "qs_score") and hasattr(_native, "qs_lookup")):
        pytest.skip("miofind._native is built without qs_score and qs_lookup (an older build)")
    monkeypatch.delenv("MIOFIND_NATIVE", raising=False)
    return _native


def _twins(model: "cm.CostModel", monkeypatch) -> tuple["cm.CostModel", "cm.CostModel"]:
    """``model``'s trees and meta as two models, the first scoring in C, the second with numpy
    (``MIOFIND_NATIVE=0`` while it is made)."""
    t = model.trees
    out = []
    for switch in ("1", "0"):
        with monkeypatch.context() as m:
            m.setenv("MIOFIND_NATIVE", switch)
            trees = cm._Trees(t.feature, t.threshold, t.children, t.value, t.roots, t.depth)
            out.append(cm.CostModel(trees, model.meta))
    assert out[0].trees.exits.native is not None and out[1].trees.exits.native is None
    return out[0], out[1]


def _same_answers(a: "cm.CostModel", b: "cm.CostModel", p, pairs):
    """``a`` (C) and ``b`` (numpy) answer ``p`` alike: equal times and order, and ranking scores within 1e-9.

    qs_score adds each row's leaf values in numpy's pairwise order (ndarray.sum, ufunc.reduceat), so the sums
    are equal bit for bit and so are the times; 1e-9 relative is the contract (another summation order of the
    same 750 leaves rounds within it)."""
    ta, oa = a.rank(p, pairs)
    tb, ob = b.rank(p, pairs)
    assert ta == tb and oa == ob, p.key()
    if a.rank_trees:
        np.testing.assert_allclose(a._evaluate(p, pairs, 132)[1], b._evaluate(p, pairs, 132)[1], rtol=1e-9, atol=0)


def test_c_scorer_equals_numpy_on_trained_models(native, trained, ranked, monkeypatch):
    for model in (trained[0], ranked[0]):   # the regression trees alone (no cut), and with a ranking forest
        c, twin = _twins(model, monkeypatch)
        for p in TEST + TRAIN:
            _same_answers(c, twin, p, _three())
            _same_answers(c, twin, p, _three()[1:])
            assert c.rank(p, _three()) == model.rank(p, _three())


def test_c_scorer_equals_numpy_with_config_rows_and_tile_rows(native, tuned_samples, monkeypatch):
    pytest.importorskip("lightgbm")
    c, twin = _twins(cm.train(tuned_samples, rounds=61, configs=True, rank_rounds=20, tile_features=True), monkeypatch)
    # 4 configs get a joined row each, the rest their config columns' rows (``more``)
    monkeypatch.setattr(cm._Exits, "MAX_BOUNDED", 4)
    rng = np.random.default_rng(9)
    for p in TEST + TRAIN[::5]:
        pairs = _pairs_with_configs(rng, 5)
        _same_answers(c, twin, p, pairs)
        assert c.predict_ms(p, pairs) == list(_descent_ms(c, p, pairs))
    assert c.trees.exits._bounded == 4 and twin.trees.exits._bounded == 4


def test_c_scorer_equals_numpy_on_the_shipped_db(native, monkeypatch):
    db, model = _shipped()
    c, twin = _twins(model, monkeypatch)
    by_key = {}
    for r in db.iter_records(None):
        by_key.setdefault(r.problem_key, []).append(r)
    db.close()
    keys = sorted(by_key)[::10]
    assert len(keys) >= 300
    for key in keys:
        p, recs = cm.parse_problem_key(key), by_key[key]
        solvers = [get_solver(r.solver_id) for r in recs]
        # as a miss (default configs), as recorded, and immediate mode's candidates without the naive solvers
        _same_answers(c, twin, p, [(s, _default(s, p)) for s in solvers])
        _same_answers(c, twin, p, [(s, r.config) for s, r in zip(solvers, recs)])
        own = [(s, _default(s, p)) for s in solvers if not s.is_reference]
        if own:
            _same_answers(c, twin, p, own)


def test_qs_score_equals_the_numpy_score_on_random_rows_and_refuses_bad_rows(native):
    model = _config_model(ntrees=61)   # an odd forest: the table has a padding column
    exits = model.trees.exits
    assert exits.native is not None and exits.table.shape[1] == 62
    rng = np.random.default_rng(4)
    rows = exits._used
    for n, k, width in ((1, 2, 0), (7, 2, 3), (5, 3, 0), (3, 1, 2)):
        per_row = [rng.integers(0, rows, n).tolist() for _ in range(k)]
        common = rng.integers(0, rows, 9).tolist()
        more = rng.integers(0, rows, (n, width)).tolist() if width else None
        for cut in (None, 1, 30, 60):
            got = exits.score(per_row, common, more, cut)
            exits.native = None   # numpy takes at least two per-row lists: the one again
            try:
                want = exits.score(per_row + [per_row[0]] if k == 1 else per_row, common, more, cut)
            finally:
                exits.native = native.qs_score
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    table, values, table_at, nrows, width, values_at = exits._native_args
    args = [table_at, nrows, width, values_at, exits.ntrees, None, [0], [[1], [2]], None]
    with pytest.raises(IndexError, match="out of range"):
        native.qs_score(*args[:6], [nrows], *args[7:])
    with pytest.raises(IndexError, match="out of range"):
        native.qs_score(*args[:7], [[1], [-1]], None)
    with pytest.raises(ValueError, match="cut"):
        native.qs_score(*args[:5], exits.ntrees, *args[6:])
    with pytest.raises(ValueError, match="unequal"):
        native.qs_score(*args[:7], [[1, 2], [2]], None)
    with pytest.raises(TypeError, match="9 arguments"):
        native.qs_score(*args[:8])


def test_qs_lookup_is_bisect_left(native):
    from bisect import bisect_left

    rng = np.random.default_rng(6)
    look = []
    for f in (0, 3, 4, 9):
        th = sorted(rng.choice([-2.0, -0.5, 0.0, 0.5, 1.0, 2.5, 7.0], size=int(rng.integers(1, 6))).tolist())
        look.append((f, th, rng.integers(0, 1000, len(th) + 1).tolist()))
    rows = native.qs_lookup(look)
    for values in ([float(v) for v in rng.choice([-3.0, -2.0, -0.5, 0.0, 0.25, 1.0, 2.5, 7.0, 9.0], 10)]
                   for _ in range(200)):
        values[int(rng.integers(10))] = float(rng.choice([math.inf, -math.inf, math.nan]))
        assert rows(values) == [r[bisect_left(th, values[f])] for f, th, r in look]
    with pytest.raises(ValueError, match="at least 10"):
        rows([0.0] * 9)
    with pytest.raises(ValueError, match="one more row"):
        native.qs_lookup([(0, [1.0, 2.0], [0, 1])])


def test_native_off_scores_with_numpy(native, monkeypatch):
    on = _config_model()
    monkeypatch.setenv("MIOFIND_NATIVE", "0")
    off = _config_model()
    exits = off.trees.exits
    assert on.trees.exits.native is not None and exits.native is None and exits._native_lookup is None

    def refuse(*_):
        raise AssertionError("the C scorer was called with MIOFIND_NATIVE=0")

    monkeypatch.setattr(native, "qs_score", refuse)   # a model made before keeps the one it took
    monkeypatch.setattr(native, "qs_lookup", refuse)
    p = ProblemDescription.make("F", n=16, c=96, k=96, in_size=(40, 40), filter_size=3, pads=1)
    from miofind.find import candidates
    pairs = [(s, _default(s, p)) for s in candidates(p, with_naive=True)[0]]
    assert off.rank(p, pairs)[0] == list(_descent_ms(off, p, pairs))
    _same_answers(on, off, p, pairs)
    assert cm.CostModel(off.trees, off.meta).rank(p, pairs) == off.rank(p, pairs)   # no C lookup either


# -- neighbour features (miofind.neighbours) ------------------------------------------------------------------

def _nb_table(k=2):
    from miofind import neighbours as nbr

    records = {p.key(): [(sid, rule_time(p, sid)) for sid in (FAST_SMALL, FAST_LARGE)] for p in TRAIN}
    records[TRAIN[0].key()].append((SLOW, rule_time(TRAIN[0], SLOW)))   # the naive solver on one problem only
    return nbr, nbr.NeighbourTable.from_records(records, cm.parse_problem_key, k=k), records


def test_neighbour_features_come_from_the_nearest_records_of_the_solver():
    nbr, table, records = _nb_table()
    assert nbr.FEATURES == ("nb1_rel", "nb1_time", "nb1_dist", "nbk_rel", "nbk_time")
    p = problem(64, 28, k=64, n=4)   # TRAIN holds it at n=8: distance 1 (log2 of the batch) and nothing nearer
    near = problem(64, 28, k=64)
    base = np.array([-2.0, -1.5, -1.0])
    f = table.features(p, [FAST_SMALL, FAST_LARGE, SLOW], base)
    best = min(rule_time(near, s) for s in (FAST_SMALL, FAST_LARGE))
    for j, sid in enumerate((FAST_SMALL, FAST_LARGE)):
        t = rule_time(near, sid)
        assert f[j, 0] == pytest.approx(math.log2(t / best))
        assert f[j, 1] == pytest.approx(math.log10(t * p.flops() / near.flops()) - base[j])   # FLOP-scaled, minus base
        assert f[j, 2] == pytest.approx(1.0)
    # the naive solver's only record is TRAIN[0]'s, far away but of the same kind; a solver never seen: MISSING
    assert f[2, 2] > 1.0 and f[2, 0] == pytest.approx(math.log2(rule_time(TRAIN[0], SLOW) /
                                                                min(rule_time(TRAIN[0], s) for s in (FAST_SMALL, FAST_LARGE))))
    assert tuple(table.features(p, ["GemmFwd1x1_0_1"], [0.0])[0]) == nbr.MISSING
    # another kind (backward data) has no neighbours here
    bwd = ProblemDescription.make("B", n=4, c=64, k=64, in_size=(28, 28), filter_size=3, pads=1)
    assert (table.features(bwd, [FAST_SMALL], [0.0]) == np.asarray(nbr.MISSING)).all()
    # dropping the nearest problem moves nb1 to the next; the k = 2 mean weighs 1 / (1 + d)
    drop = np.array([k == near.key() for k in table.keys])
    g = table.features(p, [FAST_SMALL], base[:1], drop)
    assert g[0, 2] > 1.0
    got = table.features(p, [FAST_SMALL], base[:1])
    d = table.distances(p)[1]
    order = np.argsort(d, kind="stable")[:2]
    keys = [table.keys[table._by_kind[table._kind_index[nbr._kind_key(p)]].idx[i]] for i in order]
    rels = [math.log2(dict(records[k])[FAST_SMALL] / min(t for _, t in records[k])) for k in keys]
    w = 1 / (1 + d[order])
    assert got[0, 3] == pytest.approx(float(w @ rels / w.sum()))


def test_neighbour_table_round_trips_through_arrays():
    nbr, table, _ = _nb_table(k=3)
    z = table.arrays()
    back = nbr.NeighbourTable.from_arrays(z)
    assert back.k == 3 and back.kinds == table.kinds and back.solvers == table.solvers
    for p in TEST:
        sids = [FAST_SMALL, FAST_LARGE, SLOW]
        assert (back.features(p, sids, [0.0] * 3) == table.features(p, sids, [0.0] * 3)).all()


def test_train_exclusion_drops_every_layer_of_the_presets_a_problem_is_in():
    from miofind import neighbours as nbr
    from miofind.models import model_problems

    r50 = model_problems("resnet50", batch=32, directions="F")
    vgg = model_problems("vgg16", batch=32, directions="F")
    other = problem(24, 10, k=96)   # no preset's layer
    keys = [q.key() for q in r50[:6] + vgg[:6]] + [other.key(), problem(24, 10, k=96, n=4).key(), TRAIN[0].key()]
    table = nbr.NeighbourTable.from_records({k: [(FAST_SMALL, 1.0)] for k in keys}, cm.parse_problem_key)
    ex = nbr.TrainExclusion(table, cm.parse_problem_key, *nbr.preset_layers())
    r50_at_1 = model_problems("resnet50", batch=1, dtypes=("FP16",), layouts=("NHWC",), directions="W")[3]
    drop = ex(r50_at_1)   # a ResNet-50 layer at another batch, dtype, layout and direction: every ResNet layer goes
    got = {k for k, d in zip(table.keys, drop) if d}
    assert got == {q.key() for q in r50[:6]} - {k for k in keys if k not in table.keys}
    drop = ex(problem(24, 10, k=96, n=2))   # no preset's layer: its own layer at any batch goes, nothing else
    assert {k for k, d in zip(table.keys, drop) if d} == {other.key(), problem(24, 10, k=96, n=4).key()}


def test_neighbour_model_scores_as_its_rows_and_round_trips(small_db, tmp_path):
    pytest.importorskip("lightgbm")
    db = FindDB(str(small_db))
    samples = cm.samples_from_db(db)
    db.close()
    model = cm.train(samples, rounds=60, rank_rounds=20, neighbour_features=True, perceptron=False)
    assert model.neighbour_features and model.neighbours is not None
    assert model.meta["feature_names"][-5:] == ["nb1_rel", "nb1_time", "nb1_dist", "nbk_rel", "nbk_time"]
    assert model.n_features == model._nb_col + 5
    assert any(int(f) >= model._nb_col for f in model.trees.feature)   # the trees use them
    path = model.save(tmp_path / "nb.model.npz")
    back = cm.CostModel.load(path)
    assert back.neighbours is not None and back.version == model.version
    solvers = [get_solver(s) for s in (FAST_SMALL, FAST_LARGE, SLOW)]
    for p in TEST + TRAIN[::9]:
        pairs = [(s, None) for s in solvers]
        assert back.rank(p, pairs) == model.rank(p, pairs)
        np.testing.assert_allclose(model.predict_ms(p, pairs), _descent_ms(model, p, pairs), rtol=1e-12)
    # without neighbour features the model has none of it, and an older file without the table still loads
    plain = cm.train(samples, rounds=20, rank_rounds=0, neighbour_features=False, perceptron=False)
    assert not plain.neighbour_features and plain.neighbours is None and "nb1_rel" not in plain.meta["feature_names"]


def test_cli_train_model_with_neighbour_features(small_db):
    pytest.importorskip("lightgbm")
    res = CliRunner().invoke(cli, ["db", "train-model", "--db", str(small_db), "--folds", "2", "--neighbour-features"])
    assert res.exit_code == 0, res.output
    assert "neighbour features" in res.output and "2-fold cross-validation" in res.output
    m = cm.CostModel.load(cm.model_path_for(small_db))
    assert m.neighbour_features and m.neighbours is not None and len(m.neighbours.best) == len(TRAIN)


def test_c_neighbour_search_equals_numpy(native):
    """``nb_features`` in C gives ``_features_numpy``'s values bit for bit, with and without dropped problems,
    for solvers with and without records; refuses bad arguments with an error, not a crash."""
    nbr, table, _ = _nb_table(k=3)
    assert table._native is not None
    ex = nbr.TrainExclusion(table, cm.parse_problem_key, *nbr.preset_layers())
    sids = [FAST_SMALL, FAST_LARGE, SLOW, "GemmFwd1x1_0_1"]
    bases = [-2.5, -1.25, -0.5, -3.0]
    for p in TEST + TRAIN[::5]:
        for drop in (None, ex(p), np.arange(len(table.keys)) % 3 == 0):
            np.testing.assert_array_equal(table.features(p, sids, bases, drop),
                                          table._features_numpy(p, sids, bases, drop))
    sizes, shape, have, rel, tpf, n, ncols = table._by_kind[0].c_args
    good = (sizes, shape, have, rel, tpf, n, ncols, [0.0] * 5, [0] * 4, [0.0] * 4, [0], 2, 0, 1.0, [0.0], [0.0] * 5)
    assert len(native.nb_features(*good)) == 5 * 8
    for i, bad in ((10, [ncols]), (11, 0), (7, [0.0] * 4), (14, [])):
        args = list(good)
        args[i] = bad
        with pytest.raises((ValueError, IndexError)):
            native.nb_features(*args)
    with pytest.raises(TypeError):
        native.nb_features(*good[:-1])


# -- the perceptron (``train(perceptron=...)``): it states the times and joins the ranking's order -----------------


@pytest.fixture(scope="module")
def with_perceptron(trained):
    """The small DB's ranked model with a perceptron, trained the way immediate mode's models are by default."""
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    _, samples = trained
    return cm.train(samples, rounds=60, rank_rounds=20, default_configs=True)


def test_perceptron_is_the_immediate_mode_default_and_states_the_times(with_perceptron):
    model = with_perceptron
    assert model.perceptron is not None and model.meta["format"] == cm.FORMAT_PERCEPTRON
    assert model.meta["perceptron"]["hidden"] == list(cm.PERCEPTRON_HIDDEN)
    right, errs, roofline = 0, [], []
    for p in TEST:
        pairs = _three()
        times, order = model.rank(p, pairs)
        # the times are the perceptron's on the full feature rows, made without the rows
        x, base = model.rows(p, pairs)
        np.testing.assert_allclose(np.log10(times), base + model.perceptron.predict(x), rtol=0, atol=1e-12)
        # the order: the ranking forest's scores and the perceptron's log times, each standardised, summed
        score = model.trees.leaves(x)[:, len(model.trees.roots) - model.rank_trees:].sum(axis=1)
        z = lambda v: (v - v.mean()) / v.std()   # noqa: E731
        key = -z(score) + cm.PERCEPTRON_BLEND * z(np.log10(times))
        assert order == sorted(range(3), key=lambda i: key[i])
        truth = [rule_time(p, s.id) for s, _ in pairs]
        right += int(order[0] == int(np.argmin(truth)))
        errs += [abs(math.log10(t / m)) for t, m in zip(times, truth)]
        roofline += [abs(b - math.log10(m)) for b, m in zip(base, truth)]
    assert right >= len(TEST) - 2, right
    # times learnt: nearer the rule's than the roofline times the targets are relative to
    assert np.median(errs) < 0.5 * np.median(roofline), (np.median(errs), np.median(roofline))


def test_perceptron_round_trips_and_bad_perceptron_files(with_perceptron, tmp_path):
    model = with_perceptron
    again = cm.CostModel.load(model.save(tmp_path / "p.model.npz"))
    assert again.version == model.version and again.perceptron is not None
    for p in TEST[:4]:
        assert again.rank(p, _three()) == model.rank(p, _three())
    # a layer of the wrong width, a missing layer, a perceptron in a format 2 file: errors naming the file
    arrays = dict(np.load(tmp_path / "p.model.npz"))
    for name, change in (("w1", lambda a: a.pop("perceptron_w1")),
                         ("wide", lambda a: a.update(perceptron_w0=np.zeros((3, 4))))):
        bad = dict(arrays)
        change(bad)
        np.savez(tmp_path / f"bad-{name}.model.npz", **bad)
        with pytest.raises(cm.CostModelError, match=f"bad-{name}.model.npz.*perceptron"):
            cm.CostModel.load(tmp_path / f"bad-{name}.model.npz")
    old = dict(arrays, meta=np.asarray(json.dumps(dict(model.meta, format=2))))
    np.savez(tmp_path / "old.model.npz", **old)
    with pytest.raises(cm.CostModelError, match="format 2 file"):
        cm.CostModel.load(tmp_path / "old.model.npz")


def test_perceptron_times_without_rows_equal_the_rows_with_tiles_and_neighbours(tuned_samples):
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    model = cm.train(tuned_samples, rounds=20, rank_rounds=5, default_configs=True, tile_features=True,
                     neighbour_features=True, perceptron=True)
    rng = np.random.default_rng(5)
    for p in TEST[:6]:
        pairs = _pairs_with_configs(rng, 3)
        times = model.predict_ms(p, pairs)
        x, base = model.rows(p, pairs)
        np.testing.assert_allclose(np.log10(times), base + model.perceptron.predict(x), rtol=0, atol=1e-12)


def test_without_scikit_learn_the_trees_state_the_times(trained, monkeypatch, caplog, small_db):
    pytest.importorskip("lightgbm")
    _, samples = trained
    for name in ("sklearn", "sklearn.neural_network"):
        monkeypatch.setitem(sys.modules, name, None)   # `import sklearn` now fails
    with caplog.at_level(logging.WARNING, logger="miofind.costmodel"):
        model = cm.train(samples, rounds=10, rank_rounds=5)
    assert model.perceptron is None and model.meta["format"] == 2 and "scikit-learn" in caplog.text
    with pytest.raises(cm.CostModelError, match=r"scikit-learn.*miofind\[model\]"):
        cm.train(samples, rounds=10, rank_rounds=5, perceptron=True)
    res = CliRunner().invoke(cli, ["db", "train-model", "--db", str(small_db), "--folds", "0", "--perceptron"])
    assert res.exit_code != 0 and "scikit-learn" in res.output and "Traceback" not in res.output
    assert cm.train(samples, rounds=10, rank_rounds=0, configs=True).perceptron is None   # the tuner's: never


def test_cli_train_model_states_the_perceptron(small_db):
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    res = CliRunner().invoke(cli, ["db", "train-model", "--db", str(small_db), "--folds", "0"])
    assert res.exit_code == 0, res.output
    assert "perceptron (scikit-learn" in res.output and "states the times" in res.output
    assert cm.CostModel.load(cm.model_path_for(small_db)).perceptron is not None
    res = CliRunner().invoke(cli, ["db", "train-model", "--db", str(small_db), "--folds", "0", "--configs",
                                   "--perceptron"])
    assert res.exit_code != 0 and "--perceptron" in res.output and "Traceback" not in res.output


def test_perceptron_memo_grown_by_concurrent_predictions_agrees_with_sequential_ones(with_perceptron, tmp_path):
    import threading

    rng = np.random.default_rng(11)
    asks = [(TEST[i % len(TEST)], _pairs_with_configs(rng, 4)) for i in range(120)]   # > 64 memo rows: it grows
    want = [with_perceptron.rank(p, pairs) for p, pairs in asks]
    shared = cm.CostModel.load(with_perceptron.save(tmp_path / "c.model.npz"))   # a fresh memo
    got, errors = [None] * len(asks), []

    def work(start):
        try:
            for i in range(start, len(asks), 4):
                got[i] = shared.rank(*asks[i])
        except Exception as e:   # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(shared._perceptron_rows) > 64
    for (gt, go), (wt, wo) in zip(got, want):
        assert go == wo
        np.testing.assert_allclose(gt, wt, rtol=1e-12)


def test_c_perceptron_equals_numpy_and_refuses_bad_layers(native, with_perceptron, tmp_path, monkeypatch):
    if not hasattr(native, "mlp_score"):
        pytest.skip("miofind._native is built without mlp_score (an older build)")
    path = with_perceptron.save(tmp_path / "n.model.npz")
    c, py = cm.CostModel.load(path), cm.CostModel.load(path)
    rng = np.random.default_rng(7)
    asks = [(p, _pairs_with_configs(rng, 3)) for p in TEST]
    c.rank(*asks[0])   # its perceptron's parts made with MIOFIND_NATIVE unset: in C
    with monkeypatch.context() as m:
        m.setenv("MIOFIND_NATIVE", "0")
        py.rank(*asks[0])
    assert c._perceptron_parts[5] is native and py._perceptron_parts[5] is None
    for p, pairs in asks:
        (tc, oc), (tp, op) = c.rank(p, pairs), py.rank(p, pairs)
        assert oc == op
        np.testing.assert_allclose(tc, tp, rtol=1e-12)
    rows, wp, wb = np.ones((3, 4)), np.ones((1, 4)), np.ones(4)   # 4 units; kept alive through the calls
    w_out, b_out, w_two = np.ones((4, 1)), np.zeros(1), np.ones((2, 1))
    addr = cm._address
    out = [addr(w_out), addr(b_out), 4, 1]
    got = np.frombuffer(native.mlp_score(addr(rows), 3, 4, [2], [1.0], addr(wp), [0.5], addr(wb), out))
    assert got.tolist() == [0.5 + 4 * (1 + 1 + 0.5)]   # base + the sum of relu(row + pf . wp + base * wb)
    with pytest.raises(ValueError, match="inputs are not the outputs"):   # a layer taking 2 of the 4 units
        native.mlp_score(addr(rows), 3, 4, [0], [1.0], addr(wp), [0.5], addr(wb), [addr(w_two), addr(b_out), 2, 1])
    with pytest.raises(IndexError, match="out of range"):
        native.mlp_score(addr(rows), 3, 4, [3], [1.0], addr(wp), [0.5], addr(wb), out)
    with pytest.raises(ValueError, match="one value per slot"):
        native.mlp_score(addr(rows), 3, 4, [0, 1], [1.0], addr(wp), [0.5], addr(wb), out)
