"""bench/first_step.py without a GPU: the in-step imports read from ``-X importtime``, the per-run summary and its
report. The benchmark itself runs on the GPU only."""

from __future__ import annotations


import pytest
from bench_scripts import load_bench

@pytest.fixture(scope="module")
def fs():
    return load_bench("first_step")


def test_imports_counted_between_the_marks_top_level_only(fs):
    err = "\n".join([
        "import time: self [us] | cumulative | imported package",
        "import time:       100 |        900 | torch",              # before the step: not counted
        fs.MARK_START,
        "import time:       300 |        400 |   cupy._core",       # nested: inside cupy's cumulative
        "import time:      5000 |     125000 | cupy",
        "import time:        50 |      18000 | cudnn",
        "some log line",
        fs.MARK_END,
        "import time:        10 |       7000 | atexit_module",      # after the step: not counted
    ])
    assert fs._imports(err) == {"cupy": 125.0, "cudnn": 18.0}


def _run(first, problems, calls, imports):
    return {"first_s": first, "forward_s": first / 2, "backward_s": first / 3, "optimizer_s": 0.01,
            "imports_ms": imports, "stats": {"lookups": len(problems)},
            "problems": [{"problem": f"p{i}", "solver": s, "choose_ms": c, "find_ms": f}
                         for i, (s, c, f) in enumerate(problems)],
            "first_calls": calls, "totals": {"find_ms": sum(f for _, _, f in problems)}}


def test_summary_takes_medians_over_runs_and_sums_per_solver(fs):
    runs = [_run(0.8, [("A", 10.0, 2.0), ("A", 6.0, 1.0), ("B", 3.0, 1.0)], {"A": [2, 4.0], "B": [1, 1.0]},
                 {"cupy": 100.0}),
            _run(0.6, [("A", 20.0, 4.0), ("A", 2.0, 1.0), ("B", 5.0, 2.0)], {"A": [2, 6.0], "B": [1, 3.0]},
                 {"cupy": 80.0, "cudnn": 20.0}),
            _run(1.0, [("A", 30.0, 6.0), ("A", 4.0, 1.0), ("B", 4.0, 3.0)], {"A": [2, 2.0], "B": [1, 2.0]},
                 {"cupy": 120.0})]
    s = fs.summary(runs)
    assert s["first_s"] == 0.8 and s["imports_ms"] == 100.0
    assert s["choose_ms"] == 27.0                  # per run 19, 27, 38 ms: the median
    assert s["first_call_ms"] == 5.0               # per run 5, 9, 4 ms
    ps = s["per_solver"]
    assert ps["A/choose"] == 22.0 and ps["A/find"] == 5.0 and ps["A/n"] == 2 and ps["A/calls"] == 2
    assert ps["B/choose"] == 4.0 and ps["B/first_call"] == 2.0
    md = fs.markdown({"m/c/miofind/cold": {"model": "m", "config": "c", "backend": "miofind", "prewarm": False,
                                           "runs": runs, "summary": s}}, "python bench/first_step.py --out x")
    assert "| m | c | miofind | False | 0.800 |" in md and "| A | 2 | 22.0 | 5.0 | 2 |" in md


def test_a_heuristic_run_has_no_miofind_columns(fs):
    run = {"first_s": 0.5, "forward_s": 0.3, "backward_s": 0.15, "optimizer_s": 0.02, "imports_ms": {}}
    s = fs.summary([run])
    assert "per_solver" not in s and s["imports_ms"] == 0
    md = fs.markdown({"m/c/heuristic/cold": {"model": "m", "config": "c", "backend": "heuristic", "prewarm": False,
                                             "runs": [run], "summary": s}}, "cmd")
    assert "| m | c | heuristic | False | 0.500 |" in md and "per solver" not in md


def test_steady_steps_give_the_first_step_over_their_median(fs):
    runs = [{"first_s": f, "forward_s": f / 2, "backward_s": f / 3, "optimizer_s": 0.01, "imports_ms": {},
             "steady_s": st, "first_over_steady": f / st} for f, st in ((0.6, 0.030), (0.9, 0.025), (0.7, 0.035))]
    s = fs.summary(runs)
    assert s["steady_s"] == 0.030 and s["first_over_steady"] == pytest.approx(20.0)    # per run 20, 36, 20
    md = fs.markdown({"m/c/null/cold": {"model": "m", "config": "c", "backend": "null", "prewarm": False,
                                        "runs": runs, "summary": s}}, "cmd")
    assert md.rstrip().splitlines()[-1].endswith("| 3 | 30.00 | 20.0x |")
    s = fs.summary(runs[:2] + [{k: v for k, v in runs[2].items() if k not in ("steady_s", "first_over_steady")}])
    assert "steady_s" not in s      # a run without steady steps: no ratio from the others alone
