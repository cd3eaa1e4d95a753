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




# -- transfer and maintenance ----------------------------------------------------------------------

def _open_ro(db_url):
    from .db import FindDB, FindDBError

    try:
        return FindDB(db_url, readonly=True)
    except FindDBError as e:
        _fail(str(e))


@db.command("export")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
@click.option("--format", "fmt", type=click.Choice(["miofind", "miopen"]), default="miofind", show_default=True,
              help="miofind: JSON Lines of every record and tuned config; miopen: MIOpen's text FindDB (one device).")
@click.option("--device", default=None, help="Only this device (e.g. sm_90-132); miopen needs it when the DB has several.")
@click.option("-o", "--output", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Write to this file (default: standard output).")
def db_export(db_url, fmt, device, out_path):
    """Write the FindDB's records to a file or standard output."""
    import io
    import os
    import sys

    from .db import FindDBError
    from .db.transfer import export_records

    h = _open_ro(db_url)
    try:
        if out_path is None:
            n = export_records(h, sys.stdout, fmt=fmt, device=device)
            sys.stdout.flush()
        else:
            buf = io.StringIO()  # write the file only once the export has succeeded
            n = export_records(h, buf, fmt=fmt, device=device)
            tmp = f"{out_path}.tmp-{os.getpid()}"
            try:
                with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                    f.write(buf.getvalue())
                os.replace(tmp, out_path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
    except (FindDBError, ValueError, OSError) as e:
        _fail(str(e))
    finally:
        h.close()
    click.echo(f"wrote {n} lines ({fmt} format){f' to {out_path}' if out_path else ''}", err=True)


@db.command("import")
@click.argument("file")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
@click.option("--format", "fmt", type=click.Choice(["miofind", "miopen"]), default=None,
              help="Default: miofind when the first line starts with '{', else miopen.")
@click.option("--device", default=None, help="miopen: the device the records belong to (required); "
              "miofind: import only this device's records.")
@click.option("--device-name", default="", help="miopen: the device's name (e.g. 'NVIDIA H100 80GB HBM3').")
def db_import(file, db_url, fmt, device, device_name):
    """Read records from FILE ('-': standard input) into the FindDB; invalid lines are skipped with reasons.

    Records from MIOpen files are stored unverified and untrusted: hints, never answers of a find.
    """
    import itertools
    import sys

    from .db import FindDBError
    from .db.transfer import import_records

    try:
        fh = sys.stdin.buffer if file == "-" else open(file, "rb")
    except OSError as e:
        _fail(f"cannot read {file}: {e.strerror or e}")
    try:
        try:
            first = fh.readline()
        except OSError as e:
            _fail(f"cannot read {file}: {e.strerror or e}")
        if fmt is None:
            fmt = "miofind" if first.lstrip(b"\xef\xbb\xbf \t").startswith(b"{") else "miopen"
        if fmt == "miopen" and not device:
            _fail(f"{file} is a MIOpen FindDB file, which names no device: give the device its records belong "
                  "to with --device (e.g. --device sm_90-132)")
        h = _open(db_url)
        try:
            rep = import_records(h, itertools.chain([first] if first else [], fh), fmt=fmt, device=device,
                                 device_name=device_name)
        except (FindDBError, ValueError, OSError) as e:
            _fail(str(e))
        finally:
            h.close()
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    click.echo(f"imported {rep.find} find records and {rep.perf} tuned configs ({fmt} format) into "
               f"{h.path or h.url}; skipped {len(rep.skipped)}")
    for why in rep.skipped[:20]:
        click.echo(f"  skipped {why}")
    if len(rep.skipped) > 20:
        click.echo(f"  ... and {len(rep.skipped) - 20} more")


@db.command("merge")
@click.argument("sources", nargs=-1, required=True)
@click.option("--db", "db_url", default=None, help="The destination FindDB (default: $MIOFIND_DB or the user DB).")
def db_merge(sources, db_url):
    """Merge the records of the SOURCES (URLs or files, opened read-only) into the FindDB, keeping per
    problem and solver the verified, then the faster record."""
    from .db import FindDBError
    from .db.transfer import merge_into

    handles = [_open_ro(s) for s in sources]
    h = _open(db_url)
    try:
        rep = merge_into(h, handles)
    except (FindDBError, ValueError) as e:
        _fail(str(e))
    finally:
        for x in handles + [h]:
            x.close()
    t = Table(title=f"merged {len(sources)} source(s) into {h.path or h.url}", title_justify="left")
    for col in ("what", "considered", "written"):
        t.add_column(col, justify="right" if col != "what" else "left")
    t.add_row("find records", str(rep.find_considered), str(rep.find_written))
    t.add_row("tuned configs", str(rep.perf_considered), str(rep.perf_written))
    console.print(t)


def _integrity_check(path) -> list[str]:
    """PRAGMA integrity_check of a SQLite file, read-only: ["ok"] when sound."""
    import sqlite3
    import urllib.parse

    con = sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True, timeout=30)
    try:
        return [str(r[0]) for r in con.execute("PRAGMA integrity_check").fetchall()]
    finally:
        con.close()


@db.command("verify")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
def db_verify(db_url):
    """Check every record (key, solver, applicability, config, workspace size) without a GPU, and a
    SQLite file's integrity. Exit status 1 if anything is wrong."""
    import sqlite3

    from .db import FindDBError
    from .db.maintenance import verify_db

    h = _open_ro(db_url)
    bad = False
    try:
        if h.path is not None:
            try:
                res = _integrity_check(h.path)
            except sqlite3.Error as e:
                res = [str(e)]
            if res == ["ok"]:
                click.echo(f"integrity_check of {h.path}: ok")
            else:
                bad = True
                click.echo(f"integrity_check of {h.path}: FAILED: {'; '.join(res[:10])}")
        problems = verify_db(h)
        st = h.stats()
    except FindDBError as e:
        _fail(str(e))
    finally:
        h.close()
    if problems:
        t = Table(title=f"{len(problems)} problem(s) in {h.path or h.url}", title_justify="left")
        for col in ("kind", "device", "problem key", "solver", "check", "problem"):
            t.add_column(col)
        for p in problems:
            t.add_row(p.kind, p.device, p.key, p.solver_id, p.check, p.message)
        console.print(t)
    click.echo(f"checked {st['records']} find records and {st['perf_records']} tuned configs: "
               f"{len(problems)} problem(s)")
    if problems or bad:
        raise SystemExit(1)


@db.command("prune")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@click.option("--keep-stale", is_flag=True, help="Keep records of other miofind versions or kernel sources.")
def db_prune(db_url, dry_run, keep_stale):
    """Delete invalid records (what `db verify` reports) and records this miofind no longer trusts."""
    from .db import FindDBError
    from .db.maintenance import prune_db

    h = _open_ro(db_url) if dry_run else _open(db_url)
    try:
        rep = prune_db(h, dry_run=dry_run, stale=not keep_stale)
    except FindDBError as e:
        _fail(str(e))
    finally:
        h.close()
    verb = "would delete" if dry_run else "deleted"
    click.echo(f"FindDB {h.path or h.url}: {verb} {rep.total} row(s)")
    if not rep.counts:
        return
    t = Table(title=f"{verb} (dry run)" if dry_run else verb, title_justify="left")
    t.add_column("what")
    t.add_column("rows", justify="right")
    for k, v in sorted(rep.counts.items()):
        t.add_row(k, str(v))
    console.print(t)
