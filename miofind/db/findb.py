"""The persistent FindDB: measured solver results per (device, problem), in any SQLAlchemy database.

SQLite is the default (one file per user, see ``default_db_url``) and is hardened against what MIOpen's
users run into: many processes writing at once (WAL, a 30 s busy timeout, ``BEGIN IMMEDIATE`` writes and
retries, so no lock error reaches the caller), files corrupted by killed jobs (moved aside, never deleted,
and replaced by a fresh database), and stale records after an upgrade (``is_trusted``). Rows read back are
validated; a bad row is skipped with a ``FindDBWarning``. Values are stored as plain columns and JSON text:
no pickle, no eval.
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import os
import random
import sqlite3
import time
import urllib.parse
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

import platformdirs
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as _pg
from sqlalchemy.dialects import sqlite as _sqlite

__all__ = ["FindDB", "Record", "FindDBError", "FindDBWarning", "default_db_url", "is_trusted", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
_BUSY_TIMEOUT_MS = 30_000
_WRITE_ATTEMPTS = 10
_T = TypeVar("_T")


class FindDBError(RuntimeError):
    """A FindDB operation failed; the message names the database and what went wrong."""


class FindDBWarning(UserWarning):
    """Something was wrong but handled: a corrupt file moved aside, an invalid row skipped."""


# -- records ---------------------------------------------------------------------------------------

_STR_FIELDS = ("device", "device_name", "problem_key", "solver_id", "algorithm", "package_version",
               "kernel_hash", "driver_version", "cuda_version", "cupy_version")


def _real(name: str, v: Any, *, optional: bool = False, finite: bool = True) -> float | None:
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"{name}={v!r}: expected a number")
    f = float(v)
    if math.isnan(f) or (finite and math.isinf(f)):
        raise ValueError(f"{name}={v!r}: expected a finite number")
    return f


@dataclass(frozen=True)
class Record:
    """One measured solution of one problem on one device, as the FindDB stores it.

    ``device`` is ``DeviceInfo.db_name`` (e.g. ``sm_90-132``), ``problem_key`` is
    ``ProblemDescription.key()``. ``time_ms`` is the measured time (median), ``time_q20_ms`` and
    ``time_q80_ms`` its 20th/80th percentiles when known. ``config`` is the solver's tuned
    configuration (a JSON-serialisable dict) or None. Construction validates and normalises every
    field (ValueError on a bad one): finite non-negative times, non-negative integer workspace.
    """

    device: str
    device_name: str
    problem_key: str
    solver_id: str
    algorithm: str
    time_ms: float
    workspace_bytes: int
    config: dict | None = field(default=None, hash=False)  # dicts are unhashable
    verified: bool = False
    max_error: float | None = None
    package_version: str = ""
    kernel_hash: str = ""
    driver_version: str = ""
    cuda_version: str = ""
    cupy_version: str = ""
    created_at: float = field(default_factory=time.time)
    time_q20_ms: float | None = None
    time_q80_ms: float | None = None

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name in _STR_FIELDS:
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name}={getattr(self, name)!r}: expected a string")
        for name in ("device", "problem_key", "solver_id"):
            if not getattr(self, name):
                raise ValueError(f"{name} must not be empty")
        for name in ("time_ms", "time_q20_ms", "time_q80_ms", "max_error"):
            v = _real(name, getattr(self, name), optional=name != "time_ms", finite=name != "max_error")
            if v is not None and v < 0:
                raise ValueError(f"{name}={v!r}: must not be negative")
            put(name, v)
        put("created_at", _real("created_at", self.created_at))
        ws = self.workspace_bytes
        if isinstance(ws, bool) or not isinstance(ws, numbers.Integral):
            raise ValueError(f"workspace_bytes={ws!r}: expected an integer")
        if ws < 0:
            raise ValueError(f"workspace_bytes={ws!r}: must not be negative")
        put("workspace_bytes", operator.index(ws))
        if not isinstance(self.verified, bool):
            raise ValueError(f"verified={self.verified!r}: expected a bool")
        if self.config is not None:
            if not isinstance(self.config, dict):
                raise ValueError(f"config={self.config!r}: expected a dict or None")
            try:
                json.dumps(self.config, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ValueError(f"config={self.config!r}: not JSON-serialisable ({e})") from None

    @property
    def db_key(self) -> tuple[str, str, str]:
        return self.device, self.problem_key, self.solver_id


def is_trusted(record: Record, *, package_version: str, kernel_hash: str, cuda_version: str) -> tuple[bool, str]:
    """Whether a stored record may be used as is: (True, "ok") or (False, why not).

    Trusted only if it was written by the same miofind version, from the same kernel sources
    (``kernel_hash``) and under the same CUDA major version.
    """
    reasons = []
    if record.package_version != package_version:
        reasons.append(f"written by miofind {record.package_version or '?'}, this is {package_version}")
    if record.kernel_hash != kernel_hash:
        reasons.append("kernel source changed since the record was written")
    rec_major, cur_major = record.cuda_version.split(".")[0], cuda_version.split(".")[0]
    if rec_major != cur_major:
        reasons.append(f"written under CUDA {record.cuda_version or '?'}, this is CUDA {cuda_version} "
                       "(major version differs)")
    return (not reasons, "; ".join(reasons) or "ok")


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
    sa.UniqueConstraint("device", "problem_key", "solver_id", name="uq_find_records_key"),
    sa.Index("ix_find_records_device_problem", "device", "problem_key"),
)
_KEY_COLS = ("device", "problem_key", "solver_id")
_DATA_COLS = tuple(c.name for c in _records.c if c.name != "id")
# Read columns untyped, so a malformed value reaches our validation instead of a driver converter.
_RAW_COLS = [sa.type_coerce(c, sa.types.NullType()).label(c.name) for c in _records.c]

# _MIGRATIONS[v] upgrades a schema from version v to v + 1 inside the open write transaction.
_MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {}


def _to_row(r: Record) -> dict[str, Any]:
    row = {name: getattr(r, name) for name in _DATA_COLS}
    row["config"] = None if r.config is None else json.dumps(r.config, sort_keys=True, allow_nan=False)
    return row


def _from_row(row: sa.RowMapping) -> Record:
    """Validate a raw row; ValueError/TypeError on anything malformed."""
    vals = {name: row[name] for name in _DATA_COLS}
    cfg = vals["config"]
    if cfg is not None:
        if not isinstance(cfg, str):
            raise ValueError(f"config={cfg!r}: expected JSON text")
        try:
            cfg = json.loads(cfg)
        except json.JSONDecodeError as e:
            raise ValueError(f"config={vals['config']!r}: not valid JSON ({e.msg})") from None
        if cfg is not None and not isinstance(cfg, dict):
            raise ValueError(f"config={vals['config']!r}: JSON is not an object or null")
    vals["config"] = cfg
    v = vals["verified"]
    if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
        vals["verified"] = bool(v)
    return Record(**vals)


# -- URLs and files --------------------------------------------------------------------------------

def _normalize_url(url: str) -> str:
    if "://" in url:
        return url
    return "sqlite:///" + os.path.abspath(os.path.expanduser(url))


def default_db_url() -> str:
    """``$MIOFIND_DB`` (a SQLAlchemy URL or a bare file path), else the per-user SQLite file."""
    env = os.environ.get("MIOFIND_DB", "").strip()
    if env:
        return _normalize_url(env)
    d = Path(platformdirs.user_data_dir("miofind"))
    d.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{d / 'finddb.sqlite'}"


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


def _sqlite_problem(path: Path) -> str | None:
    """Why this SQLite file is unusable (corrupt, not a database), or None if it passes quick_check."""
    try:
        con = sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True,
                              timeout=_BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error:
        return None  # cannot even open (permissions...): the engine reports it properly
    try:
        rows = con.execute("PRAGMA quick_check").fetchall()
    except sqlite3.OperationalError as e:
        if _is_lock_error(e) or "unable to open" in str(e):
            return None
        return str(e)
    except sqlite3.DatabaseError as e:  # "file is not a database", "database disk image is malformed"
        return str(e)
    finally:
        con.close()
    if [tuple(r) for r in rows] != [("ok",)]:
        return "PRAGMA quick_check: " + "; ".join(str(r[0]) for r in rows[:3])
    return None


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
    for suffix in ("-wal", "-shm", "-journal"):
        try:
            os.rename(f"{path}{suffix}", f"{dest}{suffix}")
        except FileNotFoundError:
            pass
    return dest


# -- the database ----------------------------------------------------------------------------------

class FindDB:
    """A FindDB at a SQLAlchemy URL (default: ``default_db_url()``).

    Creates or migrates the schema on open (a newer schema raises FindDBError). A corrupt SQLite
    file is moved to ``<name>.corrupt-<UTC time>`` with a FindDBWarning and replaced by an empty
    database (a read-only FindDB raises FindDBError instead). Every failure surfaces as
    FindDBError; transient lock errors are retried, never raised.
    """

    def __init__(self, url: str | None = None, *, readonly: bool = False) -> None:
        self._url = _normalize_url(url) if url else default_db_url()
        self.readonly = readonly
        self._closed = False
        try:
            parsed = sa.make_url(self._url)
        except (sa.exc.ArgumentError, ValueError) as e:
            raise FindDBError(f"FindDB URL {self._url!r} is not a valid SQLAlchemy URL ({e})") from None
        self._path = _sqlite_path(parsed)
        self._where = str(self._path) if self._path else parsed.render_as_string(hide_password=True)
        self._sqlite = parsed.get_backend_name() == "sqlite"
        if self._path is not None:
            self._check_file()
            if readonly:
                parsed = sa.URL.create("sqlite", database=f"file:{urllib.parse.quote(str(self._path))}",
                                       query={"mode": "ro", "uri": "true"})
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

    # -- setup -------------------------------------------------------------------------------------

    def _check_file(self) -> None:
        p = self._path
        assert p is not None
        if not p.exists():
            if self.readonly:
                raise FindDBError(f"FindDB {p} does not exist (opened read-only)")
            p.parent.mkdir(parents=True, exist_ok=True)
            return
        if p.stat().st_size == 0:
            return
        why = _sqlite_problem(p)
        if why is None:
            return
        if self.readonly:
            raise FindDBError(f"FindDB {p} is corrupt ({why}); opened read-only, so it was left in place")
        dest = _quarantine(p)
        warnings.warn(f"FindDB {p} is corrupt ({why}); moved it to {dest or '(already moved by another process)'} "
                      "and started a fresh, empty database", FindDBWarning, stacklevel=3)

    def _install_sqlite_hooks(self) -> None:
        readonly, memory = self.readonly, self._path is None

        @sa.event.listens_for(self._engine, "connect")
        def _on_connect(dbapi_con, _rec):  # noqa: ANN001
            dbapi_con.isolation_level = None  # we emit BEGIN ourselves (see _on_begin)
            cur = dbapi_con.cursor()
            cur.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            if not readonly and not memory:
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @sa.event.listens_for(self._engine, "begin")
        def _on_begin(con: sa.Connection) -> None:
            # IMMEDIATE takes the write lock up front: concurrent writers wait on busy_timeout instead
            # of failing when a read lock cannot be upgraded.
            con.exec_driver_sql("BEGIN IMMEDIATE" if con.get_execution_options().get("miofind_write") else "BEGIN")

    def _read_version(self, con: sa.Connection) -> int:
        if not sa.inspect(con).has_table("meta"):
            return 0
        v = con.execute(sa.select(_meta.c.value).where(_meta.c.key == "schema_version")).scalar()
        try:
            return int(v) if v is not None else 0
        except ValueError:
            raise FindDBError(f"FindDB {self._where}: schema_version {v!r} is not an integer") from None

    def _check_version(self, v: int) -> None:
        if v > SCHEMA_VERSION:
            raise FindDBError(f"FindDB {self._where} has schema version {v}, newer than the version "
                              f"{SCHEMA_VERSION} this miofind knows; upgrade miofind or use another database "
                              "(MIOFIND_DB)")

    def _open_schema(self) -> None:
        v = self._run("read the schema version", self._read_version)
        self._check_version(v)
        if v == SCHEMA_VERSION:
            return
        if self.readonly:
            what = "has no FindDB schema" if v == 0 else f"has schema version {v} and needs a migration"
            raise FindDBError(f"FindDB {self._where} {what}; open it writable once")

        def create_or_migrate(con: sa.Connection) -> None:
            v = self._read_version(con)  # again, now under the write lock
            self._check_version(v)
            if v == SCHEMA_VERSION:
                return  # another process got here first
            _md.create_all(con)
            if v == 0:
                con.execute(sa.insert(_meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
                return
            while v < SCHEMA_VERSION:
                _MIGRATIONS[v](con)
                v += 1
            con.execute(sa.update(_meta).where(_meta.c.key == "schema_version").values(value=str(v)))

        self._run("create the schema", create_or_migrate, write=True)

    # -- plumbing ----------------------------------------------------------------------------------

    def _run(self, what: str, fn: Callable[[sa.Connection], _T], *, write: bool = False) -> _T:
        """Run fn in one transaction, retrying on lock errors; wrap failures in FindDBError."""
        if self._closed:
            raise FindDBError(f"FindDB {self._where} is closed")
        engine = self._wengine if write else self._engine
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

    def _records(self, rows: Iterable[sa.RowMapping]) -> list[Record]:
        out = []
        for row in rows:
            try:
                out.append(_from_row(row))
            except (ValueError, TypeError) as e:
                warnings.warn(f"FindDB {self._where}: skipping invalid row id={row['id']}: {e}",
                              FindDBWarning, stacklevel=3)
        return out

    # -- public API --------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._url

    @property
    def path(self) -> Path | None:
        """The SQLite file, or None for other databases (and in-memory SQLite)."""
        return self._path

    def store(self, records: Iterable[Record]) -> int:
        """Insert or replace records (same device, problem_key, solver_id) in one transaction; returns the count."""
        if self.readonly:
            raise FindDBError(f"FindDB {self._where} is read-only")
        latest: dict[tuple[str, str, str], Record] = {}
        for r in records:
            if not isinstance(r, Record):
                raise FindDBError(f"FindDB {self._where}: store() takes Record objects, got {type(r).__name__}")
            latest[r.db_key] = r  # the last of duplicates wins
        rows = [_to_row(r) for r in latest.values()]
        if not rows:
            return 0
        dialect = self._engine.dialect.name

        def upsert(con: sa.Connection) -> None:
            if dialect in ("sqlite", "postgresql"):
                ins = (_sqlite.insert if dialect == "sqlite" else _pg.insert)(_records)
                stmt = ins.on_conflict_do_update(
                    index_elements=list(_KEY_COLS),
                    set_={c: ins.excluded[c] for c in _DATA_COLS if c not in _KEY_COLS})
                con.execute(stmt, rows)
                return
            for row in rows:
                cond = sa.and_(*(_records.c[c] == row[c] for c in _KEY_COLS))
                if con.execute(sa.select(_records.c.id).where(cond)).first() is None:
                    con.execute(sa.insert(_records).values(row))
                else:
                    con.execute(sa.update(_records).where(cond).values(row))

        self._run("store records", upsert, write=True)
        return len(rows)

    def lookup(self, device: str, problem_key: str) -> list[Record]:
        """All valid records of one problem on one device, fastest first."""
        q = (sa.select(*_RAW_COLS).where(_records.c.device == device, _records.c.problem_key == problem_key)
             .order_by(_records.c.time_ms, _records.c.solver_id))
        return self._records(self._run("look up records", lambda con: con.execute(q).mappings().all()))

    def iter_records(self, device: str | None = None, problem_key_like: str | None = None,
                     limit: int | None = None) -> Iterator[Record]:
        """Valid records, by device, problem and time; ``problem_key_like`` is a SQL LIKE pattern."""
        q = sa.select(*_RAW_COLS)
        if device is not None:
            q = q.where(_records.c.device == device)
        if problem_key_like is not None:
            q = q.where(_records.c.problem_key.like(problem_key_like))
        q = q.order_by(_records.c.device, _records.c.problem_key, _records.c.time_ms, _records.c.solver_id)
        if limit is not None:
            q = q.limit(limit)
        yield from self._records(self._run("read records", lambda con: con.execute(q).mappings().all()))

    def delete(self, device: str | None = None, problem_key: str | None = None, solver_id: str | None = None) -> int:
        """Delete the records matching every given filter (all records if none); returns how many."""
        if self.readonly:
            raise FindDBError(f"FindDB {self._where} is read-only")
        q = sa.delete(_records)
        for col, v in (("device", device), ("problem_key", problem_key), ("solver_id", solver_id)):
            if v is not None:
                q = q.where(_records.c[col] == v)
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
            return {"records": n, "problems": problems, "devices": devices, "solvers": solvers,
                    "schema_version": self._read_version(con)}

        out = self._run("compute statistics", query)
        size = None
        if self._path is not None:
            size = sum(os.path.getsize(p) for p in (self._path, Path(f"{self._path}-wal")) if p.exists())
        out.update(file_bytes=size, url=self._url, path=str(self._path) if self._path else None)
        return out

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
