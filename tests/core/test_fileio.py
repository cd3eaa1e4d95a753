"""Atomic writes (CPU): unpredictable temporary names from mkstemp in the target's directory, fsync
before the rename, nothing left behind and the old file intact on failure; ``db export -o`` uses them."""

from __future__ import annotations

import os
import stat
import tempfile

import pytest
from click.testing import CliRunner

from miofind import cli, fileio


@pytest.fixture
def mkstemp_calls(monkeypatch):
    calls = []
    real = tempfile.mkstemp

    def spy(*a, **k):
        fd, name = real(*a, **k)
        calls.append((k.get("dir"), name))
        return fd, name

    monkeypatch.setattr(fileio.tempfile, "mkstemp", spy)
    return calls


def test_atomic_write_uses_unpredictable_temp_names_in_the_target_dir(tmp_path, mkstemp_calls, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(fileio.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    out = tmp_path / "out.txt"
    fileio.atomic_write(out, "one\n")
    fileio.atomic_write(out, b"two\n")
    assert out.read_bytes() == b"two\n"
    assert [d for d, _ in mkstemp_calls] == [str(tmp_path)] * 2 and len(synced) == 2
    names = [os.path.basename(n) for _, n in mkstemp_calls]
    assert names[0] != names[1] and not any(str(os.getpid()) in n.split(".")[-2] for n in names)
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600  # mkstemp's mode unless one is asked for
    fileio.atomic_write(out, "three\n", mode=0o644)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


@pytest.mark.parametrize("where", ["fsync", "replace"])
def test_a_failed_atomic_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch, mkstemp_calls, where):
    out = tmp_path / "out.txt"
    out.write_text("old\n")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio.os, where, boom)
    with pytest.raises(OSError, match="No space left"):
        fileio.atomic_write(out, "new\n")
    assert len(mkstemp_calls) == 1 and not os.path.exists(mkstemp_calls[0][1])
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_default_file_mode_follows_the_umask():
    mask = os.umask(0o027)
    try:
        assert fileio.default_file_mode() == 0o640
    finally:
        os.umask(mask)


# -- db export -o ------------------------------------------------------------------------------------

@pytest.fixture
def dbfile(tmp_path):
    from miofind.db import FindDB
    from miofind.db.findb import Record

    path = tmp_path / "finddb.sqlite"
    with FindDB(str(path)) as d:
        d.store([Record(device="sm_90-132", device_name="H100", problem_key="k", solver_id="ConvDirectNaiveConvFwd",
                        algorithm="miopenConvolutionFwdAlgoDirect", time_ms=1.0, workspace_bytes=0)])
    return path


def test_export_writes_atomically_through_mkstemp(dbfile, tmp_path, mkstemp_calls):
    outdir = tmp_path / "exports"
    outdir.mkdir()
    out = outdir / "db.jsonl"
    r = CliRunner().invoke(cli.main, ["db", "export", "--db", str(dbfile), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert [d for d, _ in mkstemp_calls] == [str(outdir)]
    assert out.read_text().count("\n") >= 1 and [p.name for p in outdir.iterdir()] == ["db.jsonl"]
    assert stat.S_IMODE(out.stat().st_mode) == fileio.default_file_mode()  # as open() would have made it


def test_a_failed_export_names_the_output_and_leaves_no_temp(dbfile, tmp_path, monkeypatch, mkstemp_calls):
    outdir = tmp_path / "exports"
    outdir.mkdir()
    out = outdir / "db.jsonl"
    out.write_text("previous export\n")

    def boom(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fileio.os, "fsync", boom)
    r = CliRunner().invoke(cli.main, ["db", "export", "--db", str(dbfile), "-o", str(out)])
    assert r.exit_code == 1 and "Traceback" not in r.output
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert err == [f"miofind: --output={str(out)!r}: cannot write it (Input/output error)"]
    assert out.read_text() == "previous export\n" and [p.name for p in outdir.iterdir()] == ["db.jsonl"]
    assert len(mkstemp_calls) == 1 and not os.path.exists(mkstemp_calls[0][1])
