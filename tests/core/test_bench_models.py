"""bench/bench_models.py without a GPU: ``first_iteration``'s timing of a fresh process (its result, and how long its
exit took after it). The benchmark itself runs on the GPU only."""

from __future__ import annotations

import subprocess
import sys

import pytest
from bench_scripts import load_bench

@pytest.fixture(scope="module")
def bm():
    return load_bench("bench_models")


def _child(monkeypatch, bm, code):
    real = subprocess.Popen
    monkeypatch.setattr(bm.subprocess, "Popen", lambda cmd, **kw: real([sys.executable, "-c", code], **kw))


def test_first_iteration_times_the_exit_after_the_result(bm, monkeypatch):
    _child(monkeypatch, bm, "import json, time, sys\nprint('a log line')\nprint(json.dumps({'first_s': 1.5}), "
                            "flush=True)\ntime.sleep(0.6)\n")
    out = bm.first_iteration("resnet50", "train48-fp32", "miofind", {})
    assert out["first_s"] == 1.5
    assert 0.55 <= out["exit_s"] <= out["process_s"] < 30


def test_first_iteration_reports_a_failed_child(bm, monkeypatch):
    _child(monkeypatch, bm, "import sys\nsys.stderr.write('it broke here')\nsys.exit(3)\n")
    with pytest.raises(RuntimeError, match="it broke here"):
        bm.first_iteration("resnet50", "train48-fp32", "miofind", {})
