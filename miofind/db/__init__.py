"""Persistent storage: the FindDB of measured solver results."""

from .findb import FindDB, FindDBError, FindDBWarning, Record, default_db_url

__all__ = ["FindDB", "Record", "FindDBError", "FindDBWarning", "default_db_url"]
