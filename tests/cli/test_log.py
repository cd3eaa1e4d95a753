"""miofind.log and the CLI's -v/-q: levels from flags and the environment, output on stderr."""

import logging

import pytest
from click.testing import CliRunner

from miofind import cli, env, log

ARGS = "conv -n 1 -c 8 -H 8 -W 8 -k 8 -y 3 -x 3 -F 1".split()


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    for v in env.VARIABLES:
        monkeypatch.delenv(v.name, raising=False)


def level():
    return logging.getLogger("miofind").level


@pytest.mark.parametrize("verbose,quiet,base,want", [
    (0, 0, None, logging.WARNING), (1, 0, None, logging.INFO), (2, 0, None, logging.DEBUG), (5, 0, None, logging.DEBUG),
    (0, 1, None, logging.ERROR), (0, 2, None, logging.CRITICAL), (0, 3, None, log.QUIET), (0, 9, None, log.QUIET),
    (1, 1, None, logging.WARNING), (0, 0, logging.DEBUG, logging.DEBUG), (1, 0, logging.ERROR, logging.WARNING),
    (0, 1, log.QUIET, log.QUIET), (0, 0, 25, logging.INFO),
])
def test_level_for(verbose, quiet, base, want):
    assert log.level_for(verbose, quiet, base) == want


def test_configure_uses_environment_and_live_stderr(monkeypatch, capsys):
    monkeypatch.setenv("MIOPEN_LOG_LEVEL", "5")
    assert log.configure() == logging.INFO
    assert log.configure(verbose=1) == logging.DEBUG
    assert log.configure(quiet=1) == logging.WARNING
    handlers = [h for h in logging.getLogger("miofind").handlers if isinstance(h, log._StderrHandler)]
    assert len(handlers) == 1  # configured three times, attached once
    logging.getLogger("miofind.test").warning("hello %d", 42)
    assert "miofind WARNING [miofind.test] hello 42" in capsys.readouterr().err
    monkeypatch.setenv("MIOFIND_LOG_LEVEL", "nope")
    with pytest.raises(ValueError, match="MIOFIND_LOG_LEVEL='nope'"):
        log.configure()


def test_configure_from_env(monkeypatch):
    logging.getLogger("miofind").setLevel(logging.NOTSET)
    assert log.configure_from_env() is None and level() == logging.NOTSET
    monkeypatch.setenv("MIOFIND_LOG_LEVEL", "debug")
    assert log.configure_from_env() == logging.DEBUG == level()


@pytest.mark.parametrize("args,want", [
    (["solvers"], logging.WARNING),
    (["-v", "solvers"], logging.INFO),
    (["-vv", "solvers"], logging.DEBUG),
    (["solvers", "-v"], logging.INFO),
    (["-v", "solvers", "--verbose"], logging.DEBUG),
    (["-q", "solvers"], logging.ERROR),
    (["solvers", "-qq"], logging.CRITICAL),
    (["solvers", *ARGS, "--quiet"], logging.ERROR),            # after the driver arguments: the long form
    (["solvers", *ARGS, "--verbose", "--verbose"], logging.DEBUG),
    (["-q", "solvers", "-v"], logging.WARNING),
    (["db", "path"], logging.WARNING),
])
def test_cli_verbosity(args, want, tmp_db):
    r = CliRunner().invoke(cli.main, args)
    assert r.exit_code == 0, r.output
    assert level() == want


@pytest.mark.parametrize("var,value,want", [("MIOFIND_LOG_LEVEL", "debug", logging.DEBUG),
                                            ("MIOFIND_LOG_LEVEL", "error", logging.ERROR),
                                            ("MIOPEN_LOG_LEVEL", "1", log.QUIET),
                                            ("MIOPEN_LOG_LEVEL", "5", logging.INFO)])
def test_cli_level_from_environment(monkeypatch, var, value, want):
    monkeypatch.setenv(var, value)
    assert CliRunner().invoke(cli.main, ["solvers"]).exit_code == 0
    assert level() == want
    assert CliRunner().invoke(cli.main, ["-v", "solvers"]).exit_code == 0  # -v counts from the environment's level
    assert level() == log.level_for(1, 0, want)


def test_cli_bad_log_level_is_one_line(monkeypatch):
    monkeypatch.setenv("MIOPEN_LOG_LEVEL", "9")
    r = CliRunner().invoke(cli.main, ["solvers"])
    assert r.exit_code == 1
    assert r.output.strip() == "miofind: MIOPEN_LOG_LEVEL='9': expected 0-7 (MIOpen's levels)"


def test_cli_debug_logs_on_stderr_only(monkeypatch):
    """-vv shows the debug lines (here the parsed driver arguments) on stderr; stdout keeps the results."""
    r = CliRunner().invoke(cli.main, ["solvers", *ARGS, "--verbose", "--verbose"])
    assert r.exit_code == 0
    assert "DEBUG [miofind.cli] driver arguments conv -n 1" in r.stderr
    assert "DEBUG" not in r.stdout and "ConvDirectNaiveConvFwd" in r.stdout
    r = CliRunner().invoke(cli.main, ["solvers", *ARGS])
    assert r.stderr == ""
