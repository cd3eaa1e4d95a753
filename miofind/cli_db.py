"""``miofind db``: the FindDB's location, contents and maintenance."""

from __future__ import annotations

import json

import click
from rich.table import Table

from .cli_common import console, fail as _fail, fmt_bytes as _fmt_bytes


@click.group()
def db():
    """The FindDB: where it is, what it holds."""


def _open(db_url):
    from .db import FindDB, FindDBError

    try:
        return FindDB(db_url)
    except FindDBError as e:
        _fail(str(e))


@db.command("path")
@click.option("--db", "db_url", default=None)
def db_path(db_url):
    """Print the FindDB's file path (or URL)."""
    h = _open(db_url)
    click.echo(h.path or h.url)


@db.command("stats")
@click.option("--db", "db_url", default=None)
def db_stats(db_url):
    """Record counts per solver and device."""
    h = _open(db_url)
    st = h.stats()
    t = Table(title=f"FindDB {h.path or h.url}", title_justify="left")
    t.add_column("what")
    t.add_column("value", justify="right")
    for k, v in st.items():
        if isinstance(v, dict):
            for kk, vv in v.items():
                t.add_row(f"{k}: {kk}", str(vv))
        else:
            t.add_row(k, str(v))
    console.print(t)


@db.command("show")
@click.option("--db", "db_url", default=None)
@click.option("--device", default=None, help="Only this device (e.g. sm_90-132).")
@click.option("--key", "key_like", default=None, help="Only keys matching this SQL LIKE pattern.")
@click.option("--limit", type=int, default=50)
def db_show(db_url, device, key_like, limit):
    """List stored records, fastest first per problem."""
    h = _open(db_url)
    t = Table(title=f"FindDB {h.path or h.url}", title_justify="left")
    for col in ("device", "problem key", "solver", "time ms", "workspace", "verified", "config", "version"):
        t.add_column(col)
    for r in h.iter_records(device=device, problem_key_like=key_like, limit=limit):
        t.add_row(r.device, r.problem_key, r.solver_id, f"{r.time_ms:.4f}", _fmt_bytes(r.workspace_bytes),
                  "yes" if r.verified else "no", json.dumps(r.config) if r.config else "", r.package_version)
    console.print(t)


