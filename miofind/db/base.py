"""What every FindDB reader shares, without SQLAlchemy: the stored records and their row decoding, the
schema's versions and names and its check, FindDB URLs, and the checks of a SQLite file.

``miofind.db.findb`` (the SQLAlchemy FindDB) and ``miofind.db.fastread`` (DB hits through the stdlib
``sqlite3``) both build on it, so that a process answered from its FindDBs need not import SQLAlchemy.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import operator
import os
import sqlite3
import time
import urllib.parse
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

SCHEMA_VERSION = 4
# The oldest schema a read-only handle reads as is: each later version only added tables, which read
# as empty (a read-only open must not migrate; the shipped system DB is version 4).
OLDEST_READABLE = 2
BUSY_TIMEOUT_MS = 30_000
BUILDS = ("specialized", "generic")
_writes = [0]   # writes made by this process (any FindDB): caches of DB answers compare it


def write_generation() -> int:
    """A number that changes whenever this process writes to any FindDB (an in-process cache of
    answers read from FindDBs is stale once it changed)."""
    return _writes[0]


def count_write() -> None:
    """Note a write to a FindDB by this process (``write_generation`` changes)."""
    _writes[0] += 1


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


# The schema version that added each table after version 1 (a read-only handle on an older schema
# reads a newer table as empty).
TABLE_SINCE = {"find_failures": 3}
# The schema version that added a column to an existing table (read-only handles on older schemas
# read it as its default).
COLUMN_SINCE = {("find_records", "build"): 4}
# Every table's columns, as miofind.db.findb's SQLAlchemy schema declares them (a test keeps the two
# equal): the schema check of both readers.
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "find_records": ("id", "device", "device_name", "problem_key", "solver_id", "algorithm", "time_ms", "time_q20_ms",
                     "time_q80_ms", "workspace_bytes", "config", "verified", "max_error", "package_version",
                     "kernel_hash", "driver_version", "cuda_version", "cupy_version", "created_at", "build"),
    "perf_records": ("id", "device", "problem_key", "solver_id", "config", "time_ms", "default_time_ms", "strategy",
                     "configs_tried", "tune_seconds", "device_name", "package_version", "kernel_hash",
                     "cuda_version", "created_at"),
    "tune_failures": ("id", "device", "problem_key", "solver_id", "config", "stage", "reason", "kernel_hash",
                      "created_at"),
    "find_failures": ("id", "device", "problem_key", "solver_id", "config", "stage", "reason", "kernel_hash",
                      "cuda_version", "package_version", "created_at"),
    "tune_jobs": ("id", "problem_key", "options", "status", "worker", "device", "lease_until", "attempts", "error",
                  "created_at", "updated_at"),
}
# the table each stored dataclass lives in
TABLE_OF: dict[type, str] = {Record: "find_records", PerfRecord: "perf_records", TuneFailure: "tune_failures",
                             FindFailure: "find_failures"}


def columns(table: str, version: int = SCHEMA_VERSION) -> tuple[str, ...]:
    """The columns of ``table`` in a database of schema ``version``."""
    return tuple(c for c in TABLE_COLUMNS[table] if COLUMN_SINCE.get((table, c), 0) <= version)


def check_schema(where: str, tables: set[str], table_columns: Callable[[str], set[str]],
                 schema_version: Callable[[], Any], *, readonly: bool, sqlite: bool = True,
                 current: int = SCHEMA_VERSION) -> int:
    """The schema version of a database after checking that it is a FindDB miofind can use:
    FindDBError naming ``where`` for another application's SQLite file (tables, but no miofind ``meta``
    table), a ``meta`` table that is not ours, a schema newer than ``current``, and a table of ours
    without its columns. 0 for an empty database. ``tables`` are the database's tables,
    ``table_columns(name)`` a table's columns, ``schema_version()`` the meta table's raw value (None if
    absent); ``readonly`` handles read schemas from ``OLDEST_READABLE`` on as they are."""
    if "meta" not in tables:
        ours = tables & set(TABLE_COLUMNS)
        if ours or (sqlite and tables):  # another server database may hold other tables beside ours
            listed = ", ".join(sorted(tables)[:6]) + (", ..." if len(tables) > 6 else "")
            raise FindDBError(f"FindDB {where} is not a FindDB: it holds the tables {listed} but no "
                              "miofind 'meta' table (another application's database?); miofind leaves it "
                              "untouched: give another file (--db, MIOFIND_DB)")
        return 0
    cols = table_columns("meta")
    if not {"key", "value"} <= cols:
        raise FindDBError(f"FindDB {where} is not a FindDB: its 'meta' table has the columns "
                          f"{', '.join(sorted(cols))}, not miofind's key and value; miofind leaves it untouched")
    raw = schema_version()
    if raw is None:
        raise FindDBError(f"FindDB {where} is not a FindDB: its 'meta' table has no schema_version; "
                          "miofind leaves it untouched")
    v = parse_version(where, raw)
    if v > current:
        raise FindDBError(f"FindDB {where} has schema version {v}, newer than the version "
                          f"{current} this miofind knows; upgrade miofind or use another database "
                          "(MIOFIND_DB)")
    # older versions are the migrations' business, except where a read-only handle reads them as is
    if v == current or (readonly and OLDEST_READABLE <= v):
        for name, cols in sorted(TABLE_COLUMNS.items()):
            if TABLE_SINCE.get(name, 0) > v:
                continue
            if name not in tables:
                raise FindDBError(f"FindDB {where} (schema version {v}) lacks the table {name}; "
                                  "not a FindDB this miofind can use")
            have = table_columns(name)
            missing = [c for c in cols if c not in have and COLUMN_SINCE.get((name, c), 0) <= v]
            if missing:
                raise FindDBError(f"FindDB {where} (schema version {v}): table {name} lacks the "
                                  f"column(s) {', '.join(missing)}; not a FindDB this miofind can use")
    return v


def parse_version(where: str, raw: Any) -> int:
    """The meta table's schema_version value as an integer (0 when absent); FindDBError if it is not one."""
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        raise FindDBError(f"FindDB {where}: schema_version {raw!r} is not an integer") from None


# -- decoding rows ---------------------------------------------------------------------------------

def from_row(row, cls: type | None = None) -> Any:
    """Validate a raw row (a mapping from column names to the values as the database gave them) into a
    ``cls`` (default Record); ValueError/TypeError on anything malformed."""
    cls = cls or Record
    names = _FIELDS.get(cls) or _FIELDS.setdefault(cls, tuple(f.name for f in dataclasses.fields(cls)))
    vals = {name: row[name] for name in names if name in row}   # a newer column may be absent
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


_FIELDS: dict[type, tuple[str, ...]] = {}


def decode_rows(rows: Iterable, cls: type, where: str, *, stacklevel: int) -> list:
    """``from_row`` of every row (each with its ``id``), skipping an invalid one with a FindDBWarning
    naming ``where`` and the row, at ``stacklevel`` as seen from the caller."""
    out = []
    for row in rows:
        try:
            out.append(from_row(row, cls))
        except (ValueError, TypeError) as e:
            warnings.warn(f"FindDB {where}: skipping invalid row id={row['id']}: {e}", FindDBWarning,
                          stacklevel=stacklevel + 1)
    return out


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
    if "file:" not in url.lower() and "%" not in url:
        return url   # names no URI filename: as given, without importing SQLAlchemy
    import sqlalchemy as sa

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
    import platformdirs

    return f"sqlite:///{Path(platformdirs.user_data_dir('miofind')) / 'finddb.sqlite'}"


def in_wal_mode(path: Path) -> bool:
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
    if immutable or (in_wal_mode(path) and not os.path.lexists(f"{path}-wal")):
        q["immutable"] = "1"
    return q


def sqlite_uri(path: Path, query: dict[str, str]) -> str:
    return f"file:{urllib.parse.quote(str(path))}?{urllib.parse.urlencode(query)}"


def sqlite_problem(path: Path, query: dict[str, str]) -> str | None:
    """Why this SQLite file is unusable (corrupt, not a database), or None if it passes quick_check;
    opened read-only with the URI parameters ``query``."""
    try:
        con = sqlite3.connect(sqlite_uri(path, query), uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error:
        return None  # cannot even open (permissions...): the engine reports it properly
    try:
        rows = con.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as e:
        # only "file is not a database" and "database disk image is malformed" are damage; a file that
        # cannot be opened, locked or written here (a read-only directory) is not, and stays in place
        return str(e) if is_corruption(e) else None
    finally:
        con.close()
    if [tuple(r) for r in rows] != [("ok",)]:
        return "PRAGMA quick_check: " + "; ".join(str(r[0]) for r in rows[:3])
    return None


def is_corruption(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    msg = str(e).lower()
    return "not a database" in msg or "malformed" in msg or "corrupt" in msg


def not_writable(path: Path) -> str:
    """Why this process cannot write the SQLite file ``path`` (it, or its directory, where SQLite makes
    its -wal/-shm/-journal files), or "" when it can."""
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return f"its directory {path.parent} is not writable"
    if not os.access(path, os.W_OK):
        return "the file is not writable"
    return ""


def check_readable_wal(path: Path, query: dict[str, str]) -> None:
    """A WAL file whose -wal file holds records, opened ``mode=ro`` from a directory this process cannot
    write: SQLite needs a -shm file beside it to read the log and cannot make one. Say so instead of
    SQLite's "unable to open database file"."""
    if "immutable" in query or not in_wal_mode(path) or os.path.lexists(f"{path}-shm"):
        return
    if os.path.lexists(f"{path}-wal") and not os.access(path.parent, os.W_OK | os.X_OK):
        raise FindDBError(f"FindDB {path} cannot be read from the read-only directory {path.parent}: its "
                          f"write-ahead log {path.name}-wal holds records that SQLite reads only through a "
                          f"{path.name}-shm file it cannot create there; open it once where the directory "
                          "is writable (which folds the log into the file)")


def make_parent(path: Path) -> None:
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


def latest_rows(where: str, cls: type, items: Iterable[Any], row_of: Callable[[Any], Any],
                key_of: Callable[[Any, Any], tuple]) -> list:
    """The rows ``row_of(item)`` an upsert of ``items`` writes, one per identity ``key_of(item, row)`` (the last of
    duplicates wins), in first-seen order; FindDBError naming ``where`` for an item that is no ``cls``."""
    latest: dict[tuple, Any] = {}
    for r in items:
        if not isinstance(r, cls):
            raise FindDBError(f"FindDB {where}: expected {cls.__name__} objects, got {type(r).__name__}")
        row = row_of(r)
        latest[key_of(r, row)] = row
    return list(latest.values())


def collect_find_failures(where: str, device: str, problem_key: str, solver_ids: Iterable[str],
                          failures: Iterable[Any], row_of: Callable[[Any], Any]) -> tuple[dict, set[str]]:
    """What a ``store_find_failures`` call writes: (the rows ``row_of(failure)`` by (solver id, config text),
    the last of duplicates kept; every solver concerned: ``solver_ids`` and the failures' own). FindDBError
    naming ``where`` for an item that is no FindFailure, or one of another device or problem."""
    rows: dict[tuple, Any] = {}
    solvers = set(solver_ids)
    for f in failures:
        if not isinstance(f, FindFailure):
            raise FindDBError(f"FindDB {where}: expected FindFailure objects, got {type(f).__name__}")
        if (f.device, f.problem_key) != (device, problem_key):
            raise FindDBError(f"FindDB {where}: find failure of {f.device} {f.problem_key} stored under "
                              f"{device} {problem_key}")
        rows[(f.solver_id, config_key(f.config) or "null")] = row_of(f)
        solvers.add(f.solver_id)
    return rows, solvers
