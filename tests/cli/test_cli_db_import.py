"""``miofind db export --sign / import / verify / migrate-trust``: signed transfers, bounded reads,
device forms, the trust table (CPU only)."""

from __future__ import annotations

import json
import os
import threading

import pytest
from click.testing import CliRunner

from miofind import cli
from miofind.db import FindDB
from miofind.db.findb import Record
from miofind.db.maintenance import legacy_trust_changes
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.trust import trust_key

DEV = "sm_90-132"
NAIVE, WINO = "ConvDirectNaiveConvFwd", "ConvWinograd3x3F23Fwd"
P = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
SECRET = "correct horse battery staple 42"


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.delenv("MIOFIND_IMPORT_KEY", raising=False)


def run(*args, input=None, env=None):
    return CliRunner().invoke(cli.main, [str(a) for a in args], input=input, env=env)


def one_line_error(r, text):
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("miofind: ") and text in err[0], r.stderr


def rec(solver=NAIVE, t=1.0, **kw):
    s = get_solver(solver)
    base = dict(device=DEV, device_name="H100", problem_key=P.key(), solver_id=solver,
                algorithm="miopenConvolutionFwdAlgoDirect", time_ms=t, workspace_bytes=s.workspace_bytes(P, None),
                verified=True, kernel_hash=trust_key(s), cuda_version="13.0")
    base.update(kw)
    return Record(**base)


@pytest.fixture
def dbfile(tmp_path):
    path = tmp_path / "finddb.sqlite"
    with FindDB(str(path)) as d:
        d.store([rec(NAIVE, 2.0), rec(WINO, 0.5)])
    return path


def records(path):
    with FindDB(str(path), readonly=True) as d:
        return sorted(d.iter_records(), key=lambda r: r.db_key)


# -- signed export / import --------------------------------------------------------------------------------

def test_signed_round_trip_with_env_key_or_key_file(dbfile, tmp_path):
    out = tmp_path / "signed.jsonl"
    r = run("db", "export", "--db", dbfile, "--sign", "-o", out, env={"MIOFIND_IMPORT_KEY": SECRET})
    assert r.exit_code == 0, r.output
    assert "wrote 4 lines (miofind format, signed)" in r.stderr
    assert json.loads(out.read_text().splitlines()[-1])["type"] == "signature"

    dest = tmp_path / "a.sqlite"
    r = run("db", "import", out, "--db", dest, env={"MIOFIND_IMPORT_KEY": SECRET})
    assert r.exit_code == 0, r.output
    assert "imported 2 find records" in r.output and "2 stored as written: the file's signature matches" in r.output
    assert records(dest) == records(dbfile)

    key_file = tmp_path / "key"
    key_file.write_text(SECRET + "\n")
    dest = tmp_path / "b.sqlite"
    r = run("db", "import", out, "--db", dest, "--key-file", key_file)
    assert r.exit_code == 0, r.output
    assert records(dest) == records(dbfile)

    # no key: stored untrusted, and the user is told why
    dest = tmp_path / "c.sqlite"
    r = run("db", "import", out, "--db", dest)
    assert r.exit_code == 0, r.output
    assert "2 stored untrusted" in r.output and "note: line 4: the file is signed, but no key was given" in r.output
    assert {(x.verified, x.kernel_hash.startswith("imported:")) for x in records(dest)} == {(False, True)}

    # another key: refused, nothing written
    dest = tmp_path / "d.sqlite"
    one_line_error(run("db", "import", out, "--db", dest, env={"MIOFIND_IMPORT_KEY": "x" * 20}),
                   "line 4: the signature does not match the key")
    assert records(dest) == []


def test_signing_key_errors(dbfile, tmp_path):
    one_line_error(run("db", "export", "--db", dbfile, "--sign"), "--sign needs a key: set MIOFIND_IMPORT_KEY")
    one_line_error(run("db", "export", "--db", dbfile, "--sign", env={"MIOFIND_IMPORT_KEY": "short"}),
                   "MIOFIND_IMPORT_KEY: 5 bytes")
    short = tmp_path / "k"
    short.write_bytes(b"abc\n")
    one_line_error(run("db", "export", "--db", dbfile, "--sign", "--key-file", short), "--key-file=")
    one_line_error(run("db", "export", "--db", dbfile, "--sign", "--key-file", tmp_path / "none"), "cannot read")
    one_line_error(run("db", "export", "--db", dbfile, "--format", "miopen", "--sign",
                       env={"MIOFIND_IMPORT_KEY": SECRET}), "cannot carry a signature")


def test_import_errors_name_the_line_and_write_nothing(dbfile, tmp_path):
    r = run("db", "export", "--db", dbfile)
    text = r.stdout + '{"format": "miofind-db", "version": 7}\n'
    f = tmp_path / "bad.jsonl"
    f.write_text(text)
    dest = tmp_path / "d.sqlite"
    one_line_error(run("db", "import", f, "--db", dest), f"cannot import {f}: line 4: unknown file format")
    assert records(dest) == []
    f.write_text(r.stdout + "x" * 2000 + "\n")
    one_line_error(run("db", "import", f, "--db", dest, "--max-line-length", 1000), "line 4: longer than 1000 bytes")
    assert records(dest) == []


# -- bounded reads ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra", [["--format", "miofind"], ["--device", DEV], []])
def test_import_of_an_endless_zero_stream_is_one_line(tmp_path, extra):
    """`db import /dev/zero`, through a FIFO whose writer stops after 8 MiB (so that a regression fails
    instead of eating memory): a one-line error after at most a few reads of 64 KiB."""
    fifo = tmp_path / "zero"
    os.mkfifo(fifo)
    served = []

    def writer():
        try:
            with open(fifo, "wb") as f:
                for _ in range(128):
                    f.write(b"\0" * 65536)
                    served.append(65536)
        except BrokenPipeError:
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    dest = tmp_path / "d.sqlite"
    r = run("db", "import", fifo, "--db", dest, *extra)
    t.join(30)
    if not extra:  # taken for a MIOpen file, which names no device
        one_line_error(r, "--device")
    else:
        one_line_error(r, "line 1: longer than 65536 bytes")
    assert sum(served) <= 1 << 20
    assert not dest.exists() or records(dest) == []


# -- devices ----------------------------------------------------------------------------------------

def test_amd_file_filed_under_an_nvidia_device_warns(tmp_path):
    f = tmp_path / "gfx90a68.HIP.fdb.txt"
    f.write_text(f"{P.key()}={NAIVE}:1.5,0,miopenConvolutionFwdAlgoDirect\n")
    r = run("db", "import", f, "--db", tmp_path / "a.sqlite", "--device", DEV)
    assert r.exit_code == 0, r.output
    assert "names an AMD GPU (gfx90a68)" in r.stderr and "untrusted hints" in r.stderr
    r = run("db", "import", f, "--db", tmp_path / "b.sqlite", "--device", "gfx90a-104")
    assert r.exit_code == 0 and "AMD" not in r.stderr, r.output
    assert [x.device for x in records(tmp_path / "b.sqlite")] == ["gfx90a-104"]
    for bad in ("sm_90", "gfx90a", "H100", "sm_90-132-NVIDIA__H100"):
        one_line_error(run("db", "import", f, "--db", tmp_path / "c.sqlite", "--device", bad), f"--device={bad!r}")
    one_line_error(run("db", "import", f, "--db", tmp_path / "c.sqlite", "--format", "miofind",
                       "--device", "gfx90a-104"), "--device='gfx90a-104'")
    assert not (tmp_path / "c.sqlite").exists()


# -- verify's trust table, migrate-trust -------------------------------------------------------------------

def test_verify_counts_trusted_records_per_solver(dbfile, tmp_path):
    f = tmp_path / "hints.txt"
    f.write_text(f"{P.key()}={NAIVE}:1.5,0,x\n")
    other = tmp_path / "other.sqlite"
    with FindDB(str(other)) as d:
        d.store([rec(NAIVE), rec(WINO, kernel_hash="0123456789abcdef")])
    assert run("db", "import", f, "--db", other, "--device", "sm_80-108").exit_code == 0
    r = run("db", "verify", "--db", other, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["problems"] == [] and out["integrity"] == ["ok"] and out["records"] == 3
    assert out["trust"] == {NAIVE: {"yes": 1, "no": 1, "unknown": 0}, WINO: {"yes": 0, "no": 1, "unknown": 0}}
    r = run("db", "verify", "--db", other)
    assert r.exit_code == 0, r.output
    assert "trusted by this miofind" in r.output
    cells = [[c.strip() for c in ln.split("│")[1:-1]] for ln in r.output.splitlines() if ln.startswith("│ ")]
    rows = {c[0]: c[1:] for c in cells if len(c) == 4}
    assert rows[NAIVE] == ["1", "1", "0"] and rows[WINO] == ["0", "1", "0"] and rows["all"] == ["1", "2", "0"]


def test_migrate_trust(tmp_path):
    (sid, old), new = next(iter(legacy_trust_changes().items()))
    path = tmp_path / "u.sqlite"
    with FindDB(str(path)) as d:
        d.store([Record(device=DEV, device_name="", problem_key=P.key(), solver_id=sid, algorithm="a", time_ms=1.0,
                        workspace_bytes=0, kernel_hash=old, cuda_version="13.0")])
    r = run("db", "migrate-trust", "--db", path)
    assert r.exit_code == 0, r.output
    assert "re-keyed 1 find records, 0 tuned configs and 0 failed configs" in r.output
    assert [x.kernel_hash for x in records(path)] == [new]
    r = run("db", "migrate-trust", "--db", path)
    assert "re-keyed 0 find records" in r.output
