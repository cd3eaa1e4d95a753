"""A find's writes to a SQLite user FindDB without SQLAlchemy: its records and find failures, through the
stdlib ``sqlite3``, exactly as ``FindDB.store`` and ``FindDB.store_find_failures`` write them.

Why: SQLAlchemy's import (0.2-0.3 s of Python on the H100 hosts) ran in a thread beside a process's first
finds, and a thread running Python takes the GIL back from the find every switch interval while the find
waits on the GPU: with it imported before anything was timed, ResNet-50's first FP32 training step fell from
5.35 / 4.88 to 4.37 / 4.31 s, and a fresh install's first find from 686-884 to 486-578 ms
(``bench/results/session-store/call1/``).

``writer(db)`` gives a ``Writer`` where the write would go through FindDB's SQLite path and change nothing
else: a plain ``sqlite:///`` URL (``fastread.plain_sqlite_path``) whose file passes FindDB's checks for
writing (``fastread``'s: writable, ``PRAGMA quick_check``, the current schema), or does not exist yet (or is
empty) in a directory this process can make and write, where the Writer creates FindDB's schema
(``SQLITE_SCHEMA``: SQLAlchemy's DDL for it, which a test keeps equal to ``FindDB``'s). Every write is one
``BEGIN IMMEDIATE`` transaction with FindDB's settings (WAL from the first write, the 30 s busy timeout,
``synchronous=NORMAL``, retries on lock errors), checks the schema version under the write lock, and counts
as a write of this process (``base.count_write``). Anything else (another schema version, a corrupt file,
any SQLite error but a lock) leaves the file to FindDB: the same write is made through ``handles.open_db``,
which migrates, moves aside or reports as it always does, and the Writer goes through it from then on.
"""

from __future__ import annotations

import json
import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Iterable

from .base import (BUSY_TIMEOUT_MS, SCHEMA_VERSION, FindDBError, FindFailure, Record, collect_find_failures, columns,
                   config_key, count_write, default_db_url, latest_rows, make_parent, normalize_url, not_writable)
from . import fastread

__all__ = ["Writer", "writer", "SQLITE_SCHEMA"]

_log = logging.getLogger(__name__)
_WRITE_ATTEMPTS = 10   # as FindDB

# FindDB's schema as SQLAlchemy's create_all makes it in SQLite (``miofind.db.findb``; the test
# ``test_schema_is_findb_schema`` keeps the two equal, statement for statement)
SQLITE_SCHEMA = (
    'CREATE TABLE meta (\n\t"key" VARCHAR(64) NOT NULL, \n\tvalue VARCHAR(256) NOT NULL, \n\tPRIMARY KEY ("key")\n)',
    "CREATE TABLE find_records (\n\tid INTEGER NOT NULL, \n\tdevice VARCHAR(64) NOT NULL, \n\tdevice_name "
    "VARCHAR(256) NOT NULL, \n\tproblem_key VARCHAR(512) NOT NULL, \n\tsolver_id VARCHAR(128) NOT NULL, \n\t"
    "algorithm VARCHAR(128) NOT NULL, \n\ttime_ms FLOAT NOT NULL, \n\ttime_q20_ms FLOAT, \n\ttime_q80_ms FLOAT, "
    "\n\tworkspace_bytes BIGINT NOT NULL, \n\tconfig TEXT, \n\tverified BOOLEAN NOT NULL, \n\tmax_error FLOAT, "
    "\n\tpackage_version VARCHAR(64) NOT NULL, \n\tkernel_hash VARCHAR(128) NOT NULL, \n\tdriver_version "
    "VARCHAR(32) NOT NULL, \n\tcuda_version VARCHAR(32) NOT NULL, \n\tcupy_version VARCHAR(32) NOT NULL, \n\t"
    "created_at FLOAT NOT NULL, \n\tbuild VARCHAR(16) DEFAULT 'specialized' NOT NULL, \n\tPRIMARY KEY (id), "
    "\n\tCONSTRAINT uq_find_records_key UNIQUE (device, problem_key, solver_id)\n)",
    "CREATE INDEX ix_find_records_device_problem ON find_records (device, problem_key)",
    "CREATE TABLE perf_records (\n\tid INTEGER NOT NULL, \n\tdevice VARCHAR(64) NOT NULL, \n\tproblem_key "
    "VARCHAR(512) NOT NULL, \n\tsolver_id VARCHAR(128) NOT NULL, \n\tconfig TEXT NOT NULL, \n\ttime_ms FLOAT NOT "
    "NULL, \n\tdefault_time_ms FLOAT, \n\tstrategy VARCHAR(64) NOT NULL, \n\tconfigs_tried INTEGER NOT NULL, \n\t"
    "tune_seconds FLOAT NOT NULL, \n\tdevice_name VARCHAR(256) NOT NULL, \n\tpackage_version VARCHAR(64) NOT "
    "NULL, \n\tkernel_hash VARCHAR(128) NOT NULL, \n\tcuda_version VARCHAR(32) NOT NULL, \n\tcreated_at FLOAT NOT "
    "NULL, \n\tPRIMARY KEY (id), \n\tCONSTRAINT uq_perf_records_key UNIQUE (device, problem_key, solver_id)\n)",
    "CREATE TABLE tune_failures (\n\tid INTEGER NOT NULL, \n\tdevice VARCHAR(64) NOT NULL, \n\tproblem_key "
    "VARCHAR(512) NOT NULL, \n\tsolver_id VARCHAR(128) NOT NULL, \n\tconfig VARCHAR(1024) NOT NULL, \n\tstage "
    "VARCHAR(32) NOT NULL, \n\treason TEXT NOT NULL, \n\tkernel_hash VARCHAR(128) NOT NULL, \n\tcreated_at FLOAT "
    "NOT NULL, \n\tPRIMARY KEY (id), \n\tCONSTRAINT uq_tune_failures_key UNIQUE (device, problem_key, solver_id, "
    "config)\n)",
    "CREATE TABLE find_failures (\n\tid INTEGER NOT NULL, \n\tdevice VARCHAR(64) NOT NULL, \n\tproblem_key "
    "VARCHAR(512) NOT NULL, \n\tsolver_id VARCHAR(128) NOT NULL, \n\tconfig VARCHAR(1024) NOT NULL, \n\tstage "
    "VARCHAR(32) NOT NULL, \n\treason TEXT NOT NULL, \n\tkernel_hash VARCHAR(128) NOT NULL, \n\tcuda_version "
    "VARCHAR(32) NOT NULL, \n\tpackage_version VARCHAR(64) NOT NULL, \n\tcreated_at FLOAT NOT NULL, \n\tPRIMARY "
    "KEY (id), \n\tCONSTRAINT uq_find_failures_key UNIQUE (device, problem_key, solver_id, config)\n)",
    "CREATE INDEX ix_find_failures_device_problem ON find_failures (device, problem_key)",
    "CREATE TABLE tune_jobs (\n\tid INTEGER NOT NULL, \n\tproblem_key VARCHAR(512) NOT NULL, \n\toptions "
    "VARCHAR(1024) NOT NULL, \n\tstatus VARCHAR(16) NOT NULL, \n\tworker VARCHAR(256) NOT NULL, \n\tdevice "
    "VARCHAR(256) NOT NULL, \n\tlease_until FLOAT NOT NULL, \n\tattempts INTEGER NOT NULL, \n\terror TEXT NOT "
    "NULL, \n\tcreated_at FLOAT NOT NULL, \n\tupdated_at FLOAT NOT NULL, \n\tPRIMARY KEY (id), \n\tCONSTRAINT "
    "uq_tune_jobs_key UNIQUE (problem_key, options)\n)",
    "CREATE INDEX ix_tune_jobs_status ON tune_jobs (status, id)",
)

_RECORD_COLS = columns("find_records")[1:]     # every column but id, in the table's order
_FAILURE_COLS = columns("find_failures")[1:]
_KEY = ("device", "problem_key", "solver_id")
_UPSERT_RECORDS = (f"INSERT INTO find_records ({', '.join(_RECORD_COLS)}) VALUES ({', '.join('?' * len(_RECORD_COLS))}) "
                   f"ON CONFLICT ({', '.join(_KEY)}) DO UPDATE SET "
                   + ", ".join(f"{c} = excluded.{c}" for c in _RECORD_COLS if c not in _KEY))
_INSERT_FAILURES = f"INSERT INTO find_failures ({', '.join(_FAILURE_COLS)}) VALUES ({', '.join('?' * len(_FAILURE_COLS))})"

# URLs whose writes this process leaves to FindDB (a fallback happened)
_to_findb: set[str] = set()
_lock = threading.Lock()


class _Fallback(Exception):
    """This write is FindDB's to make (its reason is logged)."""


def _is_lock_error(e: sqlite3.Error) -> bool:
    msg = str(e).lower()
    return "locked" in msg or "busy" in msg


def _first_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return s[0] if s else e.__class__.__name__


def _record_row(r: Record) -> tuple:
    config = None if r.config is None else json.dumps(r.config, sort_keys=True, allow_nan=False)
    return tuple(config if c == "config" else getattr(r, c) for c in _RECORD_COLS)


def _failure_row(f: Any) -> tuple:
    config = config_key(f.config) or "null"
    return tuple(config if c == "config" else getattr(f, c) for c in _FAILURE_COLS)


class Writer:
    """The write methods of ``FindDB`` a find uses (``store``, ``store_find_failures``) on one SQLite file,
    through ``sqlite3``; see the module docstring. Thread-safe: this process's writes go one at a time through one
    kept connection."""

    readonly = False

    def __init__(self, url: str, path: Path) -> None:
        self.url, self.path = url, path
        self._where = str(path)
        self._findb = None
        self._fb_lock = threading.Lock()
        # one connection, kept (as FindDB's pool keeps its own): closing the last connection of a WAL file
        # checkpoints the log into it, which cost each write milliseconds (session-store call 2); writes of
        # this process go through it one at a time (SQLite takes one writer at a time anyway)
        self._con: sqlite3.Connection | None = None
        self._con_file: tuple[int, int] | None = None
        self._con_lock = threading.Lock()
        _live.add(self)

    # -- the fallback ------------------------------------------------------------------------------

    def _fall_back(self, why: str):
        with self._fb_lock:
            if self._findb is None:
                from .handles import open_db
                _log.info("FindDB %s: %s; written through SQLAlchemy from now on", self._where, why)
                with _lock:
                    _to_findb.add(self.url)
                self._findb = open_db(self.url)
            return self._findb

    # -- one transaction ---------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """The kept connection (under ``_con_lock``), opened anew where the file at ``path`` is not the one it
        was opened on (moved aside or replaced by another process since, or not made yet)."""
        try:
            st = self.path.stat()
            ident = (st.st_dev, st.st_ino) if st.st_size else None
        except FileNotFoundError:
            ident = None
        if self._con is not None and (ident is None or ident != self._con_file):
            self._drop()
        if self._con is None:
            if ident is None:
                make_parent(self.path)
            con = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                  check_same_thread=False)
            try:
                con.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                con.execute("PRAGMA synchronous=NORMAL")
            except BaseException:
                con.close()
                raise
            self._con = con
            self._con_file = None
        return self._con

    def _drop(self) -> None:
        con, self._con, self._con_file = self._con, None, None
        if con is not None:
            try:
                con.close()
            except sqlite3.Error:
                pass

    def _schema(self, con: sqlite3.Connection) -> None:
        """Under the write lock: the current schema, created where the database is empty; _Fallback for any
        other database (FindDB migrates, refuses or reports it)."""
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            for ddl in SQLITE_SCHEMA:
                con.execute(ddl)
            con.execute("INSERT INTO meta (\"key\", value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            return
        if "meta" not in tables:
            raise _Fallback("not a FindDB this writer knows")
        row = con.execute("SELECT value FROM meta WHERE \"key\" = 'schema_version'").fetchone()
        if row is None or str(row[0]) != str(SCHEMA_VERSION):
            raise _Fallback(f"schema version {row and row[0]!r}, not {SCHEMA_VERSION}")

    def _write(self, what: str, fn) -> Any:
        """fn(connection) in one BEGIN IMMEDIATE transaction, as FindDB's ``_run(write=True)``: retried on lock
        errors, FindDBError when they last; _Fallback on any other SQLite error (FindDB meets it again)."""
        count_write()
        with self._con_lock:
            for attempt in range(_WRITE_ATTEMPTS):
                try:
                    con = self._connection()
                    if self._con_file is None:
                        # WAL before the first transaction (as FindDB: switched on by the first write, then kept
                        # by the file)
                        con.execute("PRAGMA journal_mode=WAL")
                    con.execute("BEGIN IMMEDIATE")
                    try:
                        self._schema(con)
                        out = fn(con)
                        con.execute("COMMIT")
                    except BaseException:
                        if con.in_transaction:
                            con.execute("ROLLBACK")
                        raise
                    if self._con_file is None:
                        st = self.path.stat()
                        self._con_file = (st.st_dev, st.st_ino)
                    return out
                except sqlite3.Error as e:
                    if _is_lock_error(e):
                        if attempt < _WRITE_ATTEMPTS - 1:
                            time.sleep(min(1.0, 0.02 * 2 ** attempt) * (0.5 + random.random()))
                            continue
                        raise FindDBError(f"FindDB {self._where}: cannot {what}: {_first_line(e)}") from None
                    self._drop()
                    raise _Fallback(f"{what}: {_first_line(e)}") from None
                except _Fallback:
                    self._drop()
                    raise
                except OSError as e:
                    self._drop()
                    raise _Fallback(f"{what}: {e}") from None
        raise AssertionError("unreachable")

    # -- FindDB's write methods --------------------------------------------------------------------

    def store(self, records: Iterable[Record]) -> int:
        """As ``FindDB.store``: insert or replace records (same device, problem_key, solver_id) in one
        transaction; returns the count."""
        if self._findb is not None:
            return self._findb.store(records)
        records = list(records)
        rows = latest_rows(self._where, Record, records, _record_row, lambda r, row: r.db_key)
        if not rows:
            return 0
        try:
            self._write("store records", lambda con: con.executemany(_UPSERT_RECORDS, rows))
        except _Fallback as e:
            return self._fall_back(str(e)).store(records)
        return len(rows)

    def store_find_failures(self, device: str, problem_key: str, solver_ids: Iterable[str],
                            failures: Iterable[FindFailure], *, failed: Iterable[str] = ()) -> int:
        """As ``FindDB.store_find_failures``: replace what is recorded of the find failures of ``solver_ids``
        (and of the failures' own solvers) on one problem and device by ``failures``, deleting the find
        records of the solvers in ``failed``, in one transaction; returns how many were stored."""
        failures, failed, solver_ids = list(failures), list(failed), list(solver_ids)
        if self._findb is not None:
            return self._findb.store_find_failures(device, problem_key, solver_ids, failures, failed=failed)
        rows, solvers = collect_find_failures(self._where, device, problem_key, solver_ids, failures, _failure_row)
        gone = sorted(set(failed))
        if not solvers and not gone:
            return 0
        ids = sorted(solvers)
        mine = f"device = ? AND problem_key = ? AND solver_id IN ({', '.join('?' * len(ids))})"
        args = (device, problem_key, *ids)

        def replace(con: sqlite3.Connection) -> None:
            con.execute(f"DELETE FROM find_failures WHERE {mine}", args)
            if gone:
                con.execute(f"DELETE FROM find_records WHERE device = ? AND problem_key = ? AND solver_id IN "
                            f"({', '.join('?' * len(gone))})", (device, problem_key, *gone))
            if rows:
                con.executemany(_INSERT_FAILURES, list(rows.values()))

        if not rows and not gone and not self._has_failures(mine, args):
            return 0   # nothing to clear: no write (a write makes this process's cached answers stale)
        try:
            self._write("record find failures", replace)
        except _Fallback as e:
            return self._fall_back(str(e)).store_find_failures(device, problem_key, solver_ids, failures,
                                                               failed=failed)
        return len(rows)

    def _has_failures(self, mine: str, args: tuple) -> bool:
        """Whether find failures match (a read through the kept connection, no write lock); True where the file
        cannot be read here (the write then decides)."""
        with self._con_lock:
            if not self.path.exists() or self.path.stat().st_size == 0:
                return False
            try:
                return self._connection().execute(f"SELECT id FROM find_failures WHERE {mine} LIMIT 1",
                                                  args).fetchone() is not None
            except (sqlite3.Error, OSError, FindDBError):
                self._drop()
                return True

    def __repr__(self) -> str:
        return f"Writer({self._where!r})"


_writers: dict[str, Writer] = {}
_live: "weakref.WeakSet[Writer]" = weakref.WeakSet()


def _forget_connections() -> None:
    """In a forked child: the parent's kept connections are not this process's to use (SQLite's rule), so each
    Writer opens its own on its next write."""
    for w in list(_live):
        w._con, w._con_file, w._con_lock = None, None, threading.Lock()


os.register_at_fork(after_in_child=_forget_connections)


def writer(db=None) -> Writer | None:
    """The Writer of the user FindDB ``db`` (a URL or path; default ``default_db_url()``), one per URL and
    process, where this module may write it (see the module docstring); None where FindDB must (a FindDB or
    Overlay given, another database, a URL with parameters, a file FindDB would create elsewhere, migrate,
    move aside, open read-only or refuse, or a URL whose writes already fell back to FindDB in this process,
    or that this process opened as a FindDB already). Never raises."""
    if db is not None and not isinstance(db, str):
        return None
    try:
        url = normalize_url(db) if db else default_db_url()
    except Exception:
        return None
    path = fastread.plain_sqlite_path(url)
    if path is None or url in _to_findb:
        return None
    from .handles import opened
    if opened(url) is not None:
        return None   # this process writes it through FindDB already
    try:
        if not path.exists() or (path.is_file() and path.stat().st_size == 0):
            # a new database: its nearest existing directory must be one this process may write in (else
            # FindDB says why the file cannot be made there)
            d = next(a for a in (path.parent, *path.parent.parents) if os.path.lexists(a))
            if not d.is_dir() or not os.access(d, os.W_OK | os.X_OK) or (path.exists() and not_writable(path)):
                return None
        elif not fastread.writable_as_is(path):
            return None
    except (OSError, ValueError):
        return None
    with _lock:
        w = _writers.get(url)
        if w is None or w.path != path:
            w = _writers[url] = Writer(url, path)
    return w
