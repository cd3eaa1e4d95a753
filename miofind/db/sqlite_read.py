"""Reading a SQLite FindDB with the standard library alone, for the path a find takes on a DB hit.

Importing SQLAlchemy costs most of a second on some file systems, more than a whole find answered
from the database. The lookups a find needs (a problem's records, a solver's tuned configs, the
problem keys for predictions) are three SELECTs: ``SqliteReader`` runs them through ``sqlite3``,
opened so that nothing is written (``readonly_sqlite_query``'s rules), and validates every row
exactly as ``FindDB`` does (an invalid row is skipped with a FindDBWarning). Everything else, and
every write, goes through ``FindDB`` (``handles.UserDB`` opens it on first need).
"""

from __future__ import annotations

import sqlite3
import threading
import urllib.parse
import warnings
from pathlib import Path

from .records import FindDBError, FindDBWarning, PerfRecord, Record, from_values

_RECORD_COLS = ("device", "device_name", "problem_key", "solver_id", "algorithm", "time_ms", "time_q20_ms",
                "time_q80_ms", "workspace_bytes", "config", "verified", "max_error", "package_version",
                "kernel_hash", "driver_version", "cuda_version", "cupy_version", "created_at")
_PERF_COLS = ("device", "problem_key", "solver_id", "config", "time_ms", "default_time_ms", "strategy",
              "configs_tried", "tune_seconds", "device_name", "package_version", "kernel_hash", "cuda_version",
              "created_at")


def readonly_query(path: Path, immutable: bool) -> dict[str, str]:
    """SQLite URI parameters for a read that writes nothing (no file, no -wal/-shm)."""
    q = {"mode": "ro"}
    if immutable:
        q["immutable"] = "1"
        return q
    try:
        with open(path, "rb") as fh:
            head = fh.read(20)
    except OSError:
        return q
    # a WAL-mode file (header bytes 18-19 are 2) with no -wal beside it has no writer: read it as is
    if len(head) == 20 and head[:16] == b"SQLite format 3\x00" and head[18] == 2 and not Path(f"{path}-wal").exists():
        q["immutable"] = "1"
    return q


class SqliteReader:
    """Read-only lookups in a SQLite FindDB file through ``sqlite3``."""

    def __init__(self, path: Path | str, *, immutable: bool = False) -> None:
        self.path = Path(path)
        self._immutable = immutable
        self._where = str(self.path)
        q = urllib.parse.urlencode(readonly_query(self.path, immutable))
        try:
            self._con = sqlite3.connect(f"file:{urllib.parse.quote(str(self.path))}?{q}", uri=True,
                                        check_same_thread=False, timeout=30)
            self._con.execute("PRAGMA query_only=1")
        except sqlite3.Error as e:
            raise FindDBError(f"FindDB {self._where}: cannot open read-only: {e}") from None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"sqlite:///{self.path}"

    def _rows(self, sql: str, args: tuple) -> list[tuple]:
        try:
            with self._lock:
                return self._con.execute(sql, args).fetchall()
        except sqlite3.Error as e:
            raise FindDBError(f"FindDB {self._where}: cannot read: {e}") from None

    def _valid(self, cls, cols, rows) -> list:
        out = []
        for row in rows:
            try:
                out.append(from_values(cls, dict(zip(cols, row[1:]))))
            except (ValueError, TypeError) as e:
                warnings.warn(f"FindDB {self._where}: skipping invalid row id={row[0]}: {e}", FindDBWarning,
                              stacklevel=3)
        return out

    def lookup(self, device: str | None, problem_key: str) -> list[Record]:
        """As ``FindDB.lookup``: one problem's valid records (of one device if given), fastest first."""
        sql = f"SELECT id, {', '.join(_RECORD_COLS)} FROM find_records WHERE problem_key = ?"
        args: tuple = (problem_key,)
        if device is not None:
            sql += " AND device = ?"
            args += (device,)
        sql += " ORDER BY time_ms, solver_id"
        return self._valid(Record, _RECORD_COLS, self._rows(sql, args))

    def lookup_perf(self, device: str | None, problem_key: str, solver_id: str | None = None) -> list[PerfRecord]:
        """As ``FindDB.lookup_perf``: tuned configs of one problem (one solver if given), newest first."""
        sql = f"SELECT id, {', '.join(_PERF_COLS)} FROM perf_records WHERE problem_key = ?"
        args: tuple = (problem_key,)
        if device is not None:
            sql += " AND device = ?"
            args += (device,)
        if solver_id is not None:
            sql += " AND solver_id = ?"
            args += (solver_id,)
        sql += " ORDER BY created_at DESC, id DESC"
        return self._valid(PerfRecord, _PERF_COLS, self._rows(sql, args))

    def problem_keys(self, device: str | None = None, suffix: str | None = None) -> list[str]:
        """As ``FindDB.problem_keys``."""
        sql, args = "SELECT DISTINCT problem_key FROM find_records WHERE 1", ()
        if device is not None:
            sql += " AND device = ?"
            args += (device,)
        if suffix is not None:
            esc = suffix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            sql += " AND problem_key LIKE ? ESCAPE '\\'"
            args += ("%" + esc,)
        return sorted(r[0] for r in self._rows(sql, args))

    def close(self) -> None:
        with self._lock:
            self._con.close()
