"""The persistent FindDB: measured solver results per (device, problem), in any SQLAlchemy database.

SQLite is the default (one file per user, see ``default_db_url``) and is hardened against what MIOpen's
users run into: many processes writing at once (WAL from the first write on, a 30 s busy timeout,
``BEGIN IMMEDIATE`` writes and retries, so no lock error reaches the caller), files corrupted by killed jobs
(moved aside, never deleted, and replaced by a fresh database), and stale records after an upgrade
(``miofind.trust``). Opening and reading never write: a read-only FindDB opens its file so that not a byte
changes and no -wal/-shm file appears (``readonly_sqlite_query``), and a writable one that only reads
leaves the file as it was. A file this process may not write (or whose directory it may not write) opens
read-only. Another application's SQLite file, or one whose tables lack our columns, is refused and never
modified. Rows read back are validated; a bad row is skipped with a ``FindDBWarning``. Values are stored as
plain columns and JSON text: no pickle, no eval.

The records, their decoding, the schema check and the SQLite file checks live in ``miofind.db.base``
(shared with ``miofind.db.fastread``, which answers DB hits without SQLAlchemy) and are re-exported here.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import random
import sqlite3
import time
import urllib.parse
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

import sqlalchemy as sa

from .base import (BUILDS, SCHEMA_VERSION, TABLE_COLUMNS, FindDBError, FindDBWarning, FindFailure,  # noqa: F401
                   PerfRecord, Record, TuneFailure, check_schema, config_key, count_write, decode_rows,
                   default_db_url, normalize_url, parse_version, readonly_sqlite_query, write_generation)
from .base import from_row as _from_row  # noqa: F401
from .base import BUSY_TIMEOUT_MS as _BUSY_TIMEOUT_MS, COLUMN_SINCE as _COLUMN_SINCE  # noqa: F401
from .base import OLDEST_READABLE as _OLDEST_READABLE, TABLE_SINCE as _TABLE_SINCE  # noqa: F401
from .base import check_readable_wal as _check_readable_wal, not_writable as _not_writable  # noqa: F401
from .base import in_wal_mode as _in_wal_mode, is_corruption as _is_corruption  # noqa: F401
from .base import sqlite_problem as _sqlite_problem, sqlite_uri as _sqlite_uri  # noqa: F401
from .base import make_parent as _make_parent  # noqa: F401
from .base import collect_find_failures, latest_rows

__all__ = ["FindDB", "Record", "PerfRecord", "TuneFailure", "FindFailure", "FindDBError", "FindDBWarning",
           "default_db_url",
           "sqlite_file", "readonly_sqlite_query",
           "config_key", "SCHEMA_VERSION"]

_WRITE_ATTEMPTS = 10
_T = TypeVar("_T")


def dialect_insert(dialect: str):
    """The INSERT construct with ON CONFLICT of a dialect ("sqlite" or "postgresql"), imported on
    first use: the PostgreSQL dialect's import costs a SQLite user tens of milliseconds at start-up."""
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        from sqlalchemy.dialects.postgresql import insert
    return insert


_log = logging.getLogger(__name__)


# -- schema ----------------------------------------------------------------------------------------

_md = sa.MetaData()
_meta = sa.Table("meta", _md,
                 sa.Column("key", sa.String(64), primary_key=True),
                 sa.Column("value", sa.String(256), nullable=False))
_records = sa.Table(
    "find_records", _md,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("device", sa.String(64), nullable=False),
    sa.Column("device_name", sa.String(256), nullable=False),
    sa.Column("problem_key", sa.String(512), nullable=False),
    sa.Column("solver_id", sa.String(128), nullable=False),
    sa.Column("algorithm", sa.String(128), nullable=False),
    sa.Column("time_ms", sa.Float, nullable=False),
    sa.Column("time_q20_ms", sa.Float),
    sa.Column("time_q80_ms", sa.Float),
    sa.Column("workspace_bytes", sa.BigInteger, nullable=False),
    sa.Column("config", sa.Text),
    sa.Column("verified", sa.Boolean, nullable=False),
    sa.Column("max_error", sa.Float),
    sa.Column("package_version", sa.String(64), nullable=False),
    sa.Column("kernel_hash", sa.String(128), nullable=False),
    sa.Column("driver_version", sa.String(32), nullable=False),
    sa.Column("cuda_version", sa.String(32), nullable=False),
    sa.Column("cupy_version", sa.String(32), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("build", sa.String(16), nullable=False, server_default="specialized"),
    sa.UniqueConstraint("device", "problem_key", "solver_id", name="uq_find_records_key"),
    sa.Index("ix_find_records_device_problem", "device", "problem_key"),
)
_perf = sa.Table(
    "perf_records", _md,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("device", sa.String(64), nullable=False),
    sa.Column("problem_key", sa.String(512), nullable=False),
    sa.Column("solver_id", sa.String(128), nullable=False),
    sa.Column("config", sa.Text, nullable=False),
    sa.Column("time_ms", sa.Float, nullable=False),
    sa.Column("default_time_ms", sa.Float),
    sa.Column("strategy", sa.String(64), nullable=False),
    sa.Column("configs_tried", sa.Integer, nullable=False),
    sa.Column("tune_seconds", sa.Float, nullable=False),
    sa.Column("device_name", sa.String(256), nullable=False),
    sa.Column("package_version", sa.String(64), nullable=False),
    sa.Column("kernel_hash", sa.String(128), nullable=False),
    sa.Column("cuda_version", sa.String(32), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("device", "problem_key", "solver_id", name="uq_perf_records_key"),
)
_failures = sa.Table(
    "tune_failures", _md,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("device", sa.String(64), nullable=False),
    sa.Column("problem_key", sa.String(512), nullable=False),
    sa.Column("solver_id", sa.String(128), nullable=False),
    sa.Column("config", sa.String(1024), nullable=False),
    sa.Column("stage", sa.String(32), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("kernel_hash", sa.String(128), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("device", "problem_key", "solver_id", "config", name="uq_tune_failures_key"),
)
_find_failures = sa.Table(
    "find_failures", _md,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("device", sa.String(64), nullable=False),
    sa.Column("problem_key", sa.String(512), nullable=False),
    sa.Column("solver_id", sa.String(128), nullable=False),
    sa.Column("config", sa.String(1024), nullable=False),
    sa.Column("stage", sa.String(32), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("kernel_hash", sa.String(128), nullable=False),
    sa.Column("cuda_version", sa.String(32), nullable=False),
    sa.Column("package_version", sa.String(64), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("device", "problem_key", "solver_id", "config", name="uq_find_failures_key"),
    sa.Index("ix_find_failures_device_problem", "device", "problem_key"),
)
# The fleet's job queue (miofind.db.jobs): one row per problem to tune; workers claim rows with
# SELECT ... FOR UPDATE SKIP LOCKED and hold them under a lease that a dead worker lets expire.
jobs_table = sa.Table(
    "tune_jobs", _md,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("problem_key", sa.String(512), nullable=False),
    sa.Column("options", sa.String(1024), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("worker", sa.String(256), nullable=False),
    sa.Column("device", sa.String(256), nullable=False),
    sa.Column("lease_until", sa.Float, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("error", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.UniqueConstraint("problem_key", "options", name="uq_tune_jobs_key"),
    sa.Index("ix_tune_jobs_status", "status", "id"),
)
_KEY_COLS = ("device", "problem_key", "solver_id")


def _data_cols(table: sa.Table) -> tuple[str, ...]:
    return tuple(c.name for c in table.c if c.name != "id")


def _raw_cols(table: sa.Table, version: int = SCHEMA_VERSION) -> list:
    # Read columns untyped, so a malformed value reaches our validation instead of a driver converter;
    # only the columns a database of schema ``version`` has.
    return [sa.type_coerce(c, sa.types.NullType()).label(c.name) for c in table.c
            if _COLUMN_SINCE.get((table.name, c.name), 0) <= version]


_DATA_COLS = _data_cols(_records)
_RAW_COLS = _raw_cols(_records)
# what each stored dataclass lives in, and the columns of its identity
_KINDS: dict[type, tuple[sa.Table, tuple[str, ...]]] = {}

# _MIGRATIONS[v] upgrades a schema from version v to v + 1 inside the open write transaction.
# Version 2 added perf_records, tune_failures and tune_jobs, version 3 find_failures: create_all has
# made them by then.
# Version 4 added find_records.build (every older record measured the specialised build).
_MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {
    1: lambda con: None, 2: lambda con: None,
    3: lambda con: _add_column(con, "find_records", "build", "VARCHAR(16) NOT NULL DEFAULT 'specialized'"),
}


def _add_column(con: sa.Connection, table: str, name: str, ddl: str) -> None:
    if name not in {c["name"] for c in sa.inspect(con).get_columns(table)}:
        con.execute(sa.text(f"ALTER TABLE {table} ADD COLUMN {name} {ddl}"))


def _to_row(r: Any) -> dict[str, Any]:
    table, _ = _KINDS[type(r)]
    row = {name: getattr(r, name) for name in _data_cols(table)}
    if isinstance(r, Record):
        row["config"] = None if r.config is None else json.dumps(r.config, sort_keys=True, allow_nan=False)
    elif isinstance(r, FindFailure):
        row["config"] = config_key(r.config) or "null"
    else:
        row["config"] = config_key(r.config)
    return row


_KINDS.update({Record: (_records, _KEY_COLS), PerfRecord: (_perf, _KEY_COLS),
               TuneFailure: (_failures, _KEY_COLS + ("config",)),
               FindFailure: (_find_failures, _KEY_COLS + ("config",))})


# -- URLs and files --------------------------------------------------------------------------------


def sqlite_file(url: str) -> Path | None:
    """The SQLite file a FindDB URL or path names (absolute), or None for other databases and in-memory
    SQLite; opens nothing. ValueError for an invalid URL."""
    try:
        return _sqlite_path(sa.make_url(normalize_url(url)))
    except sa.exc.ArgumentError as e:
        raise ValueError(f"FindDB URL {url!r} is not a valid SQLAlchemy URL ({e})") from None



def _sqlite_path(url: sa.URL) -> Path | None:
    if url.get_backend_name() != "sqlite":
        return None
    db = url.database or ""
    if db.startswith("file:"):
        if url.query.get("mode") == "memory":
            return None
        db = urllib.parse.unquote(db[5:].split("?")[0])
    if not db or db == ":memory:":
        return None
    return Path(db).absolute()


def _is_lock_error(e: BaseException) -> bool:
    msg = str(getattr(e, "orig", None) or e).lower()
    return "locked" in msg or "busy" in msg


def _first_line(e: BaseException) -> str:
    e = getattr(e, "orig", None) or e
    s = str(e).strip().splitlines()
    return s[0] if s else e.__class__.__name__



def _quarantine(path: Path) -> Path | None:
    """Move a corrupt file (and its -wal/-shm/-journal siblings) aside; never delete anything."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    dest = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 0
    while dest.exists() or os.path.lexists(f"{dest}-wal"):
        n += 1
        dest = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    try:
        os.rename(path, dest)
    except FileNotFoundError:
        return None  # another process moved it first
    except OSError as e:
        raise FindDBError(f"FindDB {path} is corrupt and cannot be moved aside to {dest.name} "
                          f"({e.strerror}); move or remove it yourself, or use another database (--db, MIOFIND_DB)") from None
    for suffix in ("-wal", "-shm", "-journal"):
        try:
            os.rename(f"{path}{suffix}", f"{dest}{suffix}")
        except FileNotFoundError:
            pass
        except OSError as e:  # left beside a fresh database, SQLite would replay the old log into it
            raise FindDBError(f"FindDB {path} is corrupt: moved it to {dest.name} but cannot move {path.name}{suffix} "
                              f"({e.strerror}); move or remove it yourself") from None
    return dest



# -- the database ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _upsert_statement(dialect: str, table: sa.Table, keys: tuple, data: tuple):
    """INSERT ... ON CONFLICT (keys) DO UPDATE of ``data``'s other columns, built once per dialect and table: a
    statement is immutable, and building its ``excluded`` columns anew costs more than the insert of a find."""
    ins = dialect_insert(dialect)(table)
    return ins.on_conflict_do_update(index_elements=list(keys), set_={c: ins.excluded[c] for c in data if c not in keys})


class FindDB:
    """A FindDB at a SQLAlchemy URL (default: ``default_db_url()``).

    Creates or migrates the schema on open (a newer schema, another application's database or a table
    without our columns raises FindDBError). A SQLite file this process cannot write opens read-only, as
    if ``readonly`` were given (writes then raise FindDBError saying why). ``readonly`` never
    writes, and opens a SQLite file as ``readonly_sqlite_query`` says; ``immutable`` (implies read-only)
    opens a SQLite file that nothing may change, as the shipped system DBs. A corrupt SQLite
    file is moved to ``<name>.corrupt-<UTC time>`` with a FindDBWarning and replaced by an empty
    database (a read-only FindDB raises FindDBError instead). Every failure surfaces as
    FindDBError; transient lock errors are retried, never raised.
    """

    def __init__(self, url: str | None = None, *, readonly: bool = False, immutable: bool = False) -> None:
        try:
            self._url = normalize_url(url) if url else default_db_url()
        except ValueError as e:
            raise FindDBError(str(e)) from None
        self.readonly = readonly or immutable
        self._immutable = immutable
        self._solvers: frozenset[str] | None = None     # solver_ids (immutable file only: read once)
        self._readonly_why = ""  # why a FindDB opened writable is read-only after all
        self._closed = False
        try:
            parsed = sa.make_url(self._url)
        except (sa.exc.ArgumentError, ValueError) as e:
            from ..problem import show

            raise FindDBError(f"FindDB URL {show(self._url)} is not a valid SQLAlchemy URL ({e})") from None
        self._path = _sqlite_path(parsed)
        self._where = str(self._path) if self._path else parsed.render_as_string(hide_password=True)
        self._sqlite = parsed.get_backend_name() == "sqlite"
        self._ro_query = None
        if self._path is not None:
            self._check_file(immutable)
            if self.readonly:
                parsed = sa.URL.create("sqlite", database=f"file:{urllib.parse.quote(str(self._path))}",
                                       query={**self._ro_query, "uri": "true"})
        self._connect_url = parsed.render_as_string(hide_password=True)
        kw: dict[str, Any] = {}
        if self._sqlite and self._path is None:
            kw["poolclass"] = sa.pool.StaticPool  # one shared in-memory database
        try:
            self._engine = sa.create_engine(parsed, **kw)
        except Exception as e:  # missing driver, bad arguments
            raise FindDBError(f"FindDB {self._where}: cannot create engine: {_first_line(e)}") from None
        if self._sqlite:
            self._install_sqlite_hooks()
        self._wengine = self._engine.execution_options(miofind_write=True)
        try:
            self._open_schema()
        except BaseException:
            self._engine.dispose()
            raise
        _log.debug("opened FindDB %s%s", self._where, " (immutable)" if immutable else " (read-only)" if readonly else "")

    # -- setup -------------------------------------------------------------------------------------

    def _check_file(self, immutable: bool) -> None:
        """Check the SQLite file before the engine opens it: make its directory (writable, missing file),
        open it read-only where this process may not write it or its directory (SQLite writes -wal,
        -shm or -journal files beside it), and move a corrupt file aside. FindDBError, one line, for
        what cannot be opened."""
        p = self._path
        assert p is not None
        try:
            exists = p.exists()
            is_dir = exists and p.is_dir()
        except (OSError, ValueError) as e:
            raise FindDBError(f"FindDB {p}: cannot look at the file ({getattr(e, 'strerror', None) or e})") from None
        if is_dir:
            raise FindDBError(f"FindDB {p} is a directory, not a SQLite file")
        if not exists:
            if self.readonly:
                raise FindDBError(f"FindDB {p} does not exist (opened read-only)")
            _make_parent(p)
            return
        if not self.readonly:
            why = _not_writable(p)
            if why:
                self.readonly, self._readonly_why = True, why
                _log.info("FindDB %s: %s, so it is opened read-only", p, why)
        if self.readonly:
            self._ro_query = readonly_sqlite_query(p, immutable=immutable)
            _check_readable_wal(p, self._ro_query)
        if p.stat().st_size == 0:
            return
        why = _sqlite_problem(p, self._ro_query or {"mode": "ro"})
        if why is None:
            return
        if self.readonly:
            how = f"read-only ({self._readonly_why})" if self._readonly_why else "opened read-only"
            raise FindDBError(f"FindDB {p} is corrupt ({why}); {how}, so it was left in place")
        dest = _quarantine(p)
        _log.info("FindDB %s is corrupt (%s): moved to %s", p, why, dest)
        warnings.warn(f"FindDB {p} is corrupt ({why}); moved it to {dest or '(already moved by another process)'} "
                      "and started a fresh, empty database", FindDBWarning, stacklevel=3)

    def _refuse_write(self) -> None:
        why = f" ({self._readonly_why})" if self._readonly_why else ""
        raise FindDBError(f"FindDB {self._where} is read-only{why}")

    def _install_sqlite_hooks(self) -> None:
        wal = not self.readonly and self._path is not None

        @sa.event.listens_for(self._engine, "connect")
        def _on_connect(dbapi_con, _rec):  # noqa: ANN001
            dbapi_con.isolation_level = None  # we emit BEGIN ourselves (see _on_begin)
            cur = dbapi_con.cursor()
            cur.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @sa.event.listens_for(self._engine, "begin")
        def _on_begin(con: sa.Connection) -> None:
            write = con.get_execution_options().get("miofind_write")
            # WAL is switched on by the first write, not on connect: switching rewrites the file's
            # header, and a handle that only reads must leave the file as it was. It stays on in the file.
            if write and wal and not con.connection.info.get("miofind_wal"):
                con.exec_driver_sql("PRAGMA journal_mode=WAL")
                con.connection.info["miofind_wal"] = True
            # IMMEDIATE takes the write lock up front: concurrent writers wait on busy_timeout instead
            # of failing when a read lock cannot be upgraded.
            con.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    def _read_version(self, con: sa.Connection) -> int:
        if not sa.inspect(con).has_table("meta"):
            return 0
        return parse_version(self._where, con.execute(sa.select(_meta.c.value).where(_meta.c.key == "schema_version"))
                             .scalar())

    def _schema_version(self, con: sa.Connection) -> int:
        """The schema version after checking that this database is a FindDB miofind can use
        (``base.check_schema``: FindDBError for another application's database, a newer schema, a table
        of ours without its columns). 0 for an empty database."""
        insp = sa.inspect(con)
        return check_schema(self._where, set(insp.get_table_names()),
                            lambda t: {c["name"] for c in insp.get_columns(t)},
                            lambda: con.execute(sa.select(_meta.c.value).where(_meta.c.key == "schema_version"))
                            .scalar(), readonly=self.readonly, sqlite=self._sqlite, current=SCHEMA_VERSION)

    def _open_schema(self) -> None:
        v = self._run("read the schema version", self._schema_version)
        self._version = v
        if v == SCHEMA_VERSION or (self.readonly and _OLDEST_READABLE <= v):
            return
        if self.readonly:
            what = "has no FindDB schema" if v == 0 else f"has schema version {v} and needs a migration"
            raise FindDBError(f"FindDB {self._where} {what}; open it writable once")

        def create_or_migrate(con: sa.Connection) -> None:
            v = self._schema_version(con)  # again, now under the write lock
            if v == SCHEMA_VERSION:
                return  # another process got here first
            _md.create_all(con)
            if v == 0:
                con.execute(sa.insert(_meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
            else:
                while v < SCHEMA_VERSION:
                    _MIGRATIONS[v](con)
                    v += 1
                con.execute(sa.update(_meta).where(_meta.c.key == "schema_version").values(value=str(v)))
            self._schema_version(con)  # the result has every table and column (else rolled back)

        self._run("create the schema", create_or_migrate, write=True)
        self._version = SCHEMA_VERSION

    def _has(self, table: sa.Table) -> bool:
        """Whether the database has ``table`` (a read-only handle on an older schema may lack it)."""
        return _TABLE_SINCE.get(table.name, 0) <= self._version

    # -- plumbing ----------------------------------------------------------------------------------

    def _run(self, what: str, fn: Callable[[sa.Connection], _T], *, write: bool = False) -> _T:
        """Run fn in one transaction, retrying on lock errors; wrap failures in FindDBError."""
        if self._closed:
            raise FindDBError(f"FindDB {self._where} is closed")
        engine = self._wengine if write else self._engine
        if write:
            count_write()
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                with engine.begin() as con:
                    return fn(con)
            except (sa.exc.OperationalError, sqlite3.OperationalError) as e:
                if _is_lock_error(e) and attempt < _WRITE_ATTEMPTS - 1:
                    time.sleep(min(1.0, 0.02 * 2 ** attempt) * (0.5 + random.random()))
                    continue
                raise FindDBError(f"FindDB {self._where}: cannot {what}: {_first_line(e)}") from None
            except (sa.exc.SQLAlchemyError, sqlite3.Error) as e:
                raise FindDBError(f"FindDB {self._where}: cannot {what}: {_first_line(e)}") from None
        raise AssertionError("unreachable")

    def _records(self, rows: Iterable[sa.RowMapping], cls: type = Record) -> list:
        return decode_rows(rows, cls, self._where, stacklevel=3)

    # -- public API --------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._url

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def path(self) -> Path | None:
        """The SQLite file, or None for other databases (and in-memory SQLite)."""
        return self._path

    @property
    def connect_url(self) -> str:
        """The URL the engine connects with (password hidden): for a read-only SQLite file, a
        ``file:`` URI with ``mode=ro`` and, where ``readonly_sqlite_query`` says, ``immutable=1``."""
        return self._connect_url

    def store(self, records: Iterable[Record]) -> int:
        """Insert or replace records (same device, problem_key, solver_id) in one transaction; returns the count."""
        return self._upsert(Record, records, "store records")

    def store_perf(self, records: Iterable[PerfRecord]) -> int:
        """Insert or replace PerfDB entries (same device, problem_key, solver_id); returns the count."""
        return self._upsert(PerfRecord, records, "store tuned configs")

    def store_failures(self, failures: Iterable[TuneFailure]) -> int:
        """Record failed configs (same device, problem_key, solver_id, config: replaced); returns the count."""
        return self._upsert(TuneFailure, failures, "record failed configs")

    def _upsert(self, cls: type, items: Iterable[Any], what: str) -> int:
        if self.readonly:
            self._refuse_write()
        table, keys = _KINDS[cls]
        rows = latest_rows(self._where, cls, items, _to_row, lambda r, row: tuple(row[k] for k in keys))
        if not rows:
            return 0
        dialect = self._engine.dialect.name
        data = _data_cols(table)

        def upsert(con: sa.Connection) -> None:
            if dialect in ("sqlite", "postgresql"):
                con.execute(_upsert_statement(dialect, table, keys, data), rows)
                return
            for row in rows:
                cond = sa.and_(*(table.c[c] == row[c] for c in keys))
                if con.execute(sa.select(table.c.id).where(cond)).first() is None:
                    con.execute(sa.insert(table).values(row))
                else:
                    con.execute(sa.update(table).where(cond).values(row))

        self._run(what, upsert, write=True)
        return len(rows)

    def lookup(self, device: str | None, problem_key: str) -> list[Record]:
        """All valid records of one problem on one device (any device if None), fastest first."""
        q = sa.select(*_raw_cols(_records, self._version)).where(_records.c.problem_key == problem_key)
        if device is not None:
            q = q.where(_records.c.device == device)
        q = q.order_by(_records.c.time_ms, _records.c.solver_id)
        return self._records(self._run("look up records", lambda con: con.execute(q).mappings().all()))

    def solver_ids(self) -> frozenset[str]:
        """The solvers of which this DB holds any find record, on any device: what a system DB vouches for
        (``miofind.find.from_db``)."""
        if self._solvers is not None:
            return self._solvers
        q = sa.select(_records.c.solver_id).distinct()
        got = frozenset(r[0] for r in self._run("list the recorded solvers", lambda con: con.execute(q).all()))
        if self._immutable:
            self._solvers = got
        return got

    def lookup_perf(self, device: str | None, problem_key: str, solver_id: str | None = None) -> list[PerfRecord]:
        """PerfDB entries of one problem (one solver if given) on one device (any if None), newest first."""
        t = _perf.c
        q = sa.select(*_raw_cols(_perf)).where(t.problem_key == problem_key)
        if device is not None:
            q = q.where(t.device == device)
        if solver_id is not None:
            q = q.where(t.solver_id == solver_id)
        q = q.order_by(t.created_at.desc(), t.id.desc())
        return self._records(self._run("look up tuned configs", lambda con: con.execute(q).mappings().all()),
                             PerfRecord)

    def iter_perf(self, device: str | None = None) -> Iterator[PerfRecord]:
        """Every valid PerfDB entry (of one device if given), by device, problem and solver."""
        t = _perf.c
        q = sa.select(*_raw_cols(_perf))
        if device is not None:
            q = q.where(t.device == device)
        q = q.order_by(t.device, t.problem_key, t.solver_id)
        yield from self._records(self._run("read tuned configs", lambda con: con.execute(q).mappings().all()),
                                 PerfRecord)

    def failures(self, device: str, problem_key: str, solver_id: str) -> list[TuneFailure]:
        """The configs recorded as failed for one solver on one problem and device."""
        t = _failures.c
        q = (sa.select(*_raw_cols(_failures))
             .where(t.device == device, t.problem_key == problem_key, t.solver_id == solver_id).order_by(t.id))
        return self._records(self._run("read failed configs", lambda con: con.execute(q).mappings().all()),
                             TuneFailure)

    def iter_failures(self, device: str | None = None) -> Iterator[TuneFailure]:
        t = _failures.c
        q = sa.select(*_raw_cols(_failures))
        if device is not None:
            q = q.where(t.device == device)
        q = q.order_by(t.device, t.problem_key, t.solver_id, t.id)
        yield from self._records(self._run("read failed configs", lambda con: con.execute(q).mappings().all()),
                                 TuneFailure)

    def store_find_failures(self, device: str, problem_key: str, solver_ids: Iterable[str],
                            failures: Iterable[FindFailure], *, failed: Iterable[str] = ()) -> int:
        """Replace what is recorded of the find failures of ``solver_ids`` (and of the failures' own
        solvers) on one problem and device by ``failures``, in one transaction: the outcome of their
        latest find, so a solver that now succeeds has none. The find records of the solvers in
        ``failed`` (which produced no solution) are deleted with it. Returns how many were stored."""
        if self.readonly:
            self._refuse_write()
        rows, solvers = collect_find_failures(self._where, device, problem_key, solver_ids, failures, _to_row)
        failed = sorted(set(failed))
        if not solvers and not failed:
            return 0
        t = _find_failures
        mine = sa.and_(t.c.device == device, t.c.problem_key == problem_key, t.c.solver_id.in_(sorted(solvers)))
        if not rows and not failed and self._run("read find failures", lambda con: con.execute(
                sa.select(t.c.id).where(mine).limit(1)).first()) is None:
            return 0   # nothing to clear: no write (a write makes this process's cached answers stale)

        def replace(con: sa.Connection) -> None:
            con.execute(sa.delete(t).where(mine))
            if failed:
                r = _records.c
                con.execute(sa.delete(_records).where(r.device == device, r.problem_key == problem_key,
                                                      r.solver_id.in_(failed)))
            if rows:
                con.execute(sa.insert(t), list(rows.values()))

        self._run("record find failures", replace, write=True)
        return len(rows)

    def find_failures(self, device: str | None, problem_key: str) -> list[FindFailure]:
        """The recorded find failures of one problem on one device (None: any), by solver and config."""
        if not self._has(_find_failures):
            return []
        t = _find_failures.c
        conds = [t.problem_key == problem_key] + ([t.device == device] if device is not None else [])
        q = (sa.select(*_raw_cols(_find_failures)).where(*conds)
             .order_by(t.solver_id, t.config, t.id))
        return self._records(self._run("read find failures", lambda con: con.execute(q).mappings().all()),
                             FindFailure)

    def count_find_failures(self, device: str | None = None) -> int:
        """How many find failures are recorded (of ``device`` if given), in one COUNT query."""
        if not self._has(_find_failures):
            return 0
        q = sa.select(sa.func.count()).select_from(_find_failures)
        if device is not None:
            q = q.where(_find_failures.c.device == device)
        return self._run("count find failures", lambda con: con.execute(q).scalar_one())

    def problem_keys(self, device: str | None = None, suffix: str | None = None) -> list[str]:
        """Distinct problem keys with find records (of one device if given; ending in ``suffix`` if given)."""
        t = _records.c
        q = sa.select(t.problem_key).distinct()
        if device is not None:
            q = q.where(t.device == device)
        if suffix is not None:
            esc = suffix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            q = q.where(t.problem_key.like("%" + esc, escape="\\"))
        return sorted(self._run("list problems", lambda con: con.execute(q).scalars().all()))

    def devices(self) -> list[str]:
        """The devices that have find records or tuned configs."""
        def query(con: sa.Connection) -> list[str]:
            a = set(con.execute(sa.select(_records.c.device).distinct()).scalars())
            return sorted(a | set(con.execute(sa.select(_perf.c.device).distinct()).scalars()))
        return self._run("list devices", query)

    @staticmethod
    def _record_filter(q, device: str | Iterable[str] | None, problem_key_like: str | None):
        if isinstance(device, str):
            q = q.where(_records.c.device == device)
        elif device is not None:
            q = q.where(_records.c.device.in_(list(device)))
        if problem_key_like is not None:
            q = q.where(_records.c.problem_key.like(problem_key_like))
        return q

    def iter_records(self, device: str | Iterable[str] | None = None, problem_key_like: str | None = None,
                     limit: int | None = None) -> Iterator[Record]:
        """Valid records, by device, problem and time, at most ``limit``; ``device`` is one device or
        several, ``problem_key_like`` a SQL LIKE pattern."""
        q = self._record_filter(sa.select(*_raw_cols(_records, self._version)), device, problem_key_like)
        q = q.order_by(_records.c.device, _records.c.problem_key, _records.c.time_ms, _records.c.solver_id)
        if limit is not None:
            q = q.limit(limit)
        yield from self._records(self._run("read records", lambda con: con.execute(q).mappings().all()))

    def count_records(self, device: str | Iterable[str] | None = None, problem_key_like: str | None = None) -> int:
        """How many find records ``iter_records`` would read with the same filters and no limit (rows
        that fail validation included), in one COUNT query."""
        q = self._record_filter(sa.select(sa.func.count()).select_from(_records), device, problem_key_like)
        return self._run("count records", lambda con: con.execute(q).scalar_one())

    def delete(self, device: str | None = None, problem_key: str | None = None, solver_id: str | None = None,
               *, what: str = "find") -> int:
        """Delete the find records (``what="perf"``: tuned configs; ``"failures"``: failed configs of
        tuning; ``"find_failures"``: failed find candidates) matching every given filter (all if none);
        returns how many."""
        if self.readonly:
            self._refuse_write()
        tables = {"find": _records, "perf": _perf, "failures": _failures, "find_failures": _find_failures}
        if what not in tables:
            raise ValueError(f"what={what!r}: expected one of {', '.join(tables)}")
        table = tables[what]
        q = sa.delete(table)
        for col, v in (("device", device), ("problem_key", problem_key), ("solver_id", solver_id)):
            if v is not None:
                q = q.where(table.c[col] == v)
        return self._run("delete records", lambda con: con.execute(q).rowcount, write=True)

    def stats(self) -> dict[str, Any]:
        """Counts (records, problems, devices, per solver), schema version, URL and SQLite file size."""
        def query(con: sa.Connection) -> dict[str, Any]:
            f, r = sa.func, _records.c
            n, devices = con.execute(sa.select(f.count(), f.count(sa.distinct(r.device))).select_from(_records)).one()
            pairs = sa.select(r.device, r.problem_key).distinct().subquery()
            problems = con.execute(sa.select(f.count()).select_from(pairs)).scalar_one()
            solvers = dict(con.execute(sa.select(_records.c.solver_id, f.count()).group_by(_records.c.solver_id)
                                       .order_by(_records.c.solver_id)).all())
            perf = con.execute(sa.select(f.count()).select_from(_perf)).scalar_one()
            failed = con.execute(sa.select(f.count()).select_from(_failures)).scalar_one()
            find_failed = (con.execute(sa.select(f.count()).select_from(_find_failures)).scalar_one()
                           if self._has(_find_failures) else 0)
            jobs = dict(con.execute(sa.select(jobs_table.c.status, f.count()).group_by(jobs_table.c.status)).all())
            return {"records": n, "problems": problems, "devices": devices, "solvers": solvers,
                    "perf_records": perf, "failed_configs": failed, "failed_find_candidates": find_failed, "jobs": jobs,
                    "schema_version": self._read_version(con)}

        out = self._run("compute statistics", query)
        size = None
        if self._path is not None:
            size = sum(os.path.getsize(p) for p in (self._path, Path(f"{self._path}-wal")) if p.exists())
        out.update(file_bytes=size, url=self._url, path=str(self._path) if self._path else None)
        return out

    def rekey(self, changes: dict[tuple[str, str], str]) -> dict[str, int]:
        """Replace stored trust keys: ``changes[(solver_id, old key)] = new key``, in find records,
        tuned configs and failed configs, in one transaction. Returns the rows changed per table."""
        if self.readonly:
            self._refuse_write()

        def run(con: sa.Connection) -> dict[str, int]:
            counts = {}
            for name, table in (("find", _records), ("perf", _perf), ("failures", _failures)):
                n = 0
                for (solver_id, old), new in changes.items():
                    q = (sa.update(table).where(table.c.solver_id == solver_id, table.c.kernel_hash == old)
                         .values(kernel_hash=new))
                    n += con.execute(q).rowcount
                counts[name] = n
            return counts

        return self._run("replace trust keys", run, write=True)

    def close(self) -> None:
        """Release every connection; the object is unusable afterwards."""
        if not self._closed:
            self._closed = True
            self._engine.dispose()

    def __enter__(self) -> "FindDB":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FindDB({self._where!r}{', readonly=True' if self.readonly else ''})"
