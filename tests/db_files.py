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


def row_counts(path) -> tuple[int, int]:
    """(find records, perf records) of the SQLite FindDB at ``path``, counted by plain SQL on an immutable
    read-only open (independent of miofind's reader; the shipped DB's counts change when it is re-tuned)."""
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return tuple(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("find_records", "perf_records"))
    finally:
        con.close()
