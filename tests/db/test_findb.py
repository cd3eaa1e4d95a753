"""FindDB: round trips, SQLite hardening (WAL, locks, corruption), validation, trust (CPU only)."""

from __future__ import annotations

import math
import os
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
import sqlalchemy as sa

from miofind.db import FindDB, FindDBError, default_db_url
from miofind.db import findb as findb_mod
from miofind.db.findb import FindDBWarning
from records import DEV, KEY, rec



@pytest.fixture
def db(tmp_path):
    with FindDB(str(tmp_path / "finddb.sqlite")) as d:
        yield d


def _moved(tmp_path: Path, name: str = "finddb.sqlite") -> list[Path]:
    return sorted(p for p in tmp_path.glob(f"{name}.corrupt-*") if not p.name.endswith(("-wal", "-shm")))


# -- round trips ---------------------------------------------------------------------------------

def test_store_lookup_sorted_and_upsert(anydb):
    assert anydb.store([rec("S1", 3.0), rec("S2", 1.0), rec("S3", 2.0, workspace_bytes=1 << 33)]) == 3
    got = anydb.lookup(DEV, KEY)
    assert [r.solver_id for r in got] == ["S2", "S3", "S1"]
    assert got[1].workspace_bytes == 1 << 33
    assert got[0] == rec("S2", 1.0, created_at=got[0].created_at)
    anydb.store([rec("S1", 0.5, workspace_bytes=128)])  # replaces the S1 row
    got = anydb.lookup(DEV, KEY)
    assert [(r.solver_id, r.time_ms, r.workspace_bytes) for r in got][0] == ("S1", 0.5, 128)
    assert len(got) == 3
    assert anydb.lookup(DEV, "other") == [] and anydb.lookup("sm_80-108", KEY) == []


def test_duplicates_in_one_batch_last_wins(anydb):
    anydb.store([rec("S1", 2.0), rec("S1", 1.5)])
    assert [r.time_ms for r in anydb.lookup(DEV, KEY)] == [1.5]


def test_all_fields_and_json_config_round_trip(anydb):
    r = rec("Tuned", 0.25, config={"tile": [64, 128], "vec": 4, "name": "x\u00e9", "nested": {"a": None}},
            verified=True, max_error=1.5e-6, driver_version="580.1", cupy_version="14.0.0",
            time_q20_ms=0.2, time_q80_ms=0.3, created_at=1234.5)
    anydb.store([r])
    (back,) = anydb.lookup(DEV, KEY)
    assert back == r
    assert isinstance(back.verified, bool) and isinstance(back.workspace_bytes, int)
    assert len({back, r}) == 1  # hashable despite the dict config


def test_delete_iter_and_stats(anydb):
    db = anydb
    db.store([rec("S1", 1.0), rec("S2", 2.0), rec("S1", 1.0, key="k2"), rec("S1", 1.0, device="sm_80-108")])
    s = db.stats()
    assert (s["records"], s["problems"], s["devices"]) == (4, 3, 2)
    assert s["solvers"] == {"S1": 3, "S2": 1}
    assert s["schema_version"] == findb_mod.SCHEMA_VERSION and s["url"] == db.url
    assert (s["file_bytes"] > 0) if db.path else s["file_bytes"] is None
    assert [r.problem_key for r in db.iter_records(device=DEV)] == [KEY, KEY, "k2"]
    assert [r.problem_key for r in db.iter_records(problem_key_like="k%")] == ["k2"]
    assert len(list(db.iter_records(limit=2))) == 2
    assert db.delete(device=DEV, problem_key=KEY, solver_id="S2") == 1
    assert db.delete(solver_id="S1", device=DEV) == 2
    assert db.delete() == 1
    assert db.stats()["records"] == 0


def test_upsert_statement_built_once_per_table(anydb):
    """The upsert is built once per dialect and table (its ``excluded`` columns cost more than a find's insert),
    and the one statement serves every later store, replacing and inserting as before."""
    findb_mod._upsert_statement.cache_clear()
    anydb.store([rec("S1", 2.0)])
    anydb.store([rec("S1", 1.0), rec("S2", 3.0)])
    anydb.store([rec("S3", 4.0, key="k2")])
    info = findb_mod._upsert_statement.cache_info()
    assert (info.currsize, info.hits) == (1, 2)
    assert [(r.solver_id, r.time_ms) for r in anydb.lookup(DEV, KEY)] == [("S1", 1.0), ("S2", 3.0)]
    assert [r.solver_id for r in anydb.lookup(DEV, "k2")] == ["S3"]


def test_generic_upsert_fallback(anydb, monkeypatch):
    monkeypatch.setattr(anydb._engine.dialect, "name", "somedb")
    anydb.store([rec("S1", 2.0), rec("S2", 3.0)])
    anydb.store([rec("S1", 1.0)])
    assert [(r.solver_id, r.time_ms) for r in anydb.lookup(DEV, KEY)] == [("S1", 1.0), ("S2", 3.0)]


def test_record_validation():
    for bad in (dict(time_ms=-1.0), dict(time_ms=math.inf), dict(time_ms=math.nan), dict(workspace_bytes=-1),
                dict(workspace_bytes=1.5), dict(verified=1), dict(config=[1]), dict(config={"x": object()}),
                dict(solver_id=""), dict(cuda_version=13)):
        with pytest.raises(ValueError):
            rec(**bad)


# -- URLs, read-only ------------------------------------------------------------------------------

def test_env_url_and_bare_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MIOFIND_DB", "sub/my.db")
    assert default_db_url() == f"sqlite:///{tmp_path / 'sub' / 'my.db'}"
    with FindDB() as d:
        assert d.path == tmp_path / "sub" / "my.db" and d.path.exists()
    monkeypatch.setenv("MIOFIND_DB", f"sqlite:///{tmp_path / 'u.db'}")
    with FindDB() as d:
        d.store([rec("S1")])
        assert d.path == tmp_path / "u.db"
    with FindDB(str(tmp_path / "u.db")) as d:  # bare path given directly
        assert len(d.lookup(DEV, KEY)) == 1


def test_default_url_without_env(tmp_path, monkeypatch):
    monkeypatch.delenv("MIOFIND_DB", raising=False)
    import platformdirs

    monkeypatch.setattr(platformdirs, "user_data_dir", lambda app: str(tmp_path / "data" / app))
    assert default_db_url() == f"sqlite:///{tmp_path / 'data' / 'miofind' / 'finddb.sqlite'}"
    assert not (tmp_path / "data").exists()  # naming the file creates nothing; the first writable open does
    with FindDB() as d:
        assert d.path == tmp_path / "data" / "miofind" / "finddb.sqlite" and d.path.exists()


def test_readonly(tmp_path):
    p = tmp_path / "dir with space%" / "f.sqlite"
    with FindDB(str(p)) as d:
        d.store([rec("S1")])
    before = p.read_bytes()
    with FindDB(str(p), readonly=True) as ro:
        assert len(ro.lookup(DEV, KEY)) == 1
        with pytest.raises(FindDBError, match="read-only"):
            ro.store([rec("S9")])
        with pytest.raises(FindDBError, match="read-only"):
            ro.delete()
    assert p.read_bytes() == before
    with pytest.raises(FindDBError, match="does not exist"):
        FindDB(str(tmp_path / "missing.sqlite"), readonly=True)


def test_in_memory():
    with FindDB("sqlite://") as d:
        d.store([rec("S1")])
        assert d.path is None and len(d.lookup(DEV, KEY)) == 1


# -- SQLite settings, schema ----------------------------------------------------------------------

def test_pragmas_on_every_connection(db):
    for _ in range(2):
        with db._engine.connect() as con:
            assert con.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert con.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
            assert con.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
        db._engine.dispose()


def test_schema_newer_than_code(tmp_path):
    p = tmp_path / "finddb.sqlite"
    FindDB(str(p)).close()
    con = sqlite3.connect(p)
    con.execute("UPDATE meta SET value='7' WHERE key='schema_version'")
    con.commit()
    con.close()
    for ro in (False, True):
        with pytest.raises(FindDBError) as ei:
            FindDB(str(p), readonly=ro)
        msg = str(ei.value)
        assert str(p) in msg and "7" in msg and str(findb_mod.SCHEMA_VERSION) in msg and "newer" in msg


def test_migration_hook(tmp_path, monkeypatch):
    p = tmp_path / "finddb.sqlite"
    FindDB(str(p)).close()
    calls = []
    v = findb_mod.SCHEMA_VERSION
    monkeypatch.setattr(findb_mod, "SCHEMA_VERSION", v + 1)
    monkeypatch.setitem(findb_mod._MIGRATIONS, v, lambda con: calls.append(con))
    with FindDB(str(p)) as d:
        assert d.stats()["schema_version"] == v + 1
    assert len(calls) == 1


def test_version_1_file_migrates_and_keeps_records(tmp_path):
    p = tmp_path / "finddb.sqlite"
    with FindDB(str(p)) as d:
        d.store([rec("S1"), rec("S2", 2.0)])
    con = sqlite3.connect(p)  # make it look like a file written by schema version 1
    for t in ("perf_records", "tune_failures", "tune_jobs"):
        con.execute(f"DROP TABLE {t}")
    con.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    con.commit()
    con.close()
    with FindDB(str(p)) as d:
        assert d.stats()["schema_version"] == findb_mod.SCHEMA_VERSION
        assert [r.solver_id for r in d.lookup(DEV, KEY)] == ["S1", "S2"]
        assert d.lookup_perf(DEV, KEY) == []


# -- corruption -----------------------------------------------------------------------------------

def _check_recovered(tmp_path: Path, original: bytes, wal: bytes | None = None) -> None:
    p = tmp_path / "finddb.sqlite"
    with pytest.warns(FindDBWarning, match="corrupt") as w:
        d = FindDB(str(p))
    (moved,) = _moved(tmp_path)
    assert str(p) in str(w[0].message) and str(moved) in str(w[0].message)
    assert moved.read_bytes() == original
    if wal is not None:
        assert Path(f"{moved}-wal").read_bytes() == wal
    with d:
        assert d.stats()["records"] == 0
        d.store([rec("S1")])
        assert len(d.lookup(DEV, KEY)) == 1
    assert moved.read_bytes() == original  # still there, untouched


def test_corrupt_random_bytes(tmp_path):
    p = tmp_path / "finddb.sqlite"
    junk, wal = os.urandom(8192), os.urandom(1000)
    p.write_bytes(junk)
    Path(f"{p}-wal").write_bytes(wal)
    _check_recovered(tmp_path, junk, wal)


def test_truncated_file(tmp_path):
    p = tmp_path / "finddb.sqlite"
    with FindDB(str(p)) as d:
        d.store([rec(f"S{i}", float(i), key=f"key-{i:05d}-" + "x" * 40, config={"i": i}) for i in range(1000)])
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    _check_recovered(tmp_path, data[: len(data) // 2])


def test_readonly_corrupt_raises_and_leaves_file(tmp_path):
    p = tmp_path / "finddb.sqlite"
    junk = os.urandom(4096)
    p.write_bytes(junk)
    with pytest.raises(FindDBError, match="corrupt"):
        FindDB(str(p), readonly=True)
    assert p.read_bytes() == junk and _moved(tmp_path) == []


def test_not_sqlite_errors_are_findb_errors(tmp_path):
    with pytest.raises(FindDBError, match="not a valid SQLAlchemy URL"):
        FindDB("nonsense://::")
    with pytest.raises(FindDBError, match="cannot create engine"):
        FindDB("nosuchdialect://host/db")
    d = FindDB(str(tmp_path / "x.sqlite"))
    d.close()
    with pytest.raises(FindDBError, match="closed"):
        d.lookup(DEV, KEY)


# -- concurrency ----------------------------------------------------------------------------------

def test_two_processes_write_at_once(tmp_path):
    p, go = tmp_path / "finddb.sqlite", tmp_path / "go"
    writer = Path(__file__).with_name("_writer.py")
    n = 200
    procs = [subprocess.Popen([sys.executable, str(writer), str(p), str(go), str(tmp_path / f"ready{i}"),
                               f"proc{i}", str(n)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for i in range(2)]
    deadline = time.time() + 30
    while not all((tmp_path / f"ready{i}").exists() for i in range(2)):
        assert time.time() < deadline and all(pr.poll() is None for pr in procs), "writers failed to start"
        time.sleep(0.01)
    go.touch()
    outs = [pr.communicate(timeout=60)[0].decode() for pr in procs]
    for pr, out in zip(procs, outs):
        assert pr.returncode == 0, out
    with FindDB(str(p)) as d:
        keys = {r.problem_key for r in d.iter_records()}
    assert keys == {f"proc{i}-{j}" for i in range(2) for j in range(n)}


def test_writer_waits_for_lock_held_elsewhere(db):
    con = sqlite3.connect(db.path, isolation_level=None, check_same_thread=False)
    con.execute("BEGIN IMMEDIATE")
    t = threading.Timer(0.5, lambda: con.execute("COMMIT"))
    t.start()
    start = time.time()
    db.store([rec("S1")])
    assert time.time() - start >= 0.4
    t.join()
    con.close()
    assert len(db.lookup(DEV, KEY)) == 1


def test_lock_errors_are_retried(db, monkeypatch):
    calls, sleeps = [], []
    monkeypatch.setattr(findb_mod.time, "sleep", sleeps.append)

    def flaky(con):
        calls.append(1)
        if len(calls) < 4:
            raise sa.exc.OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked"))
        return "done"

    assert db._run("test", flaky, write=True) == "done" and len(calls) == 4

    def always(con):
        raise sa.exc.OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked"))

    with pytest.raises(FindDBError, match="locked"):
        db._run("test", always, write=True)
    assert len(sleeps) == 3 + 9 and sleeps[-1] > sleeps[3]


def test_writes_begin_immediate_reads_deferred(db):
    seen = []
    sa.event.listen(db._engine, "before_cursor_execute", lambda con, cur, stmt, *a: seen.append(stmt))
    db.store([rec("S1")])
    assert "BEGIN IMMEDIATE" in seen
    seen.clear()
    db.lookup(DEV, KEY)
    assert "BEGIN" in seen and "BEGIN IMMEDIATE" not in seen


# -- validation of rows read back, trust ---------------------------------------------------------

def test_invalid_rows_are_skipped_with_warning(db):
    db.store([rec("Good", 1.0)])
    con = sqlite3.connect(db.path)
    cols = ("device, device_name, problem_key, solver_id, algorithm, time_ms, workspace_bytes, config, verified, "
            "package_version, kernel_hash, driver_version, cuda_version, cupy_version, created_at")
    bad = [("NegWs", 1.0, -5, None, 0), ("BadJson", 1.0, 0, "not json", 0), ("ListJson", 1.0, 0, "[1, 2]", 0),
           ("TextTime", "abc", 0, None, 0), ("InfTime", 9e999, 0, None, 0), ("BadBool", 1.0, 0, None, "yes")]
    for solver, t, ws, cfg, ver in bad:
        con.execute(f"INSERT INTO find_records ({cols}) VALUES (?, 'n', ?, ?, 'a', ?, ?, ?, ?, '', '', '', '', '', 0)",
                    (DEV, KEY, solver, t, ws, cfg, ver))
    con.commit()
    con.close()
    with pytest.warns(FindDBWarning, match="skipping invalid row") as w:
        got = db.lookup(DEV, KEY)
    assert [r.solver_id for r in got] == ["Good"]
    assert len(w) == len(bad)
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        assert [r.solver_id for r in db.iter_records()] == ["Good"]
    assert len(w2) == len(bad)




# -- URLs and files that SQLite would misread (issue 15): one-line FindDBErrors -----------------------

def test_nul_in_url_is_named(tmp_path):
    """A NUL once surfaced as Python's 'ValueError: embedded null byte'."""
    for url in (f"{tmp_path}/a\0b.sqlite", f"sqlite:///{tmp_path}/a\0b.sqlite"):
        with pytest.raises(FindDBError, match=r"^FindDB URL .*: contains a NUL character$"):
            FindDB(url)
    with pytest.raises(ValueError, match="NUL"):
        findb_mod.normalize_url("x\0")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("form", ["file:{p}", "file://{p}", "file://localhost{p}", "sqlite:///file:{p}?uri=true"])
def test_sqlite_uri_filenames_name_the_file(tmp_path, monkeypatch, form):
    """MIOFIND_DB=file:/tmp/x.sqlite silently created ./file:/tmp/x.sqlite."""
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "sub dir" / "x.sqlite"
    url = form.format(p=str(p).replace(" ", "%20"))
    monkeypatch.setenv("MIOFIND_DB", url)
    assert default_db_url() == f"sqlite:///{p}"
    with FindDB() as d:
        d.store([rec("S1")])
        assert d.path == p
    assert p.exists() and not (tmp_path / "file:").exists()
    with FindDB(url, readonly=True) as d:
        assert len(d.lookup(DEV, KEY)) == 1


def test_relative_file_uri_is_relative_to_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert findb_mod.normalize_url("file:rel/x.sqlite") == f"sqlite:///{tmp_path / 'rel' / 'x.sqlite'}"


@pytest.mark.parametrize("url,match", [
    ("file:{p}?mode=ro", r"SQLite URI parameters are not supported"),
    ("file:{p}#frag", r"SQLite URI parameters are not supported"),
    ("file://otherhost{p}", r"names no host"),
    ("sqlite:///file:{p}", r"needs \?uri=true, else SQLite creates a file literally named 'file:"),
    ("sqlite:///file:{p}?uri=true&mode=ro", r"SQLite URI parameters are not supported"),
    ("file:", r"names no file"),
])
def test_sqlite_uris_it_would_misread_are_refused(tmp_path, monkeypatch, url, match):
    monkeypatch.chdir(tmp_path)
    url = url.format(p=tmp_path / "x.sqlite")
    with pytest.raises(FindDBError, match=match) as ei:
        FindDB(url)
    assert "\n" not in str(ei.value)
    monkeypatch.setenv("MIOFIND_DB", url)
    with pytest.raises(FindDBError, match=match):
        default_db_url()
    assert list(tmp_path.iterdir()) == []


def test_shared_memory_uri_still_works():
    url = "sqlite:///file:miofind_mem?mode=memory&cache=shared&uri=true"
    assert findb_mod.normalize_url(url) == url
    with FindDB(url) as d:
        d.store([rec("S1")])
        assert d.path is None and len(d.lookup(DEV, KEY)) == 1


def test_parent_that_is_a_file(tmp_path):
    """A parent path that is a file once raised FileExistsError."""
    (tmp_path / "f").write_text("x")
    for sub in ("f/new.sqlite", "f/a/b/new.sqlite"):
        with pytest.raises(FindDBError, match=rf"^FindDB {tmp_path}/{sub} cannot be created: {tmp_path}/f is a "
                                              r"file, not a directory$"):
            FindDB(str(tmp_path / sub))
    with pytest.raises(FindDBError, match="does not exist"):
        FindDB(str(tmp_path / "f" / "new.sqlite"), readonly=True)
    assert (tmp_path / "f").read_text() == "x"


def test_directory_as_db(tmp_path):
    with pytest.raises(FindDBError, match=rf"^FindDB {tmp_path} is a directory, not a SQLite file$"):
        FindDB(str(tmp_path))


def test_directory_that_cannot_be_made(tmp_path, monkeypatch):
    """--db /ro/sub/new.sqlite once gave a PermissionError traceback (as root, mkdir is refused here by
    a stand-in that raises what a read-only directory raises)."""
    def refuse(self, *a, **kw):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(findb_mod.Path, "mkdir", refuse)
    with pytest.raises(FindDBError, match=r"cannot be created: cannot make the directory .*sub \(Permission denied\)$"):
        FindDB(str(tmp_path / "sub" / "new.sqlite"))


def test_existing_directory_not_writable(tmp_path, monkeypatch):
    real = os.access
    monkeypatch.setattr(findb_mod.os, "access", lambda p, m: False if Path(p) == tmp_path else real(p, m))
    with pytest.raises(FindDBError, match=rf"cannot be created: the directory {tmp_path} is not writable$"):
        FindDB(str(tmp_path / "new.sqlite"))
    assert list(tmp_path.iterdir()) == []


def test_unwritable_file_opens_read_only_and_works(tmp_path, monkeypatch):
    """A FindDB that cannot be written (file or directory) opens read-only: reads work, writes say why.
    (A stand-in os.access, so the test also runs as root; test_reliability runs the real thing.)"""
    p = tmp_path / "f.sqlite"
    with FindDB(str(p)) as d:
        d.store([rec("S1")])
    before = p.read_bytes()
    real = os.access
    monkeypatch.setattr(findb_mod.os, "access", lambda q, m: False if Path(q) == tmp_path else real(q, m))
    with FindDB(str(p)) as d:
        assert d.readonly and "mode=ro" in d.connect_url
        assert [r.solver_id for r in d.lookup(DEV, KEY)] == ["S1"] and d.stats()["records"] == 1
        with pytest.raises(FindDBError, match=rf"is read-only \(its directory {tmp_path} is not writable\)$"):
            d.store([rec("S2")])
    assert p.read_bytes() == before and sorted(x.name for x in tmp_path.iterdir()) == ["f.sqlite"]


def test_corrupt_file_that_cannot_be_moved_aside(tmp_path, monkeypatch):
    """_quarantine's PermissionError once escaped as a traceback."""
    p = tmp_path / "finddb.sqlite"
    p.write_bytes(os.urandom(4096))

    def refuse(a, b):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(findb_mod.os, "rename", refuse)
    with pytest.raises(FindDBError, match=r"is corrupt and cannot be moved aside .*\(Permission denied\); move or "
                                          r"remove it yourself"):
        FindDB(str(p))


def test_only_damage_counts_as_corruption():
    assert findb_mod._is_corruption(sqlite3.DatabaseError("file is not a database"))
    assert findb_mod._is_corruption(sqlite3.DatabaseError("database disk image is malformed"))
    for msg in ("attempt to write a readonly database", "unable to open database file", "database is locked"):
        assert not findb_mod._is_corruption(sqlite3.OperationalError(msg)), msg


# -- foreign databases are refused and left untouched -------------------------------------------------

def _sqlite_file(path: Path, sql: str) -> bytes:
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.commit()
    con.close()
    return path.read_bytes()


@pytest.mark.parametrize("sql,match", [
    ("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'a');",
     r"is not a FindDB: it holds the tables users but no miofind 'meta' table \(another application's database\?\)"),
    ("CREATE TABLE find_records(a, b);", r"holds the tables find_records but no miofind 'meta' table"),
    ("CREATE TABLE meta(name TEXT, data TEXT);", r"its 'meta' table has the columns data, name, not miofind's"),
    ("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('app', 'x');",
     r"its 'meta' table has no schema_version"),
])
def test_foreign_sqlite_file_is_refused_and_never_modified(tmp_path, sql, match):
    """Another application's SQLite file once got our five tables added to it; a file with another
    schema was stamped schema v2 and then failed on every operation."""
    p = tmp_path / "other.sqlite"
    before = _sqlite_file(p, sql)
    for ro in (False, True):
        with pytest.raises(FindDBError, match=match) as ei:
            FindDB(str(p), readonly=ro)
        assert "\n" not in str(ei.value) and "leaves it untouched" in str(ei.value)
    assert p.read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["other.sqlite"]


def test_schema_v2_file_missing_a_column_is_refused(tmp_path):
    p = tmp_path / "finddb.sqlite"
    FindDB(str(p)).close()
    con = sqlite3.connect(p)
    con.execute("ALTER TABLE find_records DROP COLUMN cupy_version")
    con.commit()
    con.close()
    before = p.read_bytes()
    for ro in (False, True):
        with pytest.raises(FindDBError, match=rf"\(schema version {findb_mod.SCHEMA_VERSION}\): table find_records "
                                              r"lacks the column\(s\) cupy_version; not a FindDB this miofind can use$"):
            FindDB(str(p), readonly=ro)
    assert p.read_bytes() == before


def test_schema_v2_file_missing_a_table_is_refused(tmp_path):
    p = tmp_path / "finddb.sqlite"
    FindDB(str(p)).close()
    con = sqlite3.connect(p)
    con.execute("DROP TABLE tune_jobs")
    con.commit()
    con.close()
    with pytest.raises(FindDBError, match=rf"\(schema version {findb_mod.SCHEMA_VERSION}\) lacks the table tune_jobs"):
        FindDB(str(p))


def test_empty_sqlite_file_becomes_a_finddb(tmp_path):
    p = tmp_path / "empty.sqlite"
    _sqlite_file(p, "")
    with FindDB(str(p)) as d:
        assert d.stats()["schema_version"] == findb_mod.SCHEMA_VERSION


def test_table_of_ours_with_another_shape_is_refused_on_any_database(any_url):
    """A database holding a find_records table of another application, and no miofind meta table, is not
    stamped as a FindDB (SQLite and PostgreSQL alike)."""
    eng = sa.create_engine(any_url)
    try:
        with eng.begin() as con:
            con.exec_driver_sql("CREATE TABLE find_records (a INTEGER, b TEXT)")
        with pytest.raises(FindDBError, match=r"is not a FindDB: it holds the tables find_records but no miofind "
                                              r"'meta' table"):
            FindDB(any_url)
        assert set(sa.inspect(eng).get_table_names()) == {"find_records"}  # nothing added
    finally:
        with eng.begin() as con:
            con.exec_driver_sql("DROP TABLE find_records")
        eng.dispose()
