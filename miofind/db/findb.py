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
"""

from __future__ import annotations

import json
import logging
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

__all__ = ["FindDB", "Record", "PerfRecord", "TuneFailure", "FindFailure", "FindDBError", "FindDBWarning",
           "default_db_url",
           "sqlite_file", "readonly_sqlite_query",
           "config_key", "SCHEMA_VERSION"]

SCHEMA_VERSION = 4
# The oldest schema a read-only handle reads as is: each later version only added tables, which read
# as empty (a read-only open must not migrate; the shipped system DBs are version 2).
_OLDEST_READABLE = 2
_BUSY_TIMEOUT_MS = 30_000
BUILDS = ("specialized", "generic")
_WRITE_ATTEMPTS = 10
_T = TypeVar("_T")
_writes = [0]   # writes made by this process (any FindDB): caches of DB answers compare it


def dialect_insert(dialect: str):
    """The INSERT construct with ON CONFLICT of a dialect ("sqlite" or "postgresql"), imported on
    first use: the PostgreSQL dialect's import costs a SQLite user tens of milliseconds at start-up."""
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        from sqlalchemy.dialects.postgresql import insert
    return insert


def write_generation() -> int:
    """A number that changes whenever this process writes to any FindDB (an in-process cache of
    answers read from FindDBs is stale once it changed)."""
    return _writes[0]
_log = logging.getLogger(__name__)


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
    # which build was measured: the shape-specialised kernels, or a generic build (miofind.generic)
    build: str = "specialized"

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        if self.build not in BUILDS:
            raise ValueError(f"build={self.build!r}: expected 'specialized' or 'generic'")
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


def config_key(config: dict | None) -> str:
    """Canonical JSON text of a config: the identity of a config in the PerfDB and failure table."""
    return "" if not config else json.dumps(config, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _check_strs(obj: Any, names: Iterable[str], nonempty: Iterable[str]) -> None:
    for name in names:
        if not isinstance(getattr(obj, name), str):
            raise ValueError(f"{name}={getattr(obj, name)!r}: expected a string")
    for name in nonempty:
        if not getattr(obj, name):
            raise ValueError(f"{name} must not be empty")


def _check_config(config: Any, *, required: bool) -> None:
    if config is None and not required:
        return
    if not isinstance(config, dict) or (required and not config):
        raise ValueError(f"config={config!r}: expected a non-empty dict" if required else
                         f"config={config!r}: expected a dict or None")
    try:
        json.dumps(config, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"config={config!r}: not JSON-serialisable ({e})") from None


@dataclass(frozen=True)
class PerfRecord:
    """The tuned config of one solver for one problem on one device (MIOpen's PerfDB entry).

    ``time_ms`` is the tuned config's re-measured median; ``default_time_ms`` the solver's default
    config measured in the same run (None when it failed). ``strategy``, ``configs_tried`` and
    ``tune_seconds`` say how it was found. Trusted like a Record (version, kernel hash, CUDA major).
    """

    device: str
    problem_key: str
    solver_id: str
    config: dict = field(hash=False)
    time_ms: float
    default_time_ms: float | None = None
    strategy: str = ""
    configs_tried: int = 0
    tune_seconds: float = 0.0
    device_name: str = ""
    package_version: str = ""
    kernel_hash: str = ""
    cuda_version: str = ""
    created_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        _check_strs(self, ("device", "problem_key", "solver_id", "strategy", "device_name", "package_version",
                           "kernel_hash", "cuda_version"), ("device", "problem_key", "solver_id"))
        _check_config(self.config, required=True)
        for name in ("time_ms", "default_time_ms", "tune_seconds", "created_at"):
            v = _real(name, getattr(self, name), optional=name == "default_time_ms")
            if v is not None and v < 0:
                raise ValueError(f"{name}={v!r}: must not be negative")
            object.__setattr__(self, name, v)
        n = self.configs_tried
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError(f"configs_tried={n!r}: expected a non-negative integer")
        object.__setattr__(self, "configs_tried", operator.index(n))

    @property
    def db_key(self) -> tuple[str, str, str]:
        return self.device, self.problem_key, self.solver_id


@dataclass(frozen=True)
class TuneFailure:
    """A config that failed to compile, launch or verify for one problem: a resumed tune skips it
    while the solver's ``kernel_hash`` is unchanged."""

    device: str
    problem_key: str
    solver_id: str
    config: dict = field(hash=False)
    stage: str
    reason: str
    kernel_hash: str = ""
    created_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        _check_strs(self, ("device", "problem_key", "solver_id", "stage", "reason", "kernel_hash"),
                    ("device", "problem_key", "solver_id", "stage"))
        _check_config(self.config, required=True)
        object.__setattr__(self, "created_at", _real("created_at", self.created_at))


@dataclass(frozen=True)
class FindFailure:
    """A candidate that failed in a find (one config of one solver, on one problem and device): what
    failed (``stage``: solution, compile, launch, verify) and why, under which trust key
    (``kernel_hash``) and CUDA version. A normal-mode find does not measure it again while both hold
    (``miofind.find``); ``config`` is None for a solver's default."""

    device: str
    problem_key: str
    solver_id: str
    config: dict | None = field(hash=False)
    stage: str
    reason: str
    kernel_hash: str = ""
    cuda_version: str = ""
    package_version: str = ""
    created_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        _check_strs(self, ("device", "problem_key", "solver_id", "stage", "reason", "kernel_hash", "cuda_version",
                           "package_version"), ("device", "problem_key", "solver_id", "stage"))
        _check_config(self.config, required=False)
        if self.config is not None and not self.config:
            object.__setattr__(self, "config", None)   # {} and None are both the default config
        object.__setattr__(self, "created_at", _real("created_at", self.created_at))


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
# The schema version that added each table after version 1 (a read-only handle on an older schema
# reads a newer table as empty).
_TABLE_SINCE = {"find_failures": 3}
# The schema version that added a column to an existing table (read-only handles on older schemas
# read it as its default).
_COLUMN_SINCE = {("find_records", "build"): 4}
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


def _from_row(row: sa.RowMapping, cls: type = None) -> Any:
    """Validate a raw row into a ``cls`` (default Record); ValueError/TypeError on anything malformed."""
    cls = cls or Record
    vals = {name: row[name] for name in _data_cols(_KINDS[cls][0]) if name in row}   # a newer column may be absent
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
    if "verified" in vals:
        v = vals["verified"]
        if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
            vals["verified"] = bool(v)
    return cls(**vals)


_KINDS.update({Record: (_records, _KEY_COLS), PerfRecord: (_perf, _KEY_COLS),
               TuneFailure: (_failures, _KEY_COLS + ("config",)),
               FindFailure: (_find_failures, _KEY_COLS + ("config",))})


# -- URLs and files --------------------------------------------------------------------------------

def normalize_url(url: str) -> str:
    """A SQLAlchemy URL as given, or a file path or SQLite URI filename (``file:PATH``) as an absolute
    sqlite:/// URL. ValueError naming the URL for what SQLite would misread: a NUL character, a ``file:``
    URI with a host or parameters, and SQLAlchemy's ``sqlite:///file:...`` without ``uri=true`` (SQLite
    would create a file literally named ``file:...``)."""
    if not isinstance(url, str):
        raise ValueError(f"FindDB URL={_show(url)}: expected a string")
    if "\0" in url:
        raise ValueError(f"FindDB URL {_show(url)}: contains a NUL character")
    if url[:5].lower() == "file:":
        return "sqlite:///" + _file_uri_path(url, url)
    if "://" in url:
        if url[:6].lower() == "sqlite":
            return _normalize_sqlite_url(url)
        return url
    return "sqlite:///" + os.path.abspath(os.path.expanduser(url))


def _show(v: Any) -> str:
    from ..problem import show

    return show(v)


_URI_PARAMS_HINT = ("SQLite URI parameters are not supported: give the file as a path (read-only commands "
                    "open it read-only themselves)")


def _file_uri_path(uri: str, url: str) -> str:
    """The absolute path a SQLite URI filename ``file:PATH`` names (percent-decoded; relative to the
    current directory when it has no leading slash, as SQLite reads it)."""
    parts = urllib.parse.urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise ValueError(f"FindDB URL {_show(url)}: a SQLite file: URI names no host (got {parts.netloc!r})")
    if parts.query or parts.fragment:
        raise ValueError(f"FindDB URL {_show(url)}: {_URI_PARAMS_HINT}")
    path = urllib.parse.unquote(parts.path)
    if not path:
        raise ValueError(f"FindDB URL {_show(url)}: names no file")
    if "\0" in path:
        raise ValueError(f"FindDB URL {_show(url)}: contains a NUL character")
    return os.path.abspath(os.path.expanduser(path))


def _normalize_sqlite_url(url: str) -> str:
    """``sqlite:///file:PATH?uri=true`` (SQLAlchemy's form of a SQLite URI filename) as ``sqlite:///PATH``;
    other SQLite URLs as given (a shared in-memory ``mode=memory`` URI included)."""
    try:
        parsed = sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError):
        return url  # FindDB and sqlite_file report it
    db = parsed.database or ""
    if not db.startswith("file:"):
        return url
    query = dict(parsed.query)
    if query.get("uri") not in ("true", "1"):
        raise ValueError(f"FindDB URL {_show(url)}: a SQLite URI filename needs ?uri=true, else SQLite creates a "
                         f"file literally named {db.split('?')[0]!r}; or give the path (sqlite:////abs/path)")
    if query.get("mode") == "memory":
        return url
    if set(query) - {"uri"} or "?" in db:
        raise ValueError(f"FindDB URL {_show(url)}: {_URI_PARAMS_HINT}")
    return "sqlite:///" + _file_uri_path(db, url)


def default_db_url() -> str:
    """``$MIOFIND_DB`` (a SQLAlchemy URL or a bare file path), else ``$MIOPEN_USER_DB_PATH``'s
    ``miofind-finddb.sqlite`` (``env.user_db_url``), else the per-user SQLite file (its directory is made
    by the first writable open, not here)."""
    from .. import env as _env

    try:
        url = _env.user_db_url()
    except ValueError as e:
        raise FindDBError(str(e)) from None
    if url:
        try:
            return normalize_url(url)
        except ValueError as e:
            raise FindDBError(f"MIOFIND_DB: {e}") from None
    return f"sqlite:///{Path(platformdirs.user_data_dir('miofind')) / 'finddb.sqlite'}"


def sqlite_file(url: str) -> Path | None:
    """The SQLite file a FindDB URL or path names (absolute), or None for other databases and in-memory
    SQLite; opens nothing. ValueError for an invalid URL."""
    try:
        return _sqlite_path(sa.make_url(normalize_url(url)))
    except sa.exc.ArgumentError as e:
        raise ValueError(f"FindDB URL {url!r} is not a valid SQLAlchemy URL ({e})") from None


def _in_wal_mode(path: Path) -> bool:
    # the header's file format write/read version bytes (offsets 18, 19) are 2 in WAL mode
    try:
        with open(path, "rb") as fh:
            head = fh.read(20)
    except OSError:
        return False
    return len(head) == 20 and head[:16] == b"SQLite format 3\x00" and head[18] == 2


def readonly_sqlite_query(path: Path, *, immutable: bool = False) -> dict[str, str]:
    """The URI parameters (``mode=ro`` and, where needed, ``immutable=1``) of a SQLite open that writes
    nothing at all: not the file, and no -wal/-shm file beside it, also in a read-only directory.

    ``immutable=1`` is taken when the caller knows the file cannot change (the shipped system DBs), and
    for a file in WAL mode that has no -wal file: there ``mode=ro`` alone would create -wal and -shm
    files and leave them behind. No -wal file means no writer has the file open (a writer's connection
    keeps it, and its clean close checkpoints and deletes it), so every record is in the main file,
    which is read as it is when opened; a writer starting meanwhile does not touch the main file before
    it checkpoints. A rollback-journal file, or a WAL file with a live writer, is opened ``mode=ro``:
    shared locks, and the -wal/-shm files the writer made."""
    q = {"mode": "ro"}
    if immutable or (_in_wal_mode(path) and not os.path.lexists(f"{path}-wal")):
        q["immutable"] = "1"
    return q


def _sqlite_uri(path: Path, query: dict[str, str]) -> str:
    return f"file:{urllib.parse.quote(str(path))}?{urllib.parse.urlencode(query)}"


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


def _sqlite_problem(path: Path, query: dict[str, str]) -> str | None:
    """Why this SQLite file is unusable (corrupt, not a database), or None if it passes quick_check;
    opened read-only with the URI parameters ``query``."""
    try:
        con = sqlite3.connect(_sqlite_uri(path, query), uri=True, timeout=_BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error:
        return None  # cannot even open (permissions...): the engine reports it properly
    try:
        rows = con.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as e:
        # only "file is not a database" and "database disk image is malformed" are damage; a file that
        # cannot be opened, locked or written here (a read-only directory) is not, and stays in place
        return str(e) if _is_corruption(e) else None
    finally:
        con.close()
    if [tuple(r) for r in rows] != [("ok",)]:
        return "PRAGMA quick_check: " + "; ".join(str(r[0]) for r in rows[:3])
    return None


def _is_corruption(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    msg = str(e).lower()
    return "not a database" in msg or "malformed" in msg or "corrupt" in msg


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


def _not_writable(path: Path) -> str:
    """Why this process cannot write the SQLite file ``path`` (it, or its directory, where SQLite makes
    its -wal/-shm/-journal files), or "" when it can."""
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return f"its directory {path.parent} is not writable"
    if not os.access(path, os.W_OK):
        return "the file is not writable"
    return ""


def _make_parent(path: Path) -> None:
    """Make the directory of a new SQLite file, or FindDBError saying why it cannot be made there."""
    d = path.parent
    try:
        d.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((a for a in (d, *d.parents) if os.path.lexists(a) and not a.is_dir()), d)
        raise FindDBError(f"FindDB {path} cannot be created: {blocker} is a file, not a directory") from None
    except OSError as e:
        raise FindDBError(f"FindDB {path} cannot be created: cannot make the directory {d} ({e.strerror})") from None
    if not os.access(d, os.W_OK | os.X_OK):
        raise FindDBError(f"FindDB {path} cannot be created: the directory {d} is not writable")


def _check_readable_wal(path: Path, query: dict[str, str]) -> None:
    """A WAL file whose -wal file holds records, opened ``mode=ro`` from a directory this process cannot
    write: SQLite needs a -shm file beside it to read the log and cannot make one. Say so instead of
    SQLite's "unable to open database file"."""
    if "immutable" in query or not _in_wal_mode(path) or os.path.lexists(f"{path}-shm"):
        return
    if os.path.lexists(f"{path}-wal") and not os.access(path.parent, os.W_OK | os.X_OK):
        raise FindDBError(f"FindDB {path} cannot be read from the read-only directory {path.parent}: its "
                          f"write-ahead log {path.name}-wal holds records that SQLite reads only through a "
                          f"{path.name}-shm file it cannot create there; open it once where the directory "
                          "is writable (which folds the log into the file)")


# -- the database ----------------------------------------------------------------------------------

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
        self._readonly_why = ""  # why a FindDB opened writable is read-only after all
        self._closed = False
        try:
            parsed = sa.make_url(self._url)
        except (sa.exc.ArgumentError, ValueError) as e:
            raise FindDBError(f"FindDB URL {_show(self._url)} is not a valid SQLAlchemy URL ({e})") from None
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

    def _schema_version(self, con: sa.Connection) -> int:
        """The schema version after checking that this database is a FindDB miofind can use: FindDBError
        for another application's SQLite file (tables, but no miofind ``meta`` table), a ``meta`` table
        that is not ours, and a table of ours without its columns. 0 for an empty database."""
        insp = sa.inspect(con)
        tables = set(insp.get_table_names())
        if "meta" not in tables:
            ours = tables & {t.name for t in _md.sorted_tables}
            if ours or (self._sqlite and tables):  # another server database may hold other tables beside ours
                listed = ", ".join(sorted(tables)[:6]) + (", ..." if len(tables) > 6 else "")
                raise FindDBError(f"FindDB {self._where} is not a FindDB: it holds the tables {listed} but no "
                                  "miofind 'meta' table (another application's database?); miofind leaves it "
                                  "untouched: give another file (--db, MIOFIND_DB)")
            return 0
        cols = {c["name"] for c in insp.get_columns("meta")}
        if not {"key", "value"} <= cols:
            raise FindDBError(f"FindDB {self._where} is not a FindDB: its 'meta' table has the columns "
                              f"{', '.join(sorted(cols))}, not miofind's key and value; miofind leaves it untouched")
        raw = con.execute(sa.select(_meta.c.value).where(_meta.c.key == "schema_version")).scalar()
        if raw is None:
            raise FindDBError(f"FindDB {self._where} is not a FindDB: its 'meta' table has no schema_version; "
                              "miofind leaves it untouched")
        v = self._read_version(con)
        self._check_version(v)
        # older versions are the migrations' business, except where a read-only handle reads them as is
        if v == SCHEMA_VERSION or (self.readonly and _OLDEST_READABLE <= v):
            for t in _md.sorted_tables:
                if _TABLE_SINCE.get(t.name, 0) > v:
                    continue
                if t.name not in tables:
                    raise FindDBError(f"FindDB {self._where} (schema version {v}) lacks the table {t.name}; "
                                      "not a FindDB this miofind can use")
                have = {c["name"] for c in insp.get_columns(t.name)}
                missing = [c.name for c in t.c if c.name not in have and _COLUMN_SINCE.get((t.name, c.name), 0) <= v]
                if missing:
                    raise FindDBError(f"FindDB {self._where} (schema version {v}): table {t.name} lacks the "
                                      f"column(s) {', '.join(missing)}; not a FindDB this miofind can use")
        return v

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
            _writes[0] += 1
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
        out = []
        for row in rows:
            try:
                out.append(_from_row(row, cls))
            except (ValueError, TypeError) as e:
                warnings.warn(f"FindDB {self._where}: skipping invalid row id={row['id']}: {e}",
                              FindDBWarning, stacklevel=3)
        return out

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
        latest: dict[tuple, Any] = {}
        for r in items:
            if not isinstance(r, cls):
                raise FindDBError(f"FindDB {self._where}: expected {cls.__name__} objects, got {type(r).__name__}")
            row = _to_row(r)
            latest[tuple(row[k] for k in keys)] = row  # the last of duplicates wins
        rows = list(latest.values())
        if not rows:
            return 0
        dialect = self._engine.dialect.name
        data = _data_cols(table)

        def upsert(con: sa.Connection) -> None:
            if dialect in ("sqlite", "postgresql"):
                ins = dialect_insert(dialect)(table)
                stmt = ins.on_conflict_do_update(index_elements=list(keys),
                                                 set_={c: ins.excluded[c] for c in data if c not in keys})
                con.execute(stmt, rows)
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
        rows: dict[tuple, dict[str, Any]] = {}
        solvers = set(solver_ids)
        for f in failures:
            if not isinstance(f, FindFailure):
                raise FindDBError(f"FindDB {self._where}: expected FindFailure objects, got {type(f).__name__}")
            if (f.device, f.problem_key) != (device, problem_key):
                raise FindDBError(f"FindDB {self._where}: find failure of {f.device} {f.problem_key} stored under "
                                  f"{device} {problem_key}")
            row = _to_row(f)
            rows[(f.solver_id, row["config"])] = row   # the last of duplicates wins
            solvers.add(f.solver_id)
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

    def find_failures(self, device: str, problem_key: str) -> list[FindFailure]:
        """The recorded find failures of one problem on one device, by solver and config."""
        if not self._has(_find_failures):
            return []
        t = _find_failures.c
        q = (sa.select(*_raw_cols(_find_failures)).where(t.device == device, t.problem_key == problem_key)
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
