"""Opening the FindDBs a process works with: the user DB (once per URL) over the system DB."""

from __future__ import annotations

import threading

from ..device import DeviceInfo, current_device
from .findb import FindDB, default_db_url, normalize_url
from .system import Overlay, open_system_db

_user_dbs: dict[str, FindDB] = {}
_lock = threading.Lock()


def open_db(db=None) -> FindDB:
    """The user FindDB: a FindDB, or a URL/path (default $MIOFIND_DB or the per-user file), opened
    once per process and URL."""
    if isinstance(db, FindDB):
        return db
    if isinstance(db, Overlay):
        return db.user
    if db is not None and not isinstance(db, str):
        raise ValueError(f"db={db!r}: expected a FindDB, a SQLAlchemy URL or a file path")
    url = normalize_url(db) if db else default_db_url()
    with _lock:
        h = _user_dbs.get(url)
        if h is None or h.closed:
            h = _user_dbs[url] = FindDB(url)
    return h


def open_dbs(db=None, dev: DeviceInfo | None = None) -> Overlay:
    """The user FindDB over the system FindDB shipped for this GPU (if any)."""
    if isinstance(db, Overlay):
        return db
    dev = dev or current_device()
    return Overlay(open_db(db), open_system_db(dev.arch, dev.sm_count))
