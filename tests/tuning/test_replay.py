"""Replaying strategies on known times (miofind.tuning.replay) and bench/tune_order_gpu.py's replay of
a sweep file, on the CPU with synthetic times."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from bench_scripts import load_bench

from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.tuning.replay import configs_to, replay
from miofind.tuning.tuner import config_space

ROOT = Path(__file__).resolve().parents[2]
SPACE = [{"a": a, "b": b} for a in (4, 1, 2, 8, 16) for b in (32, 16, 64, 128)]   # the default (4, 32) first
TIMES = [1.0 + abs(math.log2(c["a"] / 16)) + abs(math.log2(c["b"] / 128)) / 2 for c in SPACE]   # best: (16, 128)
BEST = SPACE.index({"a": 16, "b": 128})


def test_exhaustive_replay_measures_the_space_in_order_and_counts_to_the_batch_end():
    batches = replay("exhaustive", SPACE, TIMES, batch=6)
    assert batches == [list(range(i, min(i + 6, 20))) for i in range(0, 20, 6)]
    assert configs_to(batches, TIMES) == {"config": BEST + 1, "batch": min(20, 6 * (BEST // 6 + 1))}


def test_within_counts_the_first_config_near_enough():
    times = [5.0, 3.0, 1.01, 2.0, 1.0]
    space = [{"x": i} for i in range(5)]
    b = replay("exhaustive", space, times, batch=2)
    assert configs_to(b, times) == {"config": 5, "batch": 5}
    assert configs_to(b, times, 0.02) == {"config": 3, "batch": 4}
    assert configs_to([[0, 1]], times) == {"config": None, "batch": None}   # never reached
    assert configs_to(b, [math.inf] * 5) == {"config": None, "batch": None}


def test_guided_replay_descends_from_the_default_to_the_best_and_repeats_nothing():
    batches = replay("guided", SPACE, TIMES, batch=4, seed=2)
    seen = [i for b in batches for i in b]
    assert seen[0] == 0 and sorted(seen) == list(range(20))   # no budget: the whole space, once each
    got = configs_to(batches, TIMES)
    # the times fall towards the best along single-parameter steps: descent reaches it without a restart
    assert got["config"] is not None and got["config"] <= 12


def test_budgets_cut_the_replay():
    b = replay("random", SPACE, TIMES, batch=16, seed=1, max_configs=5)
    assert sum(map(len, b)) == 5 and b[0][0] == 0
    with pytest.raises(ValueError, match="times: 3 values for a space of 20"):
        replay("guided", SPACE, TIMES[:3])


class Perfect:
    """A model stand-in predicting the true times."""

    config_keys = ("a", "b")
    meta = {"version": "perfect"}

    def supports(self, problem, ids):
        return True

    def predict_ms(self, problem, pairs, sm_count=132):
        return [TIMES[SPACE.index(c)] for _, c in pairs]


def test_model_replay_with_a_perfect_model_reaches_the_best_right_after_the_default():
    p = ProblemDescription.make("F", n=8, c=16, k=16, in_size=(8, 8), filter_size=3, pads=1)
    batches = replay("model", SPACE, TIMES, batch=1, problem=p, solver=get_solver("ConvImplicitGemmFwd"),
                     model=Perfect())
    assert configs_to(batches, TIMES) == {"config": 2, "batch": 2}
    assert [TIMES[i] for b in batches[1:] for i in b] == sorted(TIMES[1:])


def _gpu_script():
    return load_bench("tune_order_gpu")


def test_gpu_script_replays_a_sweep_file_on_the_cpu(tmp_path):
    g = _gpu_script()
    name, p, sids = g.problems(["r50_256to256_14_3x3_fp16_F"])[0]
    s = get_solver(sids[0])
    space = config_space(p, s)
    # synthetic sweep: the fastest is the config with the largest BM * BN, a few fail
    times = [None if i % 9 == 4 else 1.0 + 1.0 / (c["BM"] * c["BN"]) * 1e4 + 0.001 * i for i, c in enumerate(space)]
    sweep = {"device": "synthetic", "sweeps": [
        {"problem": name, "key": p.key(), "solver": s.id, "space": space, "times": times, "swept": len(space),
         "stopped": ""},
        {"problem": name, "key": p.key(), "solver": s.id, "space": space,
         "times": times[:10] + [None] * (len(space) - 10),
         "swept": 10, "stopped": "time cap"}]}
    src = tmp_path / "sweep.json"
    src.write_text(json.dumps(sweep))
    g.main(["--replay", str(src), "--out", str(tmp_path / "out"), "--seeds", "3", "--batches", "16,1"])
    res = json.loads((tmp_path / "out" / "tune_order_gpu.json").read_text())
    full, cut = res["entries"]
    assert full["complete"] and not cut["complete"] and cut["swept"] == 10
    assert full["held_out"] is True and full["model_fallback"] is False
    assert full["failed"] == sum(t is None for t in times)
    finite = [t if t is not None else math.inf for t in times]
    assert full["best_ms"] == min(finite) and full["best_config"] == space[finite.index(min(finite))]
    r = full["replay"]["1"]
    assert len(r["guided"]["runs"]) == 3 and len(r["model"]["runs"]) == 1
    for strat in ("guided", "random", "model"):
        for run in r[strat]["runs"]:
            assert 1 <= run["within_2pct"]["config"] <= run["best"]["config"] <= len(space)
            assert run["first"] == [0]   # batch 1: the default first
    assert res["totals"]["solvers"] == 1   # the incomplete sweep is left out of the totals
    assert res["totals"]["16"]["best_batch"]["guided"] == full["replay"]["16"]["guided"]["best_batch"]
    assert res["totals"]["1"]["best_config"]["model"] == r["model"]["best_config"]
    md = (tmp_path / "out" / "tune_order_gpu.md").read_text()
    assert "(incomplete sweep)" in md and "Total over 1 complete sweeps" in md
    assert not (tmp_path / "out" / "sweep.json").exists()   # a replay does not rewrite the sweep


def test_gpu_script_rejects_bad_options(tmp_path):
    g = _gpu_script()
    with pytest.raises(SystemExit, match="--batches"):
        g.main(["--out", str(tmp_path), "--batches", "16,x"])
    with pytest.raises(SystemExit, match="--problems: unknown nope"):
        g.problems(["nope"])
    with pytest.raises(SystemExit, match="--model"):
        g.main(["--out", str(tmp_path), "--model", str(tmp_path / "missing.npz"), "--replay", "x"])


def test_the_budget_table_replays_each_tuned_solvers_search(tmp_path):
    """bench/tune_budget.py on a tune's --json-out (a tune on the CPU with synthetic times): per solver and budget, the
    best the budget keeps over the run's own best, the configs it measures; a budget wider than the run's is refused."""
    import dataclasses
    import subprocess
    import sys

    from fakes import DEV, FakeMeasurer, fake_finder, fake_time
    from miofind.db import FindDB
    from miofind.db.system import Overlay
    from miofind.tuning import Tuner, TuneOptions
    from miofind.tuning.replay import replay_trace

    opts = TuneOptions(strategy="random", max_configs=120, patience=40, seed=5, solvers=("ConvImplicitGemmHopperWrw",),
                       solver_budgets=False)
    outs = []
    with FindDB(str(tmp_path / "u.sqlite")) as u:
        dbs = Overlay(u)
        t = Tuner(dbs, DEV, opts, measurer=FakeMeasurer, finder=fake_finder(dbs))
        for c in (128, 256):
            p = ProblemDescription.make("W", n=32, c=c, k=c, in_size=(28, 28), filter_size=3, pads=1, layout="NHWC",
                                        dtype="FP16")
            outs.append(dataclasses.asdict(t.tune_problem(p)))
    run = tmp_path / "tune.json"
    run.write_text(json.dumps({"options": opts.as_json(), "outcomes": outs}))
    searches = [s for o in outs for s in o["solvers"]]
    assert len(searches) == 2 and all(s["budget"] == {"max_configs": 120, "patience": 40, "max_seconds": None}
                                      for s in searches)
    got = subprocess.run([sys.executable, str(ROOT / "bench" / "tune_budget.py"), str(run), "--budgets", "16/8,120/40",
                          "--out", str(tmp_path / "b.md")], capture_output=True, text=True, cwd=ROOT)
    assert got.returncode == 0, got.stderr
    rows = [r.split("|") for r in (tmp_path / "b.md").read_text().splitlines() if "ConvImplicitGemmHopperWrw" in r]
    tight, full = ([x.strip() for x in r] for r in rows)
    assert full[3] == "120/40" and full[4] == "1.000" and full[5] == "2" and int(full[6]) == sum(s["tried"]
                                                                                                   for s in searches)
    ratio = 1.0
    for s in searches:
        b = replay_trace(s["trace"], s["checks"], max_configs=16, patience=8)
        ratio *= b["best_ms"] / min(fake_time(s["solver_id"], e[2]) for e in s["trace"] if e[1] is not None)
    assert tight[3] == "16/8" and tight[4] == f"{ratio ** 0.5:.3f}" and int(tight[6]) <= 32
    wide = subprocess.run([sys.executable, str(ROOT / "bench" / "tune_budget.py"), str(run), "--budgets", "400/40"],
                          capture_output=True, text=True, cwd=ROOT)
    assert wide.returncode != 0 and "looser than the run's" in wide.stderr
