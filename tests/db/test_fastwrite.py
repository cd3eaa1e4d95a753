"""A find's writes without SQLAlchemy (miofind.db.fastwrite), on the CPU: the schema it creates is FindDB's,
statement for statement; its rows are the rows FindDB writes for the same calls; FindDB takes over wherever it
would act (an older schema, a corrupt file, another application's file, a read-only file, other URLs); writers
of both kinds in several processes lose nothing; and a miss that stores imports no SQLAlchemy."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import miofind.find as find
from miofind.db import FindDB, FindDBError, FindDBWarning, base, fastread, fastwrite
from miofind.db.base import FindFailure
from miofind.db.system import Overlay
from miofind.device import DeviceInfo

from db_files import downgrade_to_schema_2
from records import DEV, KEY, rec

REPO = Path(__file__).resolve().parents[2]
H100 = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")


def url(p: Path) -> str:
    return f"sqlite:///{p}"


def master(p: Path) -> list[tuple]:
    con = sqlite3.connect(p)
    try:
        return con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        con.close()


def table(p: Path, name: str, drop=("id",)) -> list[tuple]:
    con = sqlite3.connect(p)
    try:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({name})") if r[1] not in drop]
        return con.execute(f"SELECT {', '.join(cols)} FROM {name} ORDER BY {', '.join(cols)}").fetchall()
    finally:
        con.close()


@pytest.fixture(autouse=True)
def fresh_module_state():
    """Each test starts with no Writer, no fallback and no checked file remembered."""
    fastwrite._writers.clear()
    fastwrite._to_findb.clear()
    fastread._checked.clear()
    yield
    fastwrite._writers.clear()
    fastwrite._to_findb.clear()
    fastread._checked.clear()


def failures(solvers=("A", "B"), stage="verify"):
    return [FindFailure(DEV, KEY, s, {"x": i} if i else None, stage, f"{s} failed", kernel_hash="h",
                        cuda_version="13.0", package_version="0.1.0", created_at=1.0 + i) for i, s in enumerate(solvers)]


def same_calls(db) -> None:
    """One sequence of writes, made through a FindDB or a Writer."""
    db.store([rec("A", 1.0, config={"b": 2, "a": 1}, verified=True, max_error=1e-6, time_q20_ms=0.9, time_q80_ms=1.1,
                  created_at=5.0), rec("B", 2.0, created_at=5.0, build="generic")])
    db.store([rec("A", 0.5, created_at=6.0), rec("A", 0.7, created_at=7.0), rec("C", 3.0, created_at=6.0)])
    db.store_find_failures(DEV, KEY, ["A", "B", "C"], failures(("B",)), failed={"B"})
    db.store_find_failures(DEV, KEY, ["C"], failures(("C", "D")), failed=())
    db.store_find_failures(DEV, KEY, ["D"], [], failed=())
    db.store_find_failures(DEV, "other-key", ["A"], [], failed=())   # nothing recorded there: no write


def test_schema_is_findb_schema(tmp_path):
    a, b = tmp_path / "a.sqlite", tmp_path / "b" / "c" / "b.sqlite"
    FindDB(url(a)).close()
    w = fastwrite.writer(url(b))
    assert isinstance(w, fastwrite.Writer)
    w.store([rec()])
    assert master(b) == master(a)
    assert table(b, "meta", ()) == table(a, "meta", ()) == [("schema_version", str(base.SCHEMA_VERSION))]
    con = sqlite3.connect(b)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    con.close()
    # FindDB opens what the Writer made as its own, and reads the record back
    with FindDB(url(b)) as db:
        assert [r.solver_id for r in db.lookup(DEV, KEY)] == ["ConvDirectNaiveConvFwd"]


def test_rows_are_findbs_rows(tmp_path):
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    with FindDB(url(a)) as db:
        same_calls(db)
    w = fastwrite.writer(url(b))
    assert w is not None
    same_calls(w)
    for t in ("find_records", "find_failures"):
        assert table(b, t) == table(a, t), t
    with FindDB(url(a)) as da, FindDB(url(b)) as db:
        assert da.lookup(DEV, KEY) == db.lookup(DEV, KEY)
        assert da.find_failures(DEV, KEY) == db.find_failures(DEV, KEY)
    assert [r[3] for r in table(b, "find_records")] == ["A", "C"]   # B's record went with its failure


def test_writes_count_and_a_noop_does_not(tmp_path):
    w = fastwrite.writer(url(tmp_path / "x.sqlite"))
    g = base.write_generation()
    w.store([rec()])
    assert base.write_generation() != g
    g = base.write_generation()
    assert w.store([]) == 0 and w.store_find_failures(DEV, KEY, ["A"], []) == 0
    assert base.write_generation() == g   # nothing written, no cached answer made stale


def test_bad_items_are_refused_by_name(tmp_path):
    w = fastwrite.writer(url(tmp_path / "x.sqlite"))
    with pytest.raises(FindDBError, match="expected Record objects, got str"):
        w.store(["nope"])
    with pytest.raises(FindDBError, match="stored under"):
        w.store_find_failures(DEV, "k2", ["A"], failures(("A",)))


def test_older_schema_goes_to_findb_which_migrates(tmp_path):
    p = tmp_path / "old.sqlite"
    with FindDB(url(p)) as db:
        db.store([rec("A")])
    downgrade_to_schema_2(p)
    assert fastwrite.writer(url(p)) is None     # FindDB migrates it
    stored = find.store_dbs(url(p), H100, None, fastwrite.writer(url(p)))
    assert isinstance(stored.user, FindDB)
    stored.user.store([rec("B")])
    assert table(p, "meta", ()) == [("schema_version", str(base.SCHEMA_VERSION))]


def test_schema_changed_under_a_writer_falls_back(tmp_path):
    p = tmp_path / "x.sqlite"
    w = fastwrite.writer(url(p))
    w.store([rec("A")])
    downgrade_to_schema_2(p)                   # another process put an older file there since
    w.store([rec("B")])                        # FindDB migrated it and wrote
    assert table(p, "meta", ()) == [("schema_version", str(base.SCHEMA_VERSION))]
    assert sorted(r[3] for r in table(p, "find_records")) == ["A", "B"]
    assert fastwrite.writer(url(p)) is None    # FindDB's from now on, in this process


def test_corrupt_file_is_findbs_to_move_aside(tmp_path):
    p = tmp_path / "bad.sqlite"
    p.write_bytes(b"this is not a database" * 100)
    assert fastwrite.writer(url(p)) is None
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        find.store_dbs(url(p), H100, None, fastwrite.writer(url(p))).user.store([rec()])
    assert any(issubclass(x.category, FindDBWarning) and "corrupt" in str(x.message) for x in got)
    assert any(q.name.startswith("bad.sqlite.corrupt-") for q in tmp_path.iterdir())


def test_foreign_file_is_refused_by_findb(tmp_path):
    p = tmp_path / "other.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE notes (x)")
    con.commit()
    con.close()
    assert fastwrite.writer(url(p)) is None
    with pytest.raises(FindDBError, match="not a FindDB"):
        find.store_dbs(url(p), H100, None, fastwrite.writer(url(p)))
    assert table(p, "notes", ()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_read_only_file_is_findbs(tmp_path):
    p = tmp_path / "ro.sqlite"
    FindDB(url(p)).close()
    p.chmod(0o444)
    assert fastwrite.writer(url(p)) is None


def test_other_urls_are_findbs(tmp_path):
    assert fastwrite.writer("sqlite://") is None
    assert fastwrite.writer(f"sqlite:///{tmp_path}/x.sqlite?timeout=3") is None
    assert fastwrite.writer("postgresql://u@localhost/db") is None
    with FindDB(url(tmp_path / "y.sqlite")) as db:
        assert fastwrite.writer(db) is None
    f = tmp_path / "file"
    f.write_text("x")
    assert fastwrite.writer(url(f / "sub" / "z.sqlite")) is None   # FindDB says the directory is a file


def _child_store(path: str, prefix: str, n: int, kind: str) -> None:
    from miofind.db import FindDB, fastwrite as fw
    from records import rec as r
    u = f"sqlite:///{path}"
    if kind == "findb":
        db = FindDB(u)
    elif kind == "fast":
        db = fw.writer(u)
        assert isinstance(db, fw.Writer)
    else:   # as a find takes it (find.store_dbs): a Writer, or FindDB while the file is not one a Writer takes as is
        db = fw.writer(u) or FindDB(u)
    for i in range(n):
        db.store([r(f"{prefix}{i}", float(i))])
        db.store_find_failures(DEV, KEY, [f"{prefix}{i}"], [], failed=())


def _run_children(p: Path, kinds: tuple[str, ...], n: int = 40) -> None:
    ctx = multiprocessing.get_context("spawn")
    sys.path.insert(0, str(Path(__file__).parent))
    procs = [ctx.Process(target=_child_store, args=(str(p), f"{k}{j}-", n, k)) for j in range(2) for k in kinds]
    for q in procs:
        q.start()
    for q in procs:
        q.join(120)
        assert q.exitcode == 0
    got = {r[3] for r in table(p, "find_records")}
    assert got == {f"{k}{j}-{i}" for j in range(2) for k in kinds for i in range(n)}


def test_concurrent_writers_lose_nothing(tmp_path):
    """Writers and FindDBs in four processes on one existing file."""
    p = tmp_path / "shared.sqlite"
    fastwrite.writer(url(p)).store_find_failures(DEV, KEY, ["X"], failures(("X",)))    # the file, made
    _run_children(p, ("fast", "findb"))


def test_concurrent_first_writers_of_a_new_file_lose_nothing(tmp_path):
    """Four processes make the same new file at once, each as a find would write it."""
    _run_children(tmp_path / "d" / "new.sqlite", ("find", "findb"))


def test_a_miss_stores_without_sqlalchemy(tmp_path):
    """A new process: the reads of a miss (fastread) and its writes (store_dbs) of a new user DB import no
    SQLAlchemy; the records are there for FindDB afterwards."""
    p = tmp_path / "new" / "user.sqlite"
    code = f"""
import sys
from miofind.db import fastread, fastwrite
import miofind.find as find
from miofind.device import DeviceInfo
sys.path.insert(0, {str(Path(__file__).parent)!r})
from records import rec
from miofind.db.base import FindFailure
dev = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")
u = {url(p)!r}
for i in range(2):
    reads = find._fast_reads(u, dev)
    assert reads is not None and reads.system is not None, reads
    dbs = find.store_dbs(u, dev, reads, fastwrite.writer(u))
    dbs.user.store([rec("S%d" % i)])
    dbs.user.store_find_failures(rec().device, rec().problem_key, ["T"],
                                 [FindFailure(rec().device, rec().problem_key, "T", None, "verify", "wrong")])
assert [r.solver_id for r in find._fast_reads(u, dev).user.lookup(rec().device, rec().problem_key)] == ["S0", "S1"]
print("sqlalchemy" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    with FindDB(url(p)) as db:
        assert {r.solver_id for r in db.lookup(DEV, KEY)} == {"S0", "S1"}
        assert [f.solver_id for f in db.find_failures(DEV, KEY)] == ["T"]


def test_store_dbs_keeps_an_open_findb(tmp_path):
    from miofind.db.handles import open_db
    u = url(tmp_path / "x.sqlite")
    h = open_db(u)
    assert fastwrite.writer(u) is None and find.store_dbs(u, H100, None, fastwrite.writer(u)).user is h
    assert isinstance(find.store_dbs(u, H100, None, fastwrite.writer(u)), Overlay)
