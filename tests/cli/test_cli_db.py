"""``miofind db export / import / merge / verify / prune`` through click's CliRunner (CPU only)."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from click.testing import CliRunner

from miofind import __version__, cli
from miofind.trust import trust_key as kernel_hash
from miofind.db import FindDB
from miofind.db.findb import PerfRecord, Record
from miofind.problem import ProblemDescription
from miofind.registry import get_solver

DEV, DEV2 = "sm_90-132", "sm_80-108"
P = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
KEY = P.key()
NAIVE, IGEMM, WINO = "ConvDirectNaiveConvFwd", "ConvImplicitGemmFwd", "ConvWinograd3x3F23Fwd"
IG_CFG = get_solver(IGEMM).default_config(P)


def run(*args, input=None):
    return CliRunner().invoke(cli.main, [str(a) for a in args], input=input)


def rec(solver=NAIVE, t=1.0, device=DEV, key=KEY, **kw):
    s = get_solver(solver) if solver in (NAIVE, IGEMM, WINO) else None
    base = dict(device=device, device_name="H100", problem_key=key, solver_id=solver, algorithm="miopenConvolutionFwdAlgoDirect",
                time_ms=t, workspace_bytes=s.workspace_bytes(P, kw.get("config")) if s else 0,
                package_version=__version__, kernel_hash=kernel_hash(s) if s else "x", cuda_version="13.0")
    base.update(kw)
    return Record(**base)


@pytest.fixture
def dbfile(tmp_path):
    path = tmp_path / "finddb.sqlite"
    with FindDB(str(path)) as d:
        d.store([rec(NAIVE, 2.0), rec(IGEMM, 0.5, config=IG_CFG, verified=True), rec(WINO, 1e-5)])
        d.store_perf([PerfRecord(device=DEV, problem_key=KEY, solver_id=IGEMM, config=IG_CFG, time_ms=0.5,
                                 package_version=__version__, kernel_hash=kernel_hash(get_solver(IGEMM)))])
    return path


def records(path) -> list[Record]:
    with FindDB(str(path), readonly=True) as d:
        return sorted(d.iter_records(), key=lambda r: r.db_key)


def one_line_error(r, text):
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("miofind: ") and text in err[0], r.stderr


# -- export / import ---------------------------------------------------------------------------------

def test_export_stdout_and_import_round_trip(dbfile, tmp_path):
    r = run("db", "export", "--db", dbfile)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert json.loads(lines[0]) == {"format": "miofind-db", "version": 1} and len(lines) == 5
    assert "wrote 5 lines" in r.stderr
    src = tmp_path / "dump.jsonl"
    src.write_text(r.stdout)
    dest = tmp_path / "copy.sqlite"
    r = run("db", "import", src, "--db", dest)
    assert r.exit_code == 0, r.output
    assert "imported 3 find records and 1 tuned configs (miofind format)" in r.output
    assert "4 stored untrusted (unverified)" in r.output
    # unsigned: the same records, untrusted (test_cli_db_import.py has the signed round trip)
    assert records(dest) == [dataclasses.replace(x, verified=False, kernel_hash="imported:" + x.kernel_hash)
                             for x in records(dbfile)]


def test_export_file_and_miopen_format(dbfile, tmp_path):
    out = tmp_path / "gfx.fdb.txt"
    r = run("db", "export", "--db", dbfile, "--format", "miopen", "-o", out)
    assert r.exit_code == 0, r.output
    (line,) = out.read_text().splitlines()
    assert re.fullmatch(r"[0-9A-Za-z_x\-]+=([A-Za-z0-9_]+:[0-9.e+-]+,\d+,[A-Za-z0-9_]+)(;[A-Za-z0-9_]+:[0-9.e+-]+,\d+,"
                        r"[A-Za-z0-9_]+)*", line)
    assert line.startswith(f"{KEY}={WINO}:1e-05,")
    # autodetected as miopen; needs --device
    dest = tmp_path / "m.sqlite"
    one_line_error(run("db", "import", out, "--db", dest), "--device")
    assert not dest.exists()
    r = run("db", "import", out, "--db", dest, "--device", DEV, "--device-name", "H100")
    assert r.exit_code == 0, r.output
    assert "imported 3 find records and 0 tuned configs (miopen format)" in r.output
    got = {(x.solver_id, x.time_ms, x.workspace_bytes, x.algorithm, x.verified) for x in records(dest)}
    assert got == {(x.solver_id, x.time_ms, x.workspace_bytes, x.algorithm, False) for x in records(dbfile)}


def test_export_several_devices_miopen_needs_device(dbfile):
    with FindDB(str(dbfile)) as d:
        d.store([rec(NAIVE, device=DEV2)])
    one_line_error(run("db", "export", "--db", dbfile, "--format", "miopen"), "device")
    r = run("db", "export", "--db", dbfile, "--format", "miopen", "--device", DEV2)
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 1


def test_import_from_stdin_and_skipped_lines(tmp_path):
    dest = tmp_path / "d.sqlite"
    text = f"{KEY}={NAIVE}:1.5,0,direct;Bogus:1,0,x\nnot a line\n"
    r = run("db", "import", "-", "--db", dest, "--device", DEV, input=text)
    assert r.exit_code == 0, r.output
    assert "imported 1 find records" in r.output and "skipped 2" in r.output
    assert "line 1: entry 2 (Bogus)" in r.output and "line 2: expected KEY=" in r.output


@pytest.mark.parametrize("content,msg", [
    ('{"format": "miofind-db", "version": 99}\n', "version 99"),
    ('{"format": "sqlite"}\n', "unknown file format"),
])
def test_import_bad_header_one_line(tmp_path, content, msg):
    f = tmp_path / "x.jsonl"
    f.write_text(content)
    one_line_error(run("db", "import", f, "--db", tmp_path / "d.sqlite"), msg)


def test_import_missing_file_one_line(tmp_path):
    one_line_error(run("db", "import", tmp_path / "nope.jsonl", "--db", tmp_path / "d.sqlite"), "nope.jsonl")


def test_export_missing_db_one_line(tmp_path):
    one_line_error(run("db", "export", "--db", tmp_path / "nope.sqlite"), "does not exist")
    assert not (tmp_path / "nope.sqlite").exists()


def test_bad_url_one_line(tmp_path):
    one_line_error(run("db", "export", "--db", "nosuchdialect://x/y"), "nosuchdialect")


# -- merge --------------------------------------------------------------------------------------------

def test_merge(dbfile, tmp_path):
    other = tmp_path / "other.sqlite"
    with FindDB(str(other)) as d:
        d.store([rec(NAIVE, 0.1, verified=True), rec(WINO, 0.5, verified=False)])
    dest = tmp_path / "dest.sqlite"
    r = run("db", "merge", dbfile, f"sqlite:///{other}", "--db", dest)
    assert r.exit_code == 0, r.output
    assert "merged 2 source(s)" in r.output
    got = {x.solver_id: (x.time_ms, x.verified) for x in records(dest)}
    assert got == {NAIVE: (0.1, True), IGEMM: (0.5, True), WINO: (1e-5, False)}
    one_line_error(run("db", "merge", tmp_path / "missing.sqlite", "--db", dest), "does not exist")
    assert not (tmp_path / "missing.sqlite").exists()


# -- verify / prune ------------------------------------------------------------------------------------

def test_verify_clean_and_problems(dbfile):
    r = run("db", "verify", "--db", dbfile)
    assert r.exit_code == 0, r.output
    assert "integrity_check" in r.output and ": ok" in r.output and "0 problem(s)" in r.output
    with FindDB(str(dbfile)) as d:
        d.store([rec("ConvDirectNaiveConvBwd"), rec("NoSuchSolver"), rec(WINO, workspace_bytes=1)])
    r = run("db", "verify", "--db", dbfile)
    assert r.exit_code == 1
    assert "Traceback" not in r.output
    assert "3 problem(s)" in r.output
    for text in ("not applicable", "unknown solver", "workspace", "NoSuchSolver"):
        assert text in r.output


def test_verify_corrupt_file(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    r = run("db", "verify", "--db", bad)
    one_line_error(r, "corrupt")
    assert bad.exists()  # verify never moves a file aside


def test_prune_dry_run_then_prune(dbfile):
    with FindDB(str(dbfile)) as d:
        d.store([rec("ConvDirectNaiveConvBwd"), rec("ConvDirectTiledFwd", package_version="0.0.0")])
    r = run("db", "prune", "--db", dbfile, "--dry-run")
    assert r.exit_code == 0, r.output
    assert "would delete 2 row(s)" in r.output and "find: not applicable" in r.output and "find: stale" in r.output
    assert len(records(dbfile)) == 5
    r = run("db", "prune", "--db", dbfile)
    assert r.exit_code == 0 and "deleted 2 row(s)" in r.output
    assert {x.solver_id for x in records(dbfile)} == {NAIVE, IGEMM, WINO}
    assert run("db", "verify", "--db", dbfile).exit_code == 0


# -- recorded find failures ----------------------------------------------------------------------------

def _find_failure(solver, kernel_hash_, device=DEV):
    from miofind.db.findb import FindFailure

    return FindFailure(device, KEY, solver, None, "verify", "max element error 0.5", kernel_hash=kernel_hash_,
                       cuda_version="13.0")


def test_prune_reports_stale_find_failures(dbfile):
    with FindDB(str(dbfile)) as d:
        d.store_find_failures(DEV, KEY, [NAIVE, IGEMM], [_find_failure(NAIVE, kernel_hash(get_solver(NAIVE))),
                                                         _find_failure(IGEMM, "src=00000000deadbeef;v=1")])
    r = run("db", "prune", "--db", dbfile, "--dry-run")
    assert r.exit_code == 0, r.output
    assert "would delete 1 row(s)" in r.output and "find_failures: stale" in r.output
    r = run("db", "prune", "--db", dbfile)
    assert r.exit_code == 0 and "deleted 1 row(s)" in r.output
    with FindDB(str(dbfile), readonly=True) as d:
        assert [f.solver_id for f in d.find_failures(DEV, KEY)] == [NAIVE]


def test_export_leaves_find_failures_out_and_says_so(dbfile, tmp_path):
    with FindDB(str(dbfile)) as d:
        d.store_find_failures(DEV, KEY, [WINO], [_find_failure(WINO, kernel_hash(get_solver(WINO)))])
        d.store_find_failures(DEV2, KEY, [WINO], [_find_failure(WINO, kernel_hash(get_solver(WINO)), DEV2)])
    r = run("db", "export", "--db", dbfile)
    assert r.exit_code == 0, r.output
    assert "left out 2 recorded find failure(s)" in r.stderr
    assert {json.loads(ln)["type"] for ln in r.stdout.splitlines()[1:]} == {"find", "perf"}
    r = run("db", "export", "--db", dbfile, "--device", DEV, "-o", tmp_path / "x.jsonl")
    assert r.exit_code == 0 and "left out 1 recorded find failure(s)" in r.stderr
    assert "find failures are" in " ".join(run("db", "export", "--help").output.split())
    # nothing to leave out: no line about it
    with FindDB(str(dbfile)) as d:
        d.delete(what="find_failures")
    assert "find failure" not in run("db", "export", "--db", dbfile).stderr
    # an import of a file with a failure line skips it, naming the line (not a kind import accepts)
    src = tmp_path / "f.jsonl"
    src.write_text(json.dumps({"format": "miofind-db", "version": 1}) + "\n" + json.dumps(
        {"type": "find_failure", **dataclasses.asdict(_find_failure(WINO, kernel_hash(get_solver(WINO))))}) + "\n")
    r = run("db", "import", src, "--db", tmp_path / "i.sqlite")
    assert "line 2" in r.output and "type='find_failure'" in r.output
    with FindDB(str(tmp_path / "i.sqlite"), readonly=True) as d:
        assert d.count_find_failures() == 0
