"""DB hits without SQLAlchemy (miofind.db.fastread), on the CPU: the same records and answers as FindDB on
the shipped DB and on user DBs (trust filtering included), FindDB wherever it would act or refuse (old
schema, foreign file, missing file, read-only directory, corrupt file, newer schema, other URLs), and
a process answered from its FindDBs that never imports SQLAlchemy."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import miofind.api as api
import miofind.find as find
from miofind import __version__
from miofind.db import FindDB, FindDBError, FindDBWarning, Record, base, fastread
from miofind.db import findb as findb_mod
from miofind.db import system as system_mod
from miofind.db.findb import FindFailure, PerfRecord, sqlite_file
from miofind.db.handles import open_dbs
from miofind.db.system import Overlay, system_db_files
from miofind.device import DeviceInfo
from miofind.problem import ProblemDescription
from miofind.trust import trust_key

from db_files import downgrade_to_schema_2

REPO = Path(__file__).resolve().parents[2]
DEV = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")
P = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
SHIPPED = system_db_files()[("sm_90", 132)]


def files(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir()) if p.is_file()}


def cands(p=P):
    """P's candidates without cuDNN's (whose candidacy depends on its frontend being installed)."""
    return [s for s in find.candidates(p)[0] if s.family != "cudnn"]


# what each of P's candidates has in the user DB, by index: a trusted record, unless said otherwise here;
# the last has a find failure recorded (a find does not offer it)
UNTRUSTED, OTHER_CUDA, UNVERIFIED, BAD_CONFIG = 1, 2, 3, 4


def user_records(p=P):
    """Records of every candidate of ``p`` for DEV, as the indices above say."""
    out = []
    for i, s in enumerate(cands(p)):
        kw = dict(kernel_hash=trust_key(s), cuda_version="13.0", verified=True, config=None)
        if i == UNTRUSTED:
            kw["kernel_hash"] = "src=0000000000000000;v=1"
        elif i == OTHER_CUDA:
            kw["cuda_version"] = "12.4"
        elif i == UNVERIFIED:
            kw["verified"] = False
        elif i == BAD_CONFIG:
            kw["config"] = {"NOT_A_TUNABLE": 1}
        out.append(Record(device=DEV.db_name, device_name=DEV.name, problem_key=p.key(), solver_id=s.id,
                          algorithm=s.algorithm, time_ms=1.0 + i, workspace_bytes=s.workspace_bytes(p),
                          package_version=__version__, created_at=time.time(), time_q20_ms=0.9 + i, **kw))
    return out


@pytest.fixture
def user_db(tmp_path, monkeypatch):
    """A current-schema user DB with P's records, a tuned config and the find failures of the last candidate (its
    shipped tuned config and the default a find measures beside it: both, so that they settle it); MIOFIND_DB names it
    and MIOFIND_SYSTEM_DB the shipped file."""
    p = tmp_path / "user.sqlite"
    s, last = next(c for c in cands() if c.tunable), cands()[-1]
    with FindDB(str(SHIPPED), readonly=True, immutable=True) as sysdb:   # the config a find would measure
        cfg = find.tuned_config(Overlay(None, sysdb), DEV, P, last, report=False)
    with FindDB(str(p)) as d:
        d.store(user_records())
        d.store_perf([PerfRecord(DEV.db_name, P.key(), s.id, dict(s.default_config(P.as_conv())), 0.5,
                                 kernel_hash=trust_key(s), cuda_version="13.0")])
        d.store_find_failures(DEV.db_name, P.key(), [last.id],
                              [FindFailure(DEV.db_name, P.key(), last.id, c, "compile", "boom",
                                           kernel_hash=trust_key(last), cuda_version="13.0")
                               for c in [cfg] + find.beside_tuned(P, last, cfg)])
    monkeypatch.setenv("MIOFIND_DB", str(p))
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(SHIPPED))
    # a FindDB of the shipped file that an earlier test in this process opened is kept by design
    # (fastread then serves it); these tests compare the two readers, so each starts with none open
    monkeypatch.setattr(system_mod, "_opened", {})
    return p


def both(db, dev=DEV, readonly=False):
    """(the fastread overlay, the open_dbs overlay) of the same DBs."""
    return fastread.overlay(db, dev, readonly=readonly), open_dbs(db, dev, readonly=readonly)


# -- the schema is declared once for both readers ------------------------------------------------------

def test_schema_names_are_findbs():
    assert base.TABLE_COLUMNS == {t.name: tuple(c.name for c in t.c) for t in findb_mod._md.sorted_tables}
    for cls, table in base.TABLE_OF.items():
        assert findb_mod._KINDS[cls][0].name == table
        assert {f.name for f in dataclasses.fields(cls)} == set(findb_mod._data_cols(findb_mod._KINDS[cls][0]))
    assert findb_mod._from_row is base.from_row


@pytest.mark.parametrize("url", ["sqlite:////abs/x.sqlite", "sqlite:///rel/x.sqlite", "sqlite:////a b/c@d:e#f.db",
                                 "rel/x.sqlite", "file:/abs/x.sqlite", "sqlite:///file:/abs/x.sqlite?uri=true"])
def test_plain_sqlite_path_is_sqlalchemys(url):
    assert fastread.plain_sqlite_path(base.normalize_url(url)) == sqlite_file(url)


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite:////x/a%20b.db", "sqlite:////x/a.db?mode=ro",
                                 "sqlite+pysqlite:////x/a.db", "postgresql://u@localhost/finddb"])
def test_other_urls_are_left_to_findb(url):
    assert fastread.plain_sqlite_path(url) is None
    assert fastread.overlay(url, DEV) is None


# -- the same records -----------------------------------------------------------------------------------

def shipped_keys(n_per_dir=3):
    con = sqlite3.connect(f"file:{SHIPPED}?mode=ro&immutable=1", uri=True)
    try:
        keys = []
        for d in "FBW":
            keys += [r[0] for r in con.execute(
                "SELECT problem_key FROM find_records WHERE problem_key LIKE ? GROUP BY problem_key "
                "ORDER BY count(*) DESC, problem_key LIMIT ?", (f"%-{d}", n_per_dir))]
        keys += [r[0] for r in con.execute("SELECT problem_key FROM perf_records ORDER BY id LIMIT 2")]
    finally:
        con.close()
    return keys


def test_same_records_as_findb_on_the_shipped_db():
    r = fastread._reader(SHIPPED, writable=False, immutable=True)
    assert isinstance(r, fastread.Reader) and r._version == base.SCHEMA_VERSION
    with FindDB(str(SHIPPED), readonly=True, immutable=True) as d:
        keys = shipped_keys()
        assert len(keys) >= 9
        n = 0
        for key in keys + ["no-such-key"]:
            for dev in (None, "sm_90-132", "sm_80-108"):
                assert r.lookup(dev, key) == d.lookup(dev, key)
                n += len(r.lookup(dev, key))
                assert r.lookup_perf(dev, key) == d.lookup_perf(dev, key)
                for s in {x.solver_id for x in d.lookup_perf(dev, key)}:
                    assert r.lookup_perf(dev, key, s) == d.lookup_perf(dev, key, s)
            assert r.find_failures("sm_90-132", key) == d.find_failures("sm_90-132", key) == []
        assert n > 50 and any(x.config for k in keys for x in r.lookup(None, k))


@pytest.mark.parametrize("readonly", [False, True])
def test_same_answer_as_findb_with_trust_filtering(user_db, readonly):
    fast, slow = both(None, readonly=readonly)
    assert isinstance(fast.user, fastread.Reader) and isinstance(fast.system, fastread.Reader)
    assert isinstance(slow.user, FindDB)
    for dbs in (fast, slow):
        assert [name for name, _ in dbs.layers] == ["user", "system"]
    assert fast.lookup(DEV.db_name, P.key()) == slow.lookup(DEV.db_name, P.key())
    c = cands()
    for verify in (True, False):
        got = [find.from_db(dbs, DEV, P, c, verify, None) for dbs in (fast, slow)]
        assert got[0] == got[1]
        sols, complete, layer = got[0]
        # the records under another trust key, CUDA major and an invalid config are not offered
        assert not complete and layer == "user"
        assert {s.solver_id for s in sols} == {s.id for i, s in enumerate(c) if i not in (UNTRUSTED, OTHER_CUDA,
                                               BAD_CONFIG) and (i != UNVERIFIED or not verify)}
        assert find.settled_failures(fast, DEV, P, c) == find.settled_failures(slow, DEV, P, c)
        assert set(find.settled_failures(fast, DEV, P, c)) == {c[-1].id}
    tunable = next(s for s in c if s.tunable)
    for s in c:
        assert list(fast.lookup_perf(DEV.db_name, P.key(), s.id)) == list(slow.lookup_perf(DEV.db_name, P.key(), s.id))
        assert find.tuned_config(fast, DEV, P, s, report=False) == find.tuned_config(slow, DEV, P, s, report=False)
    assert find.tuned_config(fast, DEV, P, tunable) == tunable.default_config(P.as_conv())   # the user DB's


@pytest.mark.parametrize("readonly", [False, True])
def test_a_perf_snapshot_answers_as_its_overlay_from_one_query_per_layer(user_db, readonly):
    """``PerfSnapshot`` (a find's reads): every solver's PerfDB records and tuned config as the Overlay reads them, for
    the fastread layers and FindDB's alike, from one query of each layer per problem."""
    from miofind.db.system import PerfSnapshot
    for dbs in both(None, readonly=readonly):
        assert PerfSnapshot.of(dbs).layers == dbs.layers
        asked = []
        snap = PerfSnapshot(_Counted(dbs.user, asked), _Counted(dbs.system, asked))
        for s in cands():
            want = list(dbs.lookup_perf(DEV.db_name, P.key(), s.id))
            assert list(snap.lookup_perf(DEV.db_name, P.key(), s.id)) == want
            assert find.tuned_config(snap, DEV, P, s, report=False) == find.tuned_config(dbs, DEV, P, s, report=False)
        assert asked == [(DEV.db_name, P.key(), None), (None, P.key(), None)]
        assert any(list(snap.lookup_perf(DEV.db_name, P.key(), s.id)) for s in cands())
        assert isinstance(snap, Overlay) and snap.layers[0][0] == "user"


def _count_connects(monkeypatch) -> list:
    """Each connection a Reader of a file that is not immutable opens is appended (its URI parameters) to the list."""
    opened, connect = [], fastread.Reader._connect

    def counted(self, query=None):
        if not self._immutable:
            opened.append(query)
        return connect(self, query)

    monkeypatch.setattr(fastread.Reader, "_connect", counted)
    return opened


def test_one_connection_serves_a_scopes_reads_of_the_user_db(user_db, monkeypatch):
    """Inside ``one_connection()`` the reads of the user DB share one connection, closed at the scope's end, with the
    records each read gives outside it; outside, each read opens its own."""
    opened = _count_connects(monkeypatch)
    want = fastread.overlay(None, DEV, readonly=True)
    want = (want.user.lookup(DEV.db_name, P.key()), want.user.lookup_perf(DEV.db_name, P.key()),
            want.user.find_failures(DEV.db_name, P.key()), want.user.solver_ids())
    assert len(opened) == 4 and all(want[:3])
    opened.clear()
    with fastread.one_connection():
        for _ in range(2):   # a find's overlays: db_answer's, then the reads of a miss
            user = fastread.overlay(None, DEV, readonly=True).user
            got = (user.lookup(DEV.db_name, P.key()), user.lookup_perf(DEV.db_name, P.key()),
                   user.find_failures(DEV.db_name, P.key()), user.solver_ids())
            assert got == want
        with fastread.one_connection():   # reentrant: the same connection
            assert user.lookup(DEV.db_name, P.key()) == want[0]
        (con, _), = fastread._held.cons.values()
    assert len(opened) == 1 and fastread._held.cons is None
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        con.execute("SELECT 1")


@pytest.mark.parametrize("writer_open", [False, True], ids=["writer-closed", "writer-open"])
def test_one_connection_reads_what_a_writer_committed_meanwhile(user_db, monkeypatch, writer_open):
    """A record stored by another connection between two reads of a scope is in the second read: with the writer
    still open (its -wal file beside the file) and with it closed (checkpointed into the file, the -wal file gone,
    as the first read found it)."""
    opened = _count_connects(monkeypatch)
    new = dataclasses.replace(user_records()[0], problem_key="other-problem")
    with fastread.one_connection():
        user = fastread.overlay(None, DEV, readonly=True).user
        assert user.lookup(DEV.db_name, "other-problem") == [] and user.lookup(DEV.db_name, P.key())
        d = FindDB(str(user_db))
        try:
            d.store([new])
            if not writer_open:
                d.close()
            got = user.lookup(DEV.db_name, "other-problem")
            assert [(r.solver_id, r.time_ms) for r in got] == [(new.solver_id, new.time_ms)]
            assert user.lookup(DEV.db_name, P.key())
        finally:
            d.close()
    # the first connection opened immutable (WAL mode, no writer): the write made the second
    assert opened[0].get("immutable") == "1" and len(opened) == 2


class _Counted:
    """A FindDB layer whose ``lookup_perf`` calls are recorded in ``asked``; the rest as the layer's."""

    def __init__(self, layer, asked):
        self._layer, self._asked = layer, asked

    def lookup_perf(self, device, key, solver_id=None):
        self._asked.append((device, key, solver_id))
        return self._layer.lookup_perf(device, key, solver_id)

    def __getattr__(self, name):
        return getattr(self._layer, name)


@pytest.mark.parametrize("readonly", [False, True])
def test_untrusted_tuned_config_is_passed_over_alike(user_db, readonly):
    con = sqlite3.connect(user_db)
    con.execute("UPDATE perf_records SET kernel_hash = 'src=1;v=1'")
    con.commit()
    con.close()
    tunable = next(s for s in cands() if s.tunable)
    got = []
    for dbs in both(None, readonly=readonly):
        with pytest.warns(FindDBWarning, match=r"^user PerfDB: tuned config .* is not trusted"):
            got.append(find.tuned_config(dbs, DEV, P, tunable))
    assert got[0] == got[1] != tunable.default_config(P.as_conv())   # the shipped DB's


def test_invalid_row_is_skipped_with_the_same_warning(user_db):
    con = sqlite3.connect(user_db)
    con.execute("UPDATE find_records SET config = '{nope' WHERE id = 2")
    con.commit()
    con.close()
    fast, slow = both(None)
    for dbs in (fast, slow):
        with pytest.warns(FindDBWarning, match=rf"^FindDB {user_db}: skipping invalid row id=2: config='{{nope'"):
            recs = dbs.user.lookup(DEV.db_name, P.key())
        assert len(recs) == len(cands()) - 1


def test_find_and_get_answer_from_the_db_through_fastread(user_db, monkeypatch):
    """find_solutions and get_solutions answer as before, reading through fastread only."""
    monkeypatch.setattr(find, "current_device", lambda *a: DEV)
    monkeypatch.setattr(api, "current_device", lambda *a: DEV)
    used = []
    monkeypatch.setattr(FindDB, "lookup", lambda *a, **k: used.append(a) or [])
    shipped_key = shipped_keys(1)[0]
    c = cands()
    trusted = {s.id for i, s in enumerate(c[:-1]) if i not in (UNTRUSTED, OTHER_CUDA, BAD_CONFIG, UNVERIFIED)}
    for mode in ("fast", "hybrid"):
        r = api.find_solutions(P, mode=mode)
        assert r.source == "db" and r.db_layer == "user" and {s.solver_id for s in r} == trusted
        assert c[-1].id in {f.solver_id for f in r.failures}     # settled by its recorded failure
        api.clear_caches()
    r = api.get_solutions(P)
    assert r.source == "db" and r.db_layer == "user" and {s.solver_id for s in r} == trusted | {c[UNVERIFIED].id}
    r = api.get_solutions(shipped_key)
    assert r.source == "db" and r.db_layer == "system"
    assert used == []


@pytest.fixture
def measured(monkeypatch):
    """Finds on DEV with benchmarking replaced: each benchmark's candidate ids are appended to the list
    returned, and every candidate is stored as measured in 1 ms."""
    monkeypatch.setattr(find, "current_device", lambda *a: DEV)
    monkeypatch.setattr(api, "current_device", lambda *a: DEV)
    got = []

    def fake_benchmark(problem, cs, *a, **k):
        got.append([s.id for s in cs])
        return [api.Solution(s.id, s.algorithm, 1.0, 0, None, True, problem) for s in cs], [], False

    monkeypatch.setattr(find, "benchmark", fake_benchmark)
    return got


def test_a_miss_stores_through_findb_as_before(user_db, measured):
    r = api.find_solutions(P, mode="normal")     # the user DB lacks trusted records of four candidates
    assert r.source == "find" and r.stored and measured
    with FindDB(str(user_db)) as d:
        assert {x.solver_id for x in d.lookup(DEV.db_name, P.key())} >= set(measured[0])
    api.clear_caches()
    assert api.find_solutions(P, mode="normal").source == "db"


# -- where FindDB opens the file ------------------------------------------------------------------------

def test_old_schema(user_db):
    """A schema-2 user DB: a writable open migrates it (FindDB); a read-only one reads it as is, as FindDB."""
    downgrade_to_schema_2(user_db)
    fast, slow = both(None, readonly=True)
    assert isinstance(fast.user, fastread.Reader) and fast.user._version == 2
    assert fast.lookup(DEV.db_name, P.key()) == slow.lookup(DEV.db_name, P.key())
    assert fast.user.find_failures(DEV.db_name, P.key()) == slow.user.find_failures(DEV.db_name, P.key()) == []
    fast = fastread.overlay(None, DEV)
    assert isinstance(fast.user, FindDB) and not fast.user.readonly
    with FindDB(str(user_db), readonly=True) as d:
        assert d.stats()["schema_version"] == base.SCHEMA_VERSION   # migrated by FindDB, not by fastread


@pytest.mark.parametrize("readonly", [False, True])
def test_foreign_sqlite_file_is_refused(tmp_path, monkeypatch, readonly):
    p = tmp_path / "other.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE find_records(a, b)")
    con.commit()
    con.close()
    before = files(tmp_path)
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", "none")
    with pytest.raises(FindDBError, match="no miofind 'meta' table"):
        fastread.overlay(str(p), DEV, readonly=readonly)
    assert files(tmp_path) == before


def test_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(SHIPPED))
    p = tmp_path / "new" / "user.sqlite"
    dbs = fastread.overlay(str(p), DEV, readonly=True)
    assert dbs.user is None and isinstance(dbs.system, fastread.Reader) and not p.parent.exists()
    dbs = fastread.overlay(str(p), DEV)      # for writing too: a read creates nothing (no SQLAlchemy)
    assert dbs.user is None and isinstance(dbs.system, fastread.Reader) and not p.parent.exists()


def test_missing_user_db_is_created_by_the_first_miss_only(tmp_path, monkeypatch, measured):
    """A DB hit from the system DB leaves a user DB that does not exist alone; a miss creates it (FindDB)
    and stores there."""
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(SHIPPED))
    p = tmp_path / "new" / "user.sqlite"
    r = api.find_solutions(shipped_keys(1)[0], mode="fast", db=str(p))
    assert r.source == "db" and r.db_layer == "system" and not p.parent.exists() and not measured
    miss = ProblemDescription.make("F", n=3, c=5, k=7, in_size=(11, 13), filter_size=3, pads=1)
    r = api.find_solutions(miss, mode="normal", db=str(p))
    assert r.source == "find" and r.stored and measured and p.exists()
    with FindDB(str(p), readonly=True) as d:
        assert {x.solver_id for x in d.lookup(DEV.db_name, miss.key())} == set(measured[0])


def test_readonly_directory(user_db, monkeypatch):
    real = os.access
    monkeypatch.setattr(os, "access", lambda q, m: False if Path(q) == user_db.parent else real(q, m))
    before = files(user_db.parent)
    dbs = fastread.overlay(None, DEV)
    assert isinstance(dbs.user, FindDB) and dbs.user.readonly   # FindDB opens it read-only, says why
    assert files(user_db.parent) == before
    assert isinstance(fastread.overlay(None, DEV, readonly=True).user, fastread.Reader)


def test_corrupt_file(user_db):
    data = user_db.read_bytes()
    user_db.write_bytes(data[: len(data) // 2])        # truncated, as by a killed copy
    with pytest.raises(FindDBError, match="corrupt"):
        fastread.overlay(None, DEV, readonly=True)     # read-only: FindDB says so and leaves it
    with pytest.warns(FindDBWarning, match="corrupt"):
        dbs = fastread.overlay(None, DEV)              # writable: FindDB moves it aside
    assert isinstance(dbs.user, FindDB)
    assert any(".corrupt-" in p.name for p in user_db.parent.iterdir())


def test_newer_schema_is_refused(user_db):
    con = sqlite3.connect(user_db)
    con.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    for ro in (False, True):
        with pytest.raises(FindDBError, match="newer"):
            fastread.overlay(None, DEV, readonly=ro)


def test_a_file_changed_since_its_check_is_read_by_findb(user_db):
    """A changed schema version (the same inode) is not read through sqlite3 but checked again: FindDB
    migrates it, and the next overlay reads it through sqlite3 again."""
    fast = fastread.overlay(None, DEV)
    assert isinstance(fast.user, fastread.Reader)
    con = sqlite3.connect(user_db)
    con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(fastread.Unusable, match="schema version '3', not 4 as checked"):
        fast.user.lookup(DEV.db_name, P.key())
    assert isinstance(fastread.overlay(None, DEV).user, FindDB)       # which migrates it back to 4
    assert isinstance(fastread.overlay(None, DEV).user, fastread.Reader)


def test_a_read_error_leaves_the_file_to_findb(user_db):
    fast = fastread.overlay(None, DEV, readonly=True)
    assert isinstance(fast.user, fastread.Reader)
    with open(user_db, "r+b") as fh:    # the same inode, now damaged
        fh.write(b"\0" * 100)
    with pytest.raises(fastread.Unusable, match="not a database"):
        fast.user.lookup(DEV.db_name, P.key())
    with pytest.raises(FindDBError, match="corrupt"):    # from now on FindDB opens it, and says what is wrong
        find.db_answer(None, DEV, P, cands(), True, None, readonly=True)
    with pytest.warns(FindDBWarning, match="corrupt"):   # a writable open moves it aside
        settled, (sols, _, layer) = find.db_answer(None, DEV, P, cands(), True, None)
    assert layer == "system" and sols


def test_a_findb_or_overlay_argument_is_findbs(user_db):
    with FindDB(str(user_db)) as d:
        assert fastread.overlay(d, DEV) is None and fastread.overlay(Overlay(d), DEV) is None


# -- no SQLAlchemy -------------------------------------------------------------------------------------

_CHILD = r"""
import json, sys
import miofind.api as api, miofind.find as find
from miofind.device import DeviceInfo
DEV = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")
find.current_device = api.current_device = lambda *a: DEV
key, shipped_key = sys.argv[1:3]
out = {}
out["find"] = api.find_solutions(key, mode="hybrid").source
out["find_shipped"] = api.find_solutions(shipped_key, mode="hybrid").db_layer
out["get"] = api.get_solutions(key).source
out["get_shipped"] = api.get_solutions(shipped_key).db_layer
out["sqlalchemy"] = sorted(m for m in sys.modules if m.split(".")[0] == "sqlalchemy")
print(json.dumps(out))
"""


def test_a_db_hit_imports_no_sqlalchemy(user_db):
    before = files(user_db.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    shipped_key = P.key()[:-1] + "B"   # not in the user DB
    r = subprocess.run([sys.executable, "-c", _CHILD, P.key(), shipped_key], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"find": "db", "find_shipped": "system", "get": "db", "get_shipped": "system", "sqlalchemy": []}
    assert files(user_db.parent) == before      # nothing written


def test_importing_miofind_and_its_torch_module_imports_no_sqlalchemy():
    code = ("import sys, importlib.util, miofind, miofind.api, miofind.find\n"
            "if importlib.util.find_spec('torch'): import miofind.torch\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sqlalchemy'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr


# -- the system DB's checks in a background thread (prefetch), any-device reads through the index --------

@pytest.fixture
def fresh_state(monkeypatch, tmp_path):
    """fastread's and the system DB module's per-process caches, empty for this test, and a kernel cache of its
    own (where passed checks are kept)."""
    _new_process(monkeypatch, tmp_path / "kernel-cache")


def _system_copy(tmp_path, monkeypatch, data=None):
    p = tmp_path / "sm_90-132.sqlite"
    p.write_bytes(SHIPPED.read_bytes() if data is None else data)
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(p))
    monkeypatch.setenv("MIOFIND_DB", str(tmp_path / "no-user.sqlite"))
    return p


def test_prefetch_checks_the_system_db_once_in_a_thread(tmp_path, monkeypatch, fresh_state):
    p = _system_copy(tmp_path, monkeypatch)
    calls, real = [], fastread._check
    monkeypatch.setattr(fastread, "_check", lambda *a: calls.append((a, threading.current_thread().name))
                        or real(*a))
    fastread.prefetch(None, DEV)
    fastread.prefetch(None, DEV)                      # one check in flight: no second one
    dbs = fastread.overlay(None, DEV, readonly=True)
    assert isinstance(dbs.system, fastread.Reader) and dbs.user is None
    assert calls == [((p, True), "miofind-finddb-check")] and fastread._pending == {}
    fastread.prefetch(None, DEV)                      # checked already in this process
    assert fastread.overlay(None, DEV, readonly=True).system is dbs.system and len(calls) == 1
    with FindDB(str(SHIPPED), readonly=True, immutable=True) as d:
        assert dbs.lookup(DEV.db_name, P.key()) == [("system", d.lookup(None, P.key()))]


def test_prefetch_of_a_corrupt_system_db_leaves_it_to_findb(tmp_path, monkeypatch, fresh_state):
    """A system DB that fails the checks in the prefetch thread is opened by FindDB, which warns and goes on
    without it, exactly as without the prefetch."""
    data = SHIPPED.read_bytes()
    _system_copy(tmp_path, monkeypatch, data[:4096] + b"\xff" * 8192 + data[4096 + 8192:])
    got = []
    for pre in (True, False):
        for mod, name in ((fastread, "_checked"), (fastread, "_system")):
            monkeypatch.setattr(mod, name, {})
        monkeypatch.setattr(system_mod, "_opened", {})
        if pre:
            fastread.prefetch(None, DEV)
        with pytest.warns(FindDBWarning, match="system FindDB not used"):
            got.append(fastread.overlay(None, DEV, readonly=True).system)
    assert got == [None, None]


def test_a_failed_prefetch_thread_is_checked_again_by_the_read(tmp_path, monkeypatch, fresh_state):
    p = _system_copy(tmp_path, monkeypatch)
    real = fastread._check
    monkeypatch.setattr(fastread, "_check", lambda *a: (_ for _ in ()).throw(MemoryError("boom")))
    fastread.prefetch(None, DEV)
    fastread._pending[next(iter(fastread._pending))][1].exception(timeout=60)
    monkeypatch.setattr(fastread, "_check", real)
    assert isinstance(fastread.overlay(None, DEV, readonly=True).system, fastread.Reader)
    assert fastread._checked[(p.stat().st_dev, p.stat().st_ino)] == base.SCHEMA_VERSION


@pytest.mark.parametrize("readonly", [False, True])
def test_prefetch_checks_the_user_db_too(user_db, monkeypatch, fresh_state, readonly):
    calls, real = [], fastread._check
    monkeypatch.setattr(fastread, "_check", lambda *a: calls.append(a) or real(*a))
    fastread.prefetch(None, DEV)
    fast, slow = both(None, readonly=readonly)
    assert isinstance(fast.user, fastread.Reader) and isinstance(fast.system, fastread.Reader)
    assert sorted(calls) == sorted([(SHIPPED, True), (user_db, False)]) and fastread._pending == {}
    assert fast.lookup(DEV.db_name, P.key()) == slow.lookup(DEV.db_name, P.key())
    fastread.prefetch(None, DEV)                      # both checked: nothing to do
    assert fastread._pending == {} and len(calls) == 2


def test_a_child_forked_during_a_prefetch_checks_for_itself(tmp_path, monkeypatch, fresh_state):
    _system_copy(tmp_path, monkeypatch)
    release, real = threading.Event(), fastread._check
    monkeypatch.setattr(fastread, "_check", lambda *a: (release.wait(60) if threading.current_thread().name ==
                                                        "miofind-finddb-check" else None) or real(*a))
    fastread.prefetch(None, DEV)
    assert len(fastread._pending) == 1
    pid = os.fork()
    if pid == 0:   # the child: no prefetch thread here
        try:
            ok = fastread._pending == {} and isinstance(fastread.overlay(None, DEV, readonly=True).system,
                                                        fastread.Reader)
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    release.set()
    assert os.waitstatus_to_exitcode(status) == 0
    assert isinstance(fastread.overlay(None, DEV, readonly=True).system, fastread.Reader)


def test_a_prefetch_of_a_file_changed_since_is_not_used(tmp_path, monkeypatch, fresh_state):
    """The same inode with other contents (rewritten in place, or a new file on a freed inode): the read
    checks it itself."""
    p = _system_copy(tmp_path, monkeypatch)
    fastread.prefetch(None, DEV)
    assert fastread._pending[(p.stat().st_dev, p.stat().st_ino)][1].result(timeout=60) == base.SCHEMA_VERSION
    ino = p.stat().st_ino
    p.write_bytes(SHIPPED.read_bytes()[:8192])          # truncated in place
    assert p.stat().st_ino == ino
    with pytest.warns(FindDBWarning, match="system FindDB not used"):
        assert fastread.overlay(None, DEV, readonly=True).system is None


def _new_process(monkeypatch, kernel_cache):
    """This process's caches as a new process finds them, with ``kernel_cache`` as its kernel cache."""
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(kernel_cache))
    for mod, name in ((fastread, "_checked"), (fastread, "_pending"), (fastread, "_system"), (system_mod, "_opened")):
        monkeypatch.setattr(mod, name, {})
    monkeypatch.setattr(fastread, "_kept", None)


@pytest.mark.parametrize("pre", [True, False])
def test_passed_checks_of_the_system_db_carry_over_to_the_next_process(tmp_path, monkeypatch, fresh_state, pre):
    p = _system_copy(tmp_path, monkeypatch)
    calls, real = [], fastread._check
    monkeypatch.setattr(fastread, "_check", lambda *a: calls.append(a) or real(*a))
    for run in range(3):
        _new_process(monkeypatch, tmp_path / "cache")
        if pre:
            fastread.prefetch(None, DEV)
        dbs = fastread.overlay(None, DEV, readonly=True)
        assert isinstance(dbs.system, fastread.Reader), run
        with FindDB(str(SHIPPED), readonly=True, immutable=True) as d:
            assert dbs.lookup(DEV.db_name, P.key()) == [("system", d.lookup(None, P.key()))]
        # checked by the first process only; the later ones start no thread
        assert calls == [(p, True)] and fastread._pending == {}, run
    kept = json.loads((tmp_path / "cache" / fastread._VERDICTS_FILE).read_text())
    assert kept["miofind"] == __version__ and kept["schema"] == base.SCHEMA_VERSION
    assert kept["files"][str(p)]["version"] == base.SCHEMA_VERSION
    # an entry of a file deleted since is dropped at the next write
    with fastread._kept_lock:
        fastread._verdicts()[str(tmp_path / "gone.sqlite")] = {"stamp": [1, 2, 3, 4, 5], "version": 4}
        fastread._store_verdicts(fastread._verdicts())
    assert list(json.loads((tmp_path / "cache" / fastread._VERDICTS_FILE).read_text())["files"]) == [str(p)]

    # a new miofind (or schema) version checks again
    f = tmp_path / "cache" / fastread._VERDICTS_FILE
    f.write_text(json.dumps({**kept, "miofind": "0.0.0"}))
    _new_process(monkeypatch, tmp_path / "cache")
    assert isinstance(fastread.overlay(None, DEV, readonly=True).system, fastread.Reader) and len(calls) == 2


def test_kept_checks_are_not_used_for_a_file_written_since(tmp_path, monkeypatch, fresh_state):
    """Rewritten in place with contents of the same size and its modification time set back: the change
    time moved, so the next process checks it, and a damaged file is reported as before."""
    p = _system_copy(tmp_path, monkeypatch)
    _new_process(monkeypatch, tmp_path / "cache")
    assert isinstance(fastread.overlay(None, DEV, readonly=True).system, fastread.Reader)
    st, data = p.stat(), SHIPPED.read_bytes()
    time.sleep(0.01)
    with open(p, "r+b") as fh:     # the same inode and size
        fh.write(data[:4096] + b"\xff" * 8192)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)
    _new_process(monkeypatch, tmp_path / "cache")
    with pytest.warns(FindDBWarning, match="system FindDB not used"):
        assert fastread.overlay(None, DEV, readonly=True).system is None


def test_a_file_damaged_behind_kept_checks_is_caught_at_its_read(tmp_path, monkeypatch, fresh_state):
    """Kept checks of a file damaged without any visible change (here: the kept stamp forged to match):
    the first read fails, the Reader gives the file to FindDB, which reports it, and the kept checks are
    dropped, so the next process checks the file."""
    p = _system_copy(tmp_path, monkeypatch)
    data = SHIPPED.read_bytes()
    p.write_bytes(data[:4096] + b"\xff" * (len(data) - 4096))
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / fastread._VERDICTS_FILE).write_text(json.dumps(
        {**fastread._verdict_tag(), "files": {str(p): {"stamp": fastread.stamp(p.stat()),
                                                       "version": base.SCHEMA_VERSION}}}))
    _new_process(monkeypatch, cache)
    calls, real = [], fastread._check
    monkeypatch.setattr(fastread, "_check", lambda *a: calls.append(a) or real(*a))
    fastread.prefetch(None, DEV)
    dbs = fastread.overlay(None, DEV, readonly=True)
    assert isinstance(dbs.system, fastread.Reader) and calls == []     # taken on the kept checks
    with pytest.raises(fastread.Unusable):
        dbs.system.lookup(DEV.db_name, P.key())
    assert str(p) not in json.loads((cache / fastread._VERDICTS_FILE).read_text())["files"]
    with pytest.warns(FindDBWarning, match="system FindDB not used"):
        assert fastread.overlay(None, DEV, readonly=True).system is None
    _new_process(monkeypatch, cache)
    with pytest.warns(FindDBWarning, match="system FindDB not used"):
        assert fastread.overlay(None, DEV, readonly=True).system is None
    assert calls == [(p, True)]


def test_prefetch_leaves_findb_arguments_alone(tmp_path, monkeypatch, fresh_state):
    _system_copy(tmp_path, monkeypatch)
    with FindDB(str(tmp_path / "u.sqlite")) as d:
        fastread.prefetch(d, DEV)
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", "none")
    fastread.prefetch(None, DEV)
    assert fastread._pending == {} and fastread._checked == {}


def test_any_device_reads_of_an_immutable_db_are_findbs(tmp_path, fresh_state):
    """A system DB of several devices read for any device (through the index of each device): the same
    records in the same order as FindDB's scan, ties (time, solver) included."""
    p = tmp_path / "multi.sqlite"
    recs = user_records()
    with FindDB(str(p)) as d:
        for dev in ("sm_90-132-B", "sm_90-132-A"):   # ids of B first: id order is not device order
            d.store([dataclasses.replace(r, device=dev, time_ms=1.0) for r in recs])
        s = next(c for c in cands() if c.tunable)
        for dev in ("sm_90-132-B", "sm_90-132-A"):
            d.store_perf([PerfRecord(dev, P.key(), s.id, dict(s.default_config(P.as_conv())), 0.5,
                                     kernel_hash=trust_key(s), cuda_version="13.0", created_at=5.0)])
    r = fastread._reader(p, writable=False, immutable=True)
    assert isinstance(r, fastread.Reader)
    with FindDB(str(p), readonly=True, immutable=True) as d:
        for dev in (None, "sm_90-132-A", "nope"):
            assert r.lookup(dev, P.key()) == d.lookup(dev, P.key())
            assert r.lookup_perf(dev, P.key()) == d.lookup_perf(dev, P.key())
            assert r.lookup_perf(dev, P.key(), s.id) == d.lookup_perf(dev, P.key(), s.id)
    assert [x.device for x in r.lookup(None, P.key())[:2]] == ["sm_90-132-B", "sm_90-132-A"]
    assert r._devices == {"find_records": ("sm_90-132-A", "sm_90-132-B"),
                          "perf_records": ("sm_90-132-A", "sm_90-132-B")}
    con = sqlite3.connect(f"file:{p}?mode=ro&immutable=1", uri=True)
    plan = con.execute("EXPLAIN QUERY PLAN SELECT id FROM find_records WHERE device IN (?, ?) AND problem_key = ?",
                       ("a", "b", "c")).fetchall()
    con.close()
    assert "INDEX ix_find_records_device_problem (device=? AND problem_key=?)" in str(plan)
