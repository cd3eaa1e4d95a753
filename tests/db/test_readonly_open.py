"""How FindDB opens SQLite files: read-only opens write nothing (no byte, no -wal/-shm file), a writable
handle that only reads leaves the file as it was, and WAL comes with the first write (CPU only)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest

from miofind.db import FindDB
from miofind.db import findb as findb_mod
from miofind.db.findb import readonly_sqlite_query, sqlite_file
from records import DEV, KEY, rec


def files(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def journal_byte(p: Path) -> int:
    return p.read_bytes()[18]  # 1: rollback journal, 2: WAL


@pytest.fixture
def wal_db(tmp_path):
    p = tmp_path / "wal.sqlite"
    with FindDB(str(p)) as d:
        d.store([rec("S1", 1.0), rec("S2", 2.0), rec("S3", 3.0, device="sm_80-108-A100")])
    assert journal_byte(p) == 2 and not Path(f"{p}-wal").exists()
    return p


@pytest.fixture
def rollback_db(wal_db):
    con = sqlite3.connect(wal_db)
    assert con.execute("PRAGMA journal_mode=DELETE").fetchone() == ("delete",)
    con.close()
    assert journal_byte(wal_db) == 1
    return wal_db


def test_readonly_query_rules(wal_db, tmp_path):
    assert readonly_sqlite_query(wal_db) == {"mode": "ro", "immutable": "1"}  # WAL, no writer
    writer = FindDB(str(wal_db))
    try:
        writer.store([rec("S4")])
        assert Path(f"{wal_db}-wal").exists()
        assert readonly_sqlite_query(wal_db) == {"mode": "ro"}  # a live writer's -wal must be read
    finally:
        writer.close()
    con = sqlite3.connect(wal_db)
    con.execute("PRAGMA journal_mode=DELETE")
    con.close()
    assert readonly_sqlite_query(wal_db) == {"mode": "ro"}
    assert readonly_sqlite_query(wal_db, immutable=True) == {"mode": "ro", "immutable": "1"}
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database" * 10)
    assert readonly_sqlite_query(junk) == {"mode": "ro"}


@pytest.mark.parametrize("kind", ["wal", "rollback"])
def test_readonly_open_writes_nothing(request, kind):
    p = request.getfixturevalue(f"{kind}_db")
    before = files(p.parent)
    with FindDB(str(p), readonly=True) as h:
        assert "mode=ro" in h.connect_url and ("immutable=1" in h.connect_url) == (kind == "wal")
        assert [r.solver_id for r in h.lookup(DEV, KEY)] == ["S1", "S2"]
        assert h.count_records() == 3 and h.stats()["records"] == 3
    assert files(p.parent) == before


def test_corrupt_check_of_readonly_open_writes_nothing(wal_db):
    """The quick_check run on opening uses the same read-only parameters."""
    before = files(wal_db.parent)
    FindDB(str(wal_db), readonly=True).close()
    assert files(wal_db.parent) == before


def test_writable_handle_that_only_reads_leaves_the_file(rollback_db):
    before = files(rollback_db.parent)
    with FindDB(str(rollback_db)) as h:
        assert len(h.lookup(DEV, KEY)) == 2 and h.count_records() == 3
        assert files(rollback_db.parent) == before  # no WAL switch, no journal while reading
        h.store([rec("S9")])
        assert journal_byte(rollback_db) == 2  # the first write switches to WAL, for good
        with h._engine.connect() as con:
            assert con.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    assert journal_byte(rollback_db) == 2


def test_count_records_matches_iter_records(anydb):
    anydb.store([rec("S1", 1.0), rec("S2", 2.0), rec("S1", 1.0, key="other-key"), rec("S3", device="sm_80-108-A100")])
    for device in (None, DEV, [DEV, "sm_80-108-A100"], ["nope"], []):
        for like in (None, "other%", "%"):
            assert anydb.count_records(device, like) == len(list(anydb.iter_records(device, like))), (device, like)
    assert anydb.count_records() == 4 and anydb.count_records([DEV]) == 3
    assert [r.solver_id for r in anydb.iter_records([DEV, "sm_80-108-A100"], limit=2)] == ["S3", "S1"]


def test_sqlite_file_opens_nothing(tmp_path):
    p = tmp_path / "sub" / "x.sqlite"
    assert sqlite_file(str(p)) == p and sqlite_file(f"sqlite:///{p}") == p
    assert sqlite_file("sqlite://") is None and sqlite_file("postgresql+psycopg://u:pw@h/db") is None
    assert not (tmp_path / "sub").exists()
    with pytest.raises(ValueError, match="not a valid SQLAlchemy URL"):
        sqlite_file("://nope")


_COUNT = ("import sqlite3, sys; con = sqlite3.connect(sys.argv[1], uri=True); "
          "print(con.execute('SELECT count(*) FROM find_records').fetchone()[0]); con.close()")


def _read_unprivileged(uri: str) -> tuple[int, str]:
    """Count the records at a SQLite URI as a user that directory permissions bind: this process when it
    is not root, else a system Python run as 'nobody' (root writes into a 0555 directory all the same)."""
    if os.geteuid() != 0:
        try:
            con = sqlite3.connect(uri, uri=True)
            try:
                return 0, str(con.execute("SELECT count(*) FROM find_records").fetchone()[0])
            finally:
                con.close()
        except sqlite3.Error as e:
            return 1, str(e)
    py = shutil.which("python3", path="/usr/bin:/bin")
    if py is None:
        pytest.skip("running as root with no system python3 to run as 'nobody'")
    r = subprocess.run([py, "-c", _COUNT, uri], user=65534, group=65534, capture_output=True, text=True, cwd="/")
    return r.returncode, (r.stdout if r.returncode == 0 else r.stderr).strip()


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_readonly_parameters_work_in_a_read_only_directory(wal_db):
    """A WAL file without a -wal file and a rollback-journal file, in a directory nobody may write
    (0555), read with the parameters FindDB uses; plain mode=ro on the WAL file could not open it."""
    d = Path(tempfile.mkdtemp(prefix="miofind-ro-"))  # outside pytest's 0700 tree, so 'nobody' can enter
    try:
        d.chmod(0o755)
        wal, rollback = d / "wal.sqlite", d / "rollback.sqlite"
        shutil.copyfile(wal_db, wal)
        shutil.copyfile(wal_db, rollback)
        con = sqlite3.connect(rollback)
        con.execute("PRAGMA journal_mode=DELETE")
        con.close()
        assert (journal_byte(wal), journal_byte(rollback)) == (2, 1) and not Path(f"{wal}-wal").exists()
        before = files(d)
        d.chmod(0o555)
        for p in (wal, rollback):
            assert _read_unprivileged(findb_mod._sqlite_uri(p, readonly_sqlite_query(p))) == (0, "3")
        rc, err = _read_unprivileged(findb_mod._sqlite_uri(wal, {"mode": "ro"}))
        assert rc != 0 and ("readonly database" in err or "unable to open" in err), err  # why immutable=1 is needed
        assert files(d) == before
    finally:
        d.chmod(0o755)
        shutil.rmtree(d)
