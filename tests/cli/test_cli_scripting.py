"""The CLI for scripts: miofind's options anywhere on the line, --json, TSV when stdout is not a
terminal (rich tables when it is), help text on every option, the MIOpenDriver flags in --help,
the environment's find mode and enforcement, and GPU-less immediate answers (--device)."""

import json

import click
import pytest
from click.testing import CliRunner

import miofind.cli_common as cli_common
from miofind import cli, env
from miofind.api import FindResult, Solution
from miofind.device import DeviceInfo
from miofind.driver_args import FLAGS

ARGS = "conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1".split()
KEY_F = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
DEV = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "13.0", "13.0", "14.2.0")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for v in env.VARIABLES:
        if v.name not in ("MIOFIND_DB", "MIOFIND_SYSTEM_DB"):
            monkeypatch.delenv(v.name, raising=False)


def run(*args):
    return CliRunner().invoke(cli.main, list(args))


@pytest.fixture
def fake_find(monkeypatch, tmp_db):
    """A GPU and a find that returns two solutions without measuring; records each call's arguments."""
    import miofind.api as api
    import miofind.device as dev_mod

    monkeypatch.setattr(dev_mod, "current_device", lambda *a: DEV)
    calls = []

    def find_solutions(p, **kw):
        calls.append((p, kw))
        sols = [Solution("ConvWinograd3x3F43Fwd", "miopenConvolutionFwdAlgoWinograd", 0.16, 1 << 20, None, True, p,
                         max_error=1.7e-6, time_q20_ms=0.15, time_q80_ms=0.17),
                Solution("ConvImplicitGemmFwd", "miopenConvolutionFwdAlgoImplicitGEMM", 0.23, 0,
                         {"BM": 128, "BN": 64}, True, p, max_error=4e-7, time_q20_ms=0.22, time_q80_ms=0.24)]
        return FindResult(sols, problem=p, source="find", elapsed_ms=1000.0, stored=True, mode=kw.get("mode"))

    monkeypatch.setattr(api, "find_solutions", find_solutions)
    return calls


# -- options anywhere ---------------------------------------------------------------------------------

def test_json_before_or_after_driver_args(fake_find):
    before = run("find", "--json", *ARGS, "-F", "1")
    after = run("find", *ARGS, "-F", "1", "--json")
    assert before.exit_code == 0 and after.exit_code == 0, (before.output, after.output)
    a, b = json.loads(before.stdout), json.loads(after.stdout)
    for d in (a, b):
        d[0].pop("elapsed_ms")
    assert a == b and a[0]["key"] == KEY_F and [s["solver_id"] for s in a[0]["solutions"]] == [
        "ConvWinograd3x3F43Fwd", "ConvImplicitGemmFwd"]


def test_every_find_option_after_driver_args(fake_find, tmp_path):
    out = tmp_path / "o.json"
    r = run("find", *ARGS, "-F", "1", "--mode", "fast", "--sort-by=workspace", "--workspace-limit", "1000",
            "--solver", "A", "--solver=B", "--no-verify", "--with-naive", "--db", "x.sqlite", f"--json-out={out}",
            "--json")
    assert r.exit_code == 0, r.output
    (p, kw), = fake_find
    assert p.key() == KEY_F
    assert kw == {"mode": "fast", "sort_by": "workspace", "workspace_limit": 1000, "solvers": ["A", "B"],
                  "verify": False, "db": "x.sqlite", "with_naive": True, "defer": False}   # the table lists every solver
    run("find", *ARGS, "-F", "1", "--json")
    assert fake_find[1][1]["with_naive"] is None     # not given: the environment decides
    assert json.loads(out.read_text())[0]["key"] == KEY_F


def test_driver_mode_stays_with_the_driver(fake_find):
    """--mode after the driver arguments is MIOpenDriver's (conv/trans) unless its value is a find mode."""
    r = run("find", "--mode", "hybrid", *ARGS, "--mode", "trans", "-F", "1", "--json")
    assert r.exit_code == 0, r.output
    (p, kw), = fake_find
    assert p.transposed and kw["mode"] == "hybrid"
    r = run("find", *ARGS, "--mode", "bogus", "-F", "1")
    assert r.exit_code == 1 and "driver flag --mode='bogus': expected conv or trans" in r.output


def test_unknown_flag_after_driver_args_is_one_line(fake_find):
    r = run("find", *ARGS, "-F", "1", "--jsn")
    assert r.exit_code == 1 and "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("miofind: driver flag --jsn: unknown")


def test_help_after_driver_args():
    r = run("find", *ARGS, "--help")
    assert r.exit_code == 0 and "find [OPTIONS] [DRIVER_ARGS]" in r.output and "MIOpenDriver arguments" in r.output


def test_split_args():
    cmd = cli.main.commands["tune"]
    with click.Context(cmd) as ctx:
        own, drv = cmd.split_args(ctx, ["-F", "1", "--max-configs", "3", "conv", "-n", "2", "-F", "4", "--forw", "2",
                                        "--db", "u", "--retune", "--verbose", "-v", "1"])
    # -F/--forw after the command word are MIOpenDriver's; so is -v (conv_stride_w)
    assert own == ["-F", "1", "--max-configs", "3", "--db", "u", "--retune", "--verbose"]
    assert drv == ["conv", "-n", "2", "-F", "4", "--forw", "2", "-v", "1"]


def test_tune_options_after_driver_args_and_find_enforce(tmp_db, monkeypatch):
    """`tune --enqueue` runs without a GPU: the queued options show what was parsed."""
    from miofind.db import FindDB
    from miofind.db.jobs import JobQueue

    r = run("tune", *ARGS, "-F", "1", "--enqueue", "--max-configs", "3", "--strategy=random", "--db", tmp_db)
    assert r.exit_code == 0, r.output
    job, = JobQueue(FindDB(tmp_db)).jobs()
    assert job.problem_key == KEY_F
    assert (job.options["max_configs"], job.options["strategy"], job.options["retune"]) == (3, "random", False)
    # a budget given on the command line holds for every solver; without one a solver may widen it (tune_budget)
    assert job.options["solver_budgets"] is False
    monkeypatch.setenv("MIOPEN_FIND_ENFORCE", "DB_UPDATE")
    r = run("tune", *ARGS, "-F", "2", "--enqueue", "--db", tmp_db)
    assert r.exit_code == 0, r.output
    assert [j.options["retune"] for j in JobQueue(FindDB(tmp_db)).jobs()] == [False, True]
    assert [j.options["solver_budgets"] for j in JobQueue(FindDB(tmp_db)).jobs()] == [False, True]
    monkeypatch.setenv("MIOPEN_FIND_ENFORCE", "DB_CLEAN")
    r = run("tune", *ARGS, "-F", "4", "--enqueue", "--db", tmp_db)
    assert r.exit_code == 1 and r.output.startswith("miofind: MIOPEN_FIND_ENFORCE='DB_CLEAN': DB_CLEAN is not supported")



def test_tune_where_is_queued_and_a_bad_one_is_named(tmp_db):
    """`tune --where WGS=3,STAGES=4|5`: the search's limit travels with a queued job (JSON: lists), and a malformed
    one is a one-line error naming the value."""
    from miofind.db import FindDB
    from miofind.db.jobs import JobQueue
    from miofind.tuning import TuneOptions

    r = run("tune", *ARGS, "-F", "1", "--enqueue", "--where", "WGS=3,STAGES=4|5", "--db", tmp_db)
    assert r.exit_code == 0, r.output
    job, = JobQueue(FindDB(tmp_db)).jobs()
    assert job.options["where"] == {"WGS": [3], "STAGES": [4, 5]}
    assert TuneOptions(**job.options).where == {"WGS": (3,), "STAGES": (4, 5)}
    r = run("tune", *ARGS, "-F", "1", "--enqueue", "--where", "WGS", "--db", tmp_db)
    assert r.exit_code == 1 and r.output.startswith("miofind: where='WGS': 'WGS' is not KEY=VALUE")

def test_tune_model_tf32_enqueues_the_tf32_problems(tmp_db):
    """`tune --model ... --tf32`: the preset's FP32 problems with TF32 math, as PyTorch runs them by default
    (the shipped DB's TF32 groups are built this way); the 16-bit ones unchanged; --tf32 needs a model."""
    from miofind.db import FindDB
    from miofind.db.jobs import JobQueue
    from miofind.models import model_problems

    r = run("tune", "--model", "resnet50", "--batch", "4", "--dtype", "fp32", "--dtype", "fp16", "--tf32", "-F", "1",
            "--enqueue", "--db", tmp_db)
    assert r.exit_code == 0, r.output
    want = {p.key() for p in model_problems("resnet50", batch=4, dtypes=("FP32", "FP16"), directions="F", tf32=True)}
    got = {j.problem_key for j in JobQueue(FindDB(tmp_db)).jobs()}
    assert got == want and any(k.endswith("-FP32-F_tf32") for k in got) and any(k.endswith("-FP16-F") for k in got)
    r = run("tune", "--tf32", "--enqueue", "--db", tmp_db, *ARGS, "-F", "1")
    assert r.exit_code == 1 and "--tf32/--no-tf32 select problems of a --model or --torch-model" in r.output


# -- find mode from the environment -------------------------------------------------------------------

@pytest.mark.parametrize("var,value,mode", [
    (None, None, "normal"), ("MIOFIND_FIND_MODE", "1", "normal"), ("MIOFIND_FIND_MODE", "FAST", "fast"),
    ("MIOPEN_FIND_MODE", "2", "fast"), ("MIOPEN_FIND_MODE", "5", "dynamic_hybrid"),
    ("MIOPEN_FIND_MODE", "hybrid", "hybrid"), ("MIOPEN_FIND_ENFORCE", "SEARCH_DB_UPDATE", "benchmark"),
])
def test_find_mode_from_environment(fake_find, monkeypatch, var, value, mode):
    if var:
        monkeypatch.setenv(var, value)
    r = run("find", *ARGS, "-F", "1", "--json")
    assert r.exit_code == 0, r.output
    assert fake_find[0][1]["mode"] == mode
    r = run("find", "--mode", "benchmark", *ARGS, "-F", "1", "--json")  # the option wins
    assert fake_find[1][1]["mode"] == "benchmark"


def test_bad_find_mode_in_environment(fake_find, monkeypatch):
    monkeypatch.setenv("MIOPEN_FIND_MODE", "9")
    r = run("find", *ARGS, "-F", "1")
    assert r.exit_code == 1 and not fake_find
    assert r.output.strip() == ("miofind: MIOPEN_FIND_MODE='9': expected one of normal, fast, hybrid, dynamic_hybrid "
                                "or MIOpen's numbers 1-5")


# -- output: TSV when piped, rich on a terminal, JSON ------------------------------------------------

def test_find_tsv_when_not_a_terminal(fake_find):
    r = run("find", *ARGS, "-F", "3")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    header = lines[0].split("\t")
    assert header == list(cli.FIND_COLUMNS)
    rows = [dict(zip(header, ln.split("\t"))) for ln in lines[1:]]
    assert len(rows) == 4 and all(len(ln.split("\t")) == len(header) for ln in lines)
    assert [(d["direction"], d["rank"], d["solver"]) for d in rows] == [
        ("F", "1", "ConvWinograd3x3F43Fwd"), ("F", "2", "ConvImplicitGemmFwd"),
        ("B", "1", "ConvWinograd3x3F43Fwd"), ("B", "2", "ConvImplicitGemmFwd")]
    assert rows[0]["key"] == KEY_F and rows[2]["key"] == KEY_F[:-1] + "B"  # full keys
    assert rows[1]["config"] == '{"BM":128,"BN":64}' and rows[0]["workspace_bytes"] == str(1 << 20)
    assert float(rows[0]["time_ms"]) == 0.16 and rows[0]["verified"] == "1"
    # status lines go to stderr, not into the TSV
    assert "benchmarked 2 solution(s)" in r.stderr and "benchmarked" not in r.stdout


def test_find_rich_table_on_a_terminal(fake_find, monkeypatch):
    monkeypatch.setattr(cli_common, "is_terminal", lambda: True)
    monkeypatch.setattr(cli, "is_terminal", lambda: True)
    r = run("find", *ARGS, "-F", "1")
    assert r.exit_code == 0, r.output
    assert "┃" in r.stdout and "\t" not in r.stdout and f"forward  {KEY_F}" in r.stdout
    assert "benchmarked 2 solution(s)" in r.stdout


def test_solvers_tsv_and_terminal(monkeypatch):
    r = run("solvers")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split("\t") == list(cli.SOLVER_COLUMNS)
    first = lines[1].split("\t")
    assert first[:2] == ["1", "ConvDirectNaiveConvFwd"] and len(first) == len(cli.SOLVER_COLUMNS)
    r = run("solvers", *ARGS, "-F", "1", "-I", "NHWC", "-O", "NHWC", "-f", "NHWC")
    lines = r.stdout.splitlines()
    assert lines[0].split("\t") == list(cli.APPLICABILITY_COLUMNS)
    key = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F"
    assert all(ln.split("\t")[1] == key for ln in lines[1:])
    monkeypatch.setattr(cli, "is_terminal", lambda: True)
    r = run("solvers")
    assert "registered solvers" in r.stdout and "┃" in r.stdout and "\t" not in r.stdout


def test_solvers_json():
    from miofind.registry import registry

    r = run("solvers", "--json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert [x["id"] for x in d] == [x.id for x in registry()]
    naive = next(x for x in d if x["id"] == "ConvDirectNaiveConvFwd")
    assert naive["directions"] == "F" and naive["retired"] is False and "FP32" in naive["types"]
    for args in (["solvers", "--json", *ARGS, "-F", "3"], ["solvers", *ARGS, "-F", "3", "--json"]):
        r = run(*args)
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout)
        assert [x["key"] for x in d] == [KEY_F, KEY_F[:-1] + "B"]
        byid = {s["solver_id"]: s for s in d[0]["solvers"]}
        assert byid["ConvDirectNaiveConvFwd"] == {"solver_id": "ConvDirectNaiveConvFwd", "applies": True, "reason": ""}
        assert byid["ConvDirectNaiveConvBwd"]["applies"] is False and byid["ConvDirectNaiveConvBwd"]["reason"]


def test_find_explain_goes_into_json(fake_find):
    r = run("find", *ARGS, "-F", "1", "--explain", "--json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)  # nothing but JSON on stdout
    assert {"solver_id": "ConvDirectNaiveConvFwd", "applies": True, "reason": ""} in d[0]["applicability"]


# -- help -------------------------------------------------------------------------------------------

def _commands():
    """Every command of the tree, ``db`` subcommands included."""
    out = [("main", cli.main)]
    for n, c in cli.main.commands.items():
        out.append((n, c))
        out += [(f"{n} {sn}", sc) for sn, sc in getattr(c, "commands", {}).items()]
    return out


@pytest.mark.parametrize("name,cmd", _commands(), ids=[n for n, _ in _commands()])
def test_every_option_has_help(name, cmd):
    opts = [p for p in cmd.params if isinstance(p, click.Option)]
    assert opts or getattr(cmd, "commands", None)
    missing = [p.opts[0] for p in opts if not (p.help or "").strip()]
    assert not missing, f"{name}: options without help: {missing}"
    assert (cmd.help or "").strip()


def test_run_help_lists_driver_flags():
    r = run("run", "--help")
    assert r.exit_code == 0
    text = r.output
    for flag in ("-S, --solution", "-V, --verify", "-t, --time", "-i, --iter", "-n, --batchsize", "-F, --forw",
                 "-c, --in_channels", "-g, --group_count", "-I, --in_layout"):
        assert flag in text, flag
    # every MIOpenDriver flag is either described or listed as ignored
    for name in FLAGS:
        assert f"--{name}" in text, name


def test_find_help_lists_problem_flags_and_ignores_run_flags():
    text = run("find", "--help").output
    assert "-n, --batchsize" in text and "MIOpenDriver run flags" not in text
    ignored = text.split("Accepted and ignored:")[1]
    assert "--solution" in ignored and "--iter" in ignored


# -- without a GPU ----------------------------------------------------------------------------------

@pytest.fixture
def no_gpu(monkeypatch):
    import miofind.device as dev
    from miofind.device import NoGPUError

    def raise_():
        raise NoGPUError("no GPU: no CUDA device is visible")
    monkeypatch.setattr(dev, "current_device", lambda *a: raise_())


def test_offline_device_names_from_the_system_db(monkeypatch):
    monkeypatch.delenv("MIOFIND_SYSTEM_DB", raising=False)
    d = cli._offline_device("sm_90-132")
    assert (d.arch, d.sm_count, d.name) == ("sm_90", 132, "NVIDIA H100 80GB HBM3")
    assert d.db_name == "sm_90-132-NVIDIA_H100_80GB_HBM3"
    assert cli._offline_device("sm_90-132-NVIDIA_H100_80GB_HBM3").name == "NVIDIA H100 80GB HBM3"
    d = cli._offline_device("sm_90-114-Other")  # no records of its own: the name as given
    assert (d.sm_count, d.name) == (114, "Other")


@pytest.mark.parametrize("spec", ["h100", "sm_90", "90-132", "sm_90-x"])
def test_bad_device_is_one_line(no_gpu, tmp_db, spec):
    r = run("find", "--device", spec, *ARGS, "-F", "1")
    assert r.exit_code == 1
    assert r.output.strip() == (f"miofind: --device={spec!r}: expected ARCH-SMS[-NAME] as the FindDB stores devices, "
                                "e.g. sm_90-132")


def test_device_rejects_mode(no_gpu, tmp_db):
    r = run("find", "--device", "sm_90-132", "--mode", "fast", *ARGS, "-F", "1")
    assert r.exit_code == 1 and "--device answers in immediate mode" in r.output


def test_find_device_without_gpu_tsv(no_gpu, tmp_db, monkeypatch):
    """Immediate mode for a named device, no GPU: every row has the full key and an immediate source."""
    monkeypatch.delenv("MIOFIND_SYSTEM_DB", raising=False)
    r = run("find", *ARGS, "-F", "1", "--device", "sm_90-132")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].split("\t") == list(cli.FIND_COLUMNS) and len(lines) > 1
    rows = [dict(zip(cli.FIND_COLUMNS, ln.split("\t"))) for ln in lines[1:]]
    assert all(d["key"] == KEY_F and d["source"] in ("db", "predicted") for d in rows)
    assert [int(d["rank"]) for d in rows] == list(range(1, len(rows) + 1))
