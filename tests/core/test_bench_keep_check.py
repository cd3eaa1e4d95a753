"""bench/keep_check.py without a GPU: its summary judges a first answer against the final one. The check itself
runs on the GPU only."""

from __future__ import annotations


import pytest
from bench_scripts import load_bench

@pytest.fixture(scope="module")
def kc():
    return load_bench("keep_check")


def row(first, final, deferred=(), ms=20.0):
    return {"key": "k", "first": [list(x) for x in first], "final": [list(x) for x in final],
            "deferred": list(deferred), "first_ms": ms}


def test_summary_counts_a_postponed_fastest(kc):
    rows = [row([("A", 1.0)], [("A", 1.0), ("B", 2.0)]),
            row([("A", 1.0)], [("B", 0.5), ("A", 1.0)], deferred=["B"]),
            row([("C", 3.0)], [("C", 2.0), ("D", 2.5)])]     # a specialised build made C faster: still the fastest
    s = kc.summary(rows)
    assert "3 judged, 1 with a deferral (1 solvers)" in s
    assert "final fastest in 1 (33.3%)" in s
    assert "mean slowdown 33.33%" in s and "worst 2.00x" in s


def test_summary_leaves_out_failed_problems(kc):
    rows = [row([("A", 1.0)], [("A", 1.0)]), {"key": "x", "first": [], "final": [], "deferred": [], "first_ms": 5.0}]
    s = kc.summary(rows)
    assert s.startswith("2 problems, 1 judged") and "in 0 (0.0%)" in s and "worst 1.00x" in s
    assert kc.summary([]) == "no problems"
