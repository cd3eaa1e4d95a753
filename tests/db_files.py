"""Shared by the tests that need a FindDB file of an older schema, made from a current one."""

from __future__ import annotations

import sqlite3


def downgrade_to_schema_2(path) -> None:
    """Make the SQLite FindDB at ``path`` look like a schema-2 file: no find_failures table, version 2."""
    con = sqlite3.connect(path)
    con.execute("DROP TABLE find_failures")
    con.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    con.commit()
    con.close()
