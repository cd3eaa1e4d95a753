"""The CLI through click's CliRunner, on a machine with or without a GPU (GPU presence is faked
away where a test needs 'no GPU')."""

import json
import time

import pytest
from click.testing import CliRunner

from miofind import cli
from miofind.trust import trust_key
from miofind.device import DeviceInfo, NoGPUError

ARGS = "conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1".split()


@pytest.fixture
def no_gpu(monkeypatch):
    import miofind.device as dev

    def raise_():
        raise NoGPUError("no GPU: no CUDA device is visible")
    monkeypatch.setattr(dev, "current_device", lambda *a: raise_())


def run(*args):
    return CliRunner().invoke(cli.main, list(args))


def test_solvers_lists_registry():
    r = run("solvers")
    assert r.exit_code == 0
    for sid in ("ConvDirectNaiveConvFwd", "ConvDirectNaiveConvBwd", "ConvDirectNaiveConvWrw", "ConvDirectTiledFwd"):
        assert sid in r.output


def test_solvers_explains_problem():
    r = run("solvers", *ARGS, "-F", "1", "-I", "NHWC", "-O", "NHWC", "-f", "NHWC")
    assert r.exit_code == 0, r.output
    assert "NCHW only" in r.output and "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F" in r.output


@pytest.mark.parametrize("cmd", [["find", *ARGS], ["run", *ARGS, "-F", "1"], ["tune", *ARGS]])
def test_gpu_commands_without_gpu(no_gpu, cmd):
    r = run(*cmd)
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("miofind: no GPU: no CUDA device is visible; without a GPU")
    assert "--device sm_90-132" in lines[0]


@pytest.mark.parametrize("args,msg", [
    (["find", "conv", "-n", "x"], "--batchsize='x': expected an integer"),
    (["find", "conv", "--bogus", "1"], "--bogus: unknown"),
    (["find", "convint4"], "command='convint4'"),
    (["find", "conv", "-c", "6", "-g", "4"], "--group_count=4"),
    (["find"], "expected MIOpenDriver arguments"),
    (["solvers", "conv", "-H", "2", "-W", "2", "-y", "5", "-x", "5"], "filter_size"),
])
def test_bad_driver_args_are_one_clear_line(args, msg):
    r = run(*args)
    assert r.exit_code == 1
    assert msg in r.output and "Traceback" not in r.output


def test_tune_file_errors_name_the_line(tmp_path):
    f = tmp_path / "lines.txt"
    f.write_text("# resnet\nconv -n 1 -c 8 -k 8 -H 8 -W 8\nconv -n 1 -c 8 -k 8 -Z\n")
    r = run("tune", "--file", str(f))
    assert r.exit_code == 1 and f"{f}:3" in r.output


def test_db_commands(tmp_db):
    r = run("db", "path", "--user")
    assert r.exit_code == 0 and r.output.strip().endswith("finddb.sqlite")
    from miofind.db import FindDB, Record
    db = FindDB(tmp_db)
    db.store([Record(device="sm_90-132", device_name="H100", problem_key="64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F",
                     solver_id="ConvDirectTiledFwd", algorithm="miopenConvolutionFwdAlgoDirect", time_ms=0.5,
                     workspace_bytes=0, config={"TILE_W": 16}, verified=True, max_error=1e-7, package_version="0.1.0",
                     kernel_hash="abc", driver_version="13.0", cuda_version="13.0", cupy_version="14.2.0",
                     created_at=time.time(), time_q20_ms=0.5, time_q80_ms=0.5)])
    db.close()
    r = run("db", "show")
    assert r.exit_code == 0 and "ConvDirectTiledFwd" in r.output and "64-56-56-3x3" in r.output
    r = run("db", "stats")
    assert r.exit_code == 0 and "1" in r.output


def test_find_answers_from_db_without_gpu_work(tmp_db, monkeypatch):
    """With trusted records for every candidate, find prints them and benchmarks nothing."""
    from miofind.driver_args import problems_from_driver_args
    import miofind.api as api
    import miofind.find as find_mod
    import miofind.device as dev_mod
    from miofind.db import FindDB, Record
    from miofind.problem import ProblemDescription
    from miofind.registry import solvers

    dev = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "13.0", "13.0", "14.2.0")
    monkeypatch.setattr(dev_mod, "current_device", lambda *a: dev)
    monkeypatch.setattr(api, "current_device", lambda *a: dev)
    def no_benchmark(*a, **k):
        raise RuntimeError("benchmarked despite a complete FindDB")
    monkeypatch.setattr(find_mod, "benchmark", no_benchmark)
    monkeypatch.setattr(find_mod, "current_device", lambda *a: dev)
    p = problems_from_driver_args([*ARGS, "-F", "1"])[0]
    recs = [Record(device=dev.db_name, device_name=dev.name, problem_key=p.key(), solver_id=s.id, algorithm=s.algorithm,
                   time_ms=1.0 + i, workspace_bytes=0, config=s.default_config(p), verified=True, max_error=1e-7,
                   package_version="0.1.0", kernel_hash=trust_key(s), driver_version="13.0", cuda_version="13.0",
                   cupy_version="14.2.0", created_at=time.time(), time_q20_ms=1.0, time_q80_ms=1.0)
            for i, s in enumerate(s for s in solvers() if s.applicability(p))]
    FindDB(tmp_db).store(recs)
    out = tmp_db.replace("sqlite:///", "") + ".json"
    r = run("find", "--json-out", out, *ARGS, "-F", "1")
    assert r.exit_code == 0, r.output
    assert "answered from the user FindDB" in r.output
    d = json.load(open(out))
    # the naive solver is no candidate unless asked for: its record is not read
    timed = [x.solver_id for x in recs if x.solver_id != "ConvDirectNaiveConvFwd"]
    assert d[0]["source"] == "db" and [s["solver_id"] for s in d[0]["solutions"]] == timed and len(timed) < len(recs)
    r = run("find", "--with-naive", "--json-out", out, *ARGS, "-F", "1")
    assert r.exit_code == 0, r.output
    assert [s["solver_id"] for s in json.load(open(out))[0]["solutions"]] == [x.solver_id for x in recs]
    # a record whose kernel hash no longer matches is not trusted: find would benchmark
    from dataclasses import replace
    FindDB(tmp_db).store([replace(next(x for x in recs if x.solver_id == timed[0]), kernel_hash="0000")])
    r = run("find", *ARGS, "-F", "1")
    assert r.exit_code != 0 and "benchmarked despite" in str(r.exception)


def test_the_cli_waits_for_its_background_jobs(monkeypatch):
    """The CLI fills the FindDB: at its end it waits for the background jobs its finds left, where a library process
    would stop them at exit (MIOFIND_EXIT_WAIT)."""
    from miofind import tiered

    waited = []
    monkeypatch.setattr(tiered, "_finish_at_exit", False)
    monkeypatch.setattr(tiered, "pending", lambda: 2)
    monkeypatch.setattr(tiered, "wait", lambda timeout=None: waited.append(timeout))
    r = run("solvers")
    assert r.exit_code == 0, r.output
    assert waited == [None] and tiered._finish_at_exit
