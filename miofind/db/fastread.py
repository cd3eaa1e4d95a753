"""DB hits without SQLAlchemy: the SQLite FindDBs that a find or an immediate-mode lookup reads, through
the stdlib ``sqlite3``, read-only.

``overlay(db, dev)`` gives the user DB over the system DB (``miofind.db.system.Overlay``) with each
layer a ``Reader`` where this module may read it, else the FindDB that ``open_db``/``open_system_db``
give (which imports SQLAlchemy). A Reader has FindDB's read methods (``lookup``, ``lookup_perf``,
``find_failures``) and returns the same records (``base.decode_rows``). A file is read here only where
FindDB's open would change nothing and would accept it: a plain ``sqlite:///`` path, present, passing
FindDB's checks (``PRAGMA quick_check``, ``base.check_schema``: no foreign or newer schema; a user DB
opened for writing must be writable, with the current schema, since FindDB would otherwise create,
migrate, move aside or open it read-only). Reading never writes: files open ``mode=ro``, with
``immutable=1`` where ``readonly_sqlite_query`` says. A Reader that meets any SQLite error raises
``Unusable`` and the file is left to FindDB for the rest of the process: the caller reads again
through FindDB (``miofind.find.db_answer``), which reports or repairs what is wrong.

``prefetch(db, dev)`` runs those checks (for the shipped system DB, a ``PRAGMA quick_check`` of
megabytes) in a background thread while the caller does other work (the solvers' applicability):
SQLite runs without Python's GIL, so the checks cost a find no time where a second core is free. The
checks are the same; the first read of each file waits for their result.

An immutable file's passed checks (the shipped system DB's) carry over between processes in
``<kernel cache>/finddb-checks.json``, valid while the file keeps its path, size, modification and
change times and inode, and for the miofind and schema versions that checked it (``_kept_verdict``).
A file damaged since without a write (the change time moves on every write) is then caught at its
first read, not at the open: the Reader raises ``Unusable``, the verdict is dropped, and FindDB opens
the file, checks it and reports it, as it does for a file damaged while a process reads it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from concurrent.futures import Future
from pathlib import Path

from ..fileio import stamp
from .base import (BUSY_TIMEOUT_MS, OLDEST_READABLE, SCHEMA_VERSION, FindDBError, FindFailure, PerfRecord,
                   Record, check_readable_wal, not_writable, sqlite_problem, sqlite_uri, TABLE_SINCE,
                   check_schema, columns, decode_rows, default_db_url, normalize_url, readonly_sqlite_query)
from .system import Overlay, system_db_path

__all__ = ["Unusable", "Reader", "one_connection", "overlay", "plain_sqlite_path", "prefetch", "writable_as_is"]

_log = logging.getLogger(__name__)
# file identity (st_dev, st_ino) -> its schema version once FindDB's checks passed, None where they did
# not (or a read failed): checked once per file and process, as a FindDB handle checks it once
_checked: dict[tuple[int, int], int | None] = {}
_system: dict[Path, "Reader"] = {}
# file identity -> ((path, size, mtime_ns, immutable), the result of _check(path, immutable)) of a prefetch
_pending: dict[tuple[int, int], tuple[tuple, Future]] = {}
_lock = threading.Lock()
# .cons: file identity -> this thread's connection to that file, while one_connection() runs on the thread
_held = threading.local()
# a forked child has no prefetch thread: its reads check the files themselves (never wait forever)
os.register_at_fork(after_in_child=lambda: _pending.clear())

_VERDICTS_FILE = "finddb-checks.json"
# path -> {"stamp": fileio.stamp, "version": schema version}: immutable files whose checks passed, as read from
# and written to _VERDICTS_FILE (None: not read yet)
_kept: dict[str, dict] | None = None
_kept_lock = threading.RLock()


def _verdict_tag() -> dict:
    from .. import __version__
    return {"v": 1, "miofind": __version__, "schema": SCHEMA_VERSION}


def _verdicts() -> dict[str, dict]:
    global _kept
    if _kept is not None:
        return _kept
    with _kept_lock:
        if _kept is None:
            from ..compile import read_cache_json

            data = read_cache_json(_VERDICTS_FILE) or {}
            _kept = data["files"] if all(data.get(k) == v for k, v in _verdict_tag().items()) \
                and isinstance(data.get("files"), dict) else {}
        return _kept


def _kept_verdict(path: Path, st: os.stat_result) -> int | None:
    """The schema version an earlier process's checks gave the immutable file ``path`` (stat ``st``), if
    the file is unchanged since; else None (check it)."""
    e = _verdicts().get(str(path))
    if not isinstance(e, dict) or e.get("stamp") != stamp(st):
        return None
    v = e.get("version")
    return v if isinstance(v, int) and OLDEST_READABLE <= v <= SCHEMA_VERSION else None


def _keep_verdict(path: Path, st: os.stat_result, version: int | None) -> None:
    """Keep the passed checks (``version``) of the immutable file ``path`` whose stat before the checks was
    ``st``, if it is still unchanged (best effort: a cache directory that cannot be written leaves
    later processes checking, as before)."""
    if version is None or stamp(path) != stamp(st):
        return
    entry = {"stamp": stamp(st), "version": version}
    with _kept_lock:
        known = _verdicts()
        if known.get(str(path)) != entry:
            known[str(path)] = entry
            _store_verdicts(known)


def _forget_verdict(path: Path) -> None:
    with _kept_lock:
        known = _verdicts()
        if known.pop(str(path), None) is not None:
            _store_verdicts(known)


def _store_verdicts(known: dict) -> None:
    """Write the kept checks back (best effort, ``compile.write_cache_json``)."""
    from ..compile import write_cache_json

    for gone in [p for p in known if not os.path.exists(p)]:   # files deleted since: no entry kept for them
        del known[gone]
    write_cache_json(_VERDICTS_FILE, {**_verdict_tag(), "files": known})


class Unusable(Exception):
    """A Reader cannot answer: read through miofind.db.findb.FindDB instead."""


def plain_sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` URL whose PATH SQLAlchemy takes as it is (no query, no percent
    escapes, no URI filename, not in-memory), absolute as FindDB takes it; None for any other URL."""
    if not url.startswith("sqlite:///"):
        return None
    rest = url[len("sqlite:///"):]
    if not rest or rest == ":memory:" or "?" in rest or "%" in rest or rest.startswith("file:"):
        return None
    return Path(rest).absolute()


class Reader:
    """One SQLite FindDB file (of schema ``version``, checked) read through ``sqlite3``: FindDB's read
    methods, read-only. An ``immutable`` file (a system DB) keeps one connection for the process; any
    other opens one per query (or one per thread for a ``one_connection()`` scope), as ``readonly_sqlite_query``
    says at that moment, and first checks that the file still has the schema version it was checked with (else
    ``Unusable``, and it is checked again on the next ``overlay``)."""

    readonly = True

    def __init__(self, path: Path, ident: tuple[int, int], version: int, *, immutable: bool) -> None:
        self.path, self._ident, self._version, self._immutable = path, ident, version, immutable
        self._where = str(path)
        self._con: sqlite3.Connection | None = None
        self._con_lock = threading.Lock()
        self._devices: dict[str, tuple[str, ...] | None] = {}   # table -> its devices (immutable file only)
        self._solvers: frozenset[str] | None = None             # solver_ids (immutable file only)

    def _rows(self, table: str, where: str, params: tuple, order: str, *, any_device: bool = False) -> list[dict]:
        """The rows of ``table`` matching ``where``; ``any_device``: the query has no device condition."""
        cols = columns(table, self._version)
        sql = f"SELECT {', '.join(cols)} FROM {table} WHERE {where} ORDER BY {order}"
        try:
            if self._immutable:
                with self._con_lock:
                    if self._con is None:
                        self._con = self._connect()
                    devices = self._all_devices(table) if any_device else None
                    if devices is not None:
                        # the same rows in the same order (a scan meets ties in id order), found through
                        # the index that starts with device
                        sql = (f"SELECT {', '.join(cols)} FROM {table} WHERE device IN "
                               f"({', '.join('?' * len(devices))}) AND {where} ORDER BY {order}"
                               f"{'' if order.endswith('id DESC') else ', id'}")
                        params = (*devices, *params)
                    rows = self._con.execute(sql, params).fetchall()
            else:
                rows = self._query(sql, params)
        except (sqlite3.Error, FindDBError) as e:
            _checked[self._ident] = None
            if self._immutable:
                _forget_verdict(self.path)
            _log.info("FindDB %s: %s; read through SQLAlchemy from now on", self._where, e)
            raise Unusable(f"FindDB {self._where}: {e}") from None
        return [dict(zip(cols, r)) for r in rows]

    def _all_devices(self, table: str) -> tuple[str, ...] | None:
        """Every device string of ``table`` in this immutable file (cached), so that a query for any device
        may name them all and be answered from the index that starts with ``device`` rather than by a
        scan of the table; None where a row has no device (such a row would be left out)."""
        if table not in self._devices:
            con = self._con
            if con.execute(f"SELECT 1 FROM {table} WHERE device IS NULL LIMIT 1").fetchone() is not None:
                self._devices[table] = None
            else:   # one index seek per distinct device
                self._devices[table] = tuple(r[0] for r in con.execute(
                    f"WITH RECURSIVE d(x) AS (SELECT min(device) FROM {table} UNION ALL "
                    f"SELECT (SELECT min(device) FROM {table} WHERE device > x) FROM d WHERE x IS NOT NULL) "
                    "SELECT x FROM d WHERE x IS NOT NULL"))
        return self._devices[table]

    def _query(self, sql: str, params: tuple) -> list[tuple]:
        """The rows of ``sql`` in a file that is not immutable: on a connection opened for this query, or on this
        thread's connection to the file while ``one_connection()`` runs (opened at its first query). A connection
        first checks that the file still has the schema version it was checked with."""
        held = getattr(_held, "cons", None)
        got = None if held is None else held.get(self._ident)
        if got is not None and got[1] is not None and got[1] != _file_state(self.path):
            # opened ``immutable=1`` (WAL mode, no writer then), and a writer came since: its commits are read on
            # a new connection, as SQLite reads an immutable file's pages without looking for changes
            del held[self._ident]
            got[0].close()
            got = None
        if got is None:
            state = _file_state(self.path)   # before the open: a change after it reopens at the next query
            query = readonly_sqlite_query(self.path)
            con = self._connect(query)
            try:
                # the file checked may have been replaced by another at the same inode since
                v = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
                if not v or str(v[0][0]) != str(self._version):
                    _checked.pop(self._ident, None)   # changed (e.g. migrated): checked again next time
                    raise Unusable(f"FindDB {self._where}: schema version {v[0][0] if v else None!r}, not "
                                   f"{self._version} as checked")
            except BaseException:
                con.close()
                raise
            if held is not None:
                held[self._ident] = (con, state if "immutable" in query else None)
        else:
            con = got[0]
        try:
            return con.execute(sql, params).fetchall()
        except BaseException:
            if held is not None:
                held.pop(self._ident, None)
            con.close()
            raise
        finally:
            if held is None:
                con.close()

    def _connect(self, query: dict[str, str] | None = None) -> sqlite3.Connection:
        if query is None:
            query = readonly_sqlite_query(self.path, immutable=self._immutable)
        check_readable_wal(self.path, query)
        return sqlite3.connect(sqlite_uri(self.path, query), uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                               check_same_thread=False)

    def lookup(self, device: str | None, problem_key: str) -> list[Record]:
        """As ``FindDB.lookup``."""
        where, params = _filter(("problem_key", problem_key), ("device", device))
        return decode_rows(self._rows("find_records", where, params, "time_ms, solver_id", any_device=device is None),
                           Record, self._where, stacklevel=2)

    def solver_ids(self) -> frozenset[str]:
        """As ``FindDB.solver_ids`` (cached for an immutable file)."""
        if self._solvers is not None:
            return self._solvers
        sql = "SELECT DISTINCT solver_id FROM find_records"
        try:
            if self._immutable:
                with self._con_lock:
                    if self._con is None:
                        self._con = self._connect()
                    self._solvers = frozenset(r[0] for r in self._con.execute(sql))
                    return self._solvers
            return frozenset(r[0] for r in self._query(sql, ()))
        except (sqlite3.Error, FindDBError) as e:
            raise Unusable(f"FindDB {self._where}: {e}") from None

    def lookup_perf(self, device: str | None, problem_key: str, solver_id: str | None = None) -> list[PerfRecord]:
        """As ``FindDB.lookup_perf``."""
        where, params = _filter(("problem_key", problem_key), ("device", device), ("solver_id", solver_id))
        return decode_rows(self._rows("perf_records", where, params, "created_at DESC, id DESC",
                                      any_device=device is None), PerfRecord, self._where, stacklevel=2)

    def find_failures(self, device: str | None, problem_key: str) -> list[FindFailure]:
        """As ``FindDB.find_failures``."""
        if TABLE_SINCE["find_failures"] > self._version:
            return []
        where, params = _filter(("device", device), ("problem_key", problem_key))
        return decode_rows(self._rows("find_failures", where, params, "solver_id, config, id", any_device=device is None),
                           FindFailure, self._where, stacklevel=2)

    def __repr__(self) -> str:
        return f"Reader({self._where!r})"


def _file_state(path: Path) -> tuple | None:
    """What changes when a SQLite file is written: its identity, size, times and whether a -wal file is beside it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, os.path.lexists(f"{path}-wal")


@contextlib.contextmanager
def one_connection():
    """Within it, this thread's reads of a file that is not immutable (the user FindDB) share one connection to
    it, opened at the first read and closed at the end, instead of a connection per query: a find reads the
    user FindDB several times, and a new connection's first query costs 0.3-0.4 ms (it opens the file and
    parses its schema). Reentrant. Between queries the connection holds no lock and no transaction: writers,
    in this process or another, go on, and each query sees what was committed before it (a connection opened
    ``immutable=1`` is opened again once the file or its -wal file changed)."""
    if getattr(_held, "cons", None) is not None:
        yield
        return
    _held.cons = {}
    try:
        yield
    finally:
        cons, _held.cons = _held.cons, None
        for con, _ in cons.values():
            con.close()


def _filter(*conds: tuple[str, str | None]) -> tuple[str, tuple]:
    """A WHERE clause of equalities, leaving out the conditions whose value is None."""
    given = [(c, v) for c, v in conds if v is not None]
    return " AND ".join(f"{c} = ?" for c, _ in given), tuple(v for _, v in given)


def _check(path: Path, immutable: bool) -> int | None:
    """The schema version of the file after FindDB's checks of a read-only open (quick_check, then the
    schema), or None where one fails (FindDB says why)."""
    query = readonly_sqlite_query(path, immutable=immutable)
    try:
        check_readable_wal(path, query)
        if sqlite_problem(path, query) is not None:
            return None
        con = sqlite3.connect(sqlite_uri(path, query), uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

            def table_columns(t: str) -> set[str]:
                return {r[1] for r in con.execute(f'PRAGMA table_info("{t}")')}

            def schema_version():
                row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                return None if row is None else row[0]

            v = check_schema(str(path), tables, table_columns, schema_version, readonly=True)
        finally:
            con.close()
    except (sqlite3.Error, FindDBError) as e:
        _log.debug("FindDB %s: not read through sqlite3 (%s)", path, e)
        return None
    return v if OLDEST_READABLE <= v <= SCHEMA_VERSION else None


def _reader(path: Path, *, writable: bool, immutable: bool = False) -> Reader | None:
    """A Reader of ``path`` where a FindDB open (``writable``: for writing) would accept the file as it is
    and change nothing; None where FindDB must open it."""
    try:
        st = path.stat()
    except (OSError, ValueError):
        return None   # missing (FindDB creates it, or says it is missing), or not even statable
    if not path.is_file() or st.st_size == 0 or (writable and not_writable(path)):
        return None
    ident = (st.st_dev, st.st_ino)
    with _lock:
        if ident not in _checked:
            v = _prefetched(ident, (path, st.st_size, st.st_mtime_ns, immutable))
            if v is _NOT_PREFETCHED:
                v = _kept_verdict(path, st) if immutable else None
                if v is None:
                    v = _check(path, immutable)
                    if immutable:
                        _keep_verdict(path, st, v)
            _checked[ident] = v
        v = _checked[ident]
        if v is not None and writable and v != SCHEMA_VERSION:
            del _checked[ident]   # FindDB migrates it now: checked again next time
            return None
    return None if v is None else Reader(path, ident, v, immutable=immutable)


def writable_as_is(path: Path) -> bool:
    """Whether FindDB's writable open would take the SQLite file ``path`` as it is (it exists, this process may
    write it, it passes FindDB's checks and has the current schema): ``fastwrite`` then writes it."""
    return _reader(path, writable=True) is not None


_NOT_PREFETCHED = object()


def _prefetched(ident: tuple[int, int], what: tuple):
    """The result of a prefetch thread's check of the file (waiting for it), else _NOT_PREFETCHED: none ran,
    or of another file (``what``: path, size, mtime and ``immutable`` as the check saw them; a file deleted
    since may have left its inode to another), or it failed unexpectedly. The caller then checks the file
    itself (and meets the error itself)."""
    got = _pending.pop(ident, None)
    if got is None or got[0] != what:
        return _NOT_PREFETCHED
    fut = got[1]
    try:
        return fut.result()
    except Exception:
        return _NOT_PREFETCHED


def prefetch(db, dev) -> None:
    """Start FindDB's checks (``_check``) of the files that ``overlay(db, dev)`` will read, the user DB and
    the system FindDB of ``dev``, in a background thread, where they have not run in this process; the
    first read of each waits for its result. Never raises: whatever goes wrong here is met again, and
    reported, by the read."""
    if db is not None and not isinstance(db, str):
        return   # a FindDB or an Overlay: its own handles read
    todo = []
    try:
        from . import system

        user = plain_sqlite_path(normalize_url(db) if db else default_db_url())
        sys_path = system_db_path(dev.arch, dev.sm_count)
        if sys_path is not None and (sys_path in system._opened or sys_path in _system):
            sys_path = None   # read already in this process
        for path, immutable in ((sys_path, True), (user, False)):
            if path is None:
                continue
            try:
                st = path.stat()
            except (OSError, ValueError):
                continue
            ident = (st.st_dev, st.st_ino)
            if not path.is_file() or not st.st_size or any(ident == t[1] for t in todo):
                continue
            v = _kept_verdict(path, st) if immutable else None
            if v is not None:   # passed in an earlier process, unchanged since: no check to run
                with _lock:
                    _checked.setdefault(ident, v)
                continue
            todo.append((path, ident, (path, st.st_size, st.st_mtime_ns, immutable), st))
    except Exception:
        return
    with _lock:
        todo = [(path, ident, what, st, Future()) for path, ident, what, st in todo
                if ident not in _checked and ident not in _pending]
        for _, ident, what, _, fut in todo:
            _pending[ident] = (what, fut)
    if not todo:
        return

    def run() -> None:
        for path, _, what, st, fut in todo:
            try:
                v = _check(path, what[-1])
                if what[-1]:
                    _keep_verdict(path, st, v)
                fut.set_result(v)
            except BaseException as e:   # _check returns None on the errors it expects
                fut.set_exception(e)

    threading.Thread(target=run, name="miofind-finddb-check").start()


def overlay(db, dev, *, readonly: bool = False) -> Overlay | None:
    """The user FindDB (``db``: a URL or path, default ``default_db_url()``; ``readonly`` as in
    ``handles.open_db``) over the system FindDB of the device ``dev``, each layer a Reader where it can
    be, else the FindDB of ``open_db``/``open_system_db``. None when ``db`` is a FindDB or an Overlay,
    or a URL that only FindDB reads (another database, a SQLite URL with parameters...): then
    ``open_dbs`` gives the layers. FindDBError as ``open_dbs`` raises it."""
    if db is not None and not isinstance(db, str):
        return None
    try:
        url = normalize_url(db) if db else default_db_url()
    except (ValueError, FindDBError):
        return None   # open_dbs reports it
    path = plain_sqlite_path(url)
    if path is None:
        return None
    user = _reader(path, writable=not readonly)
    # a missing file is no layer: nothing to read, and a miss opens the DBs that store (``open_dbs``,
    # which creates it) after this; SQLAlchemy's import (0.2-0.8 s) is not paid for an answer it cannot give
    if user is None and path.exists():
        from .handles import open_db
        user = open_db(db, readonly=readonly)
    return Overlay(user, _system_layer(dev))


def _system_layer(dev):
    """The system FindDB of ``dev`` as a Reader (cached per file), else as ``open_system_db`` gives it."""
    from . import system

    path = system_db_path(dev.arch, dev.sm_count)
    if path is None:
        return None
    r = _system.get(path)
    if r is not None and _checked.get(r._ident) is not None:
        return r
    if path not in system._opened:   # a FindDB opened already (or failed to, with a warning) is kept
        r = _reader(path, writable=False, immutable=True)
        if r is not None:
            _system[path] = r
            _log.debug("system FindDB %s read through sqlite3", path)
            return r
    return system.open_system_db(dev.arch, dev.sm_count)
