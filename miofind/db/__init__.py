"""Persistent storage: the FindDB of measured solver results.

``FindDB`` (SQLAlchemy) is imported on first use: a process answered from its SQLite FindDBs reads
them through ``miofind.db.fastread`` and never imports SQLAlchemy.
"""

from .base import FindDBError, FindDBWarning, Record, default_db_url

__all__ = ["FindDB", "Record", "FindDBError", "FindDBWarning", "default_db_url"]


def __getattr__(name):
    if name == "FindDB":
        from .findb import FindDB
        return FindDB
    raise AttributeError(f"module 'miofind.db' has no attribute {name!r}")
