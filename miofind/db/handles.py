"""Opening the FindDBs a process works with: the user DB (once per URL) over the system DB."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..device import DeviceInfo, current_device
from .base import default_db_url, normalize_url
from .system import Overlay, open_system_db

if TYPE_CHECKING:
    from .findb import FindDB

_user_dbs: dict[tuple[str, bool], "FindDB"] = {}
_lock = threading.Lock()


def open_db(db=None, *, readonly: bool = False) -> FindDB | None:
    """The user FindDB: a FindDB, or a URL/path (default $MIOFIND_DB or the per-user file), opened
    once per process, URL and mode. ``readonly`` opens it so that nothing is written (no file, no
    -wal/-shm file), and gives None when its SQLite file does not exist."""
    from .findb import FindDB, sqlite_file

    if isinstance(db, FindDB):
        return db
    if isinstance(db, Overlay):
        return db.user
    if db is not None and not isinstance(db, str):
        raise ValueError(f"db={db!r}: expected a FindDB, a SQLAlchemy URL or a file path")
    url = normalize_url(db) if db else default_db_url()
    with _lock:
        writable = _user_dbs.get((url, False))
        if readonly and writable is not None and not writable.closed:
            return writable  # this process already writes it: read through the same handle
        h = _user_dbs.get((url, readonly))
        if h is None or h.closed:
            if readonly:
                path = sqlite_file(url)
                if path is not None and not path.exists():
                    return None
            h = _user_dbs[(url, readonly)] = FindDB(url, readonly=readonly)
    return h


def opened(url: str) -> FindDB | None:
    """The writable FindDB this process opened at ``url`` (normalised), if it is open."""
    h = _user_dbs.get((url, False))
    return h if h is not None and not h.closed else None


_preload: threading.Thread | None = None


def preload_store() -> None:
    """Import the FindDB layer (SQLAlchemy: 0.2-0.8 s in a new process) in a background thread, once per
    process, so that a find that stores after benchmarking finds it imported (Python imports wait for
    each other: ``open_dbs`` then waits for the rest of it, never imports it twice). Never raises."""
    global _preload
    import sys

    if _preload is not None or "miofind.db.findb" in sys.modules:
        return

    def load() -> None:
        try:
            from . import findb  # noqa: F401
        except Exception:
            pass   # the import on the main thread meets it again and reports it
    with _lock:
        if _preload is None:
            _preload = threading.Thread(target=load, name="miofind-db-import", daemon=True)
            _preload.start()


def open_dbs(db=None, dev: DeviceInfo | None = None, *, readonly: bool = False) -> Overlay:
    """The user FindDB over the system FindDB shipped for this GPU (if any); ``readonly`` as in
    ``open_db`` (immediate mode: nothing written, a missing user DB is no layer)."""
    if isinstance(db, Overlay):
        return db
    dev = dev or current_device()
    return Overlay(open_db(db, readonly=readonly), open_system_db(dev.arch, dev.sm_count))
