"""``miofind db``: the FindDB's location, contents and maintenance."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import click
from rich.table import Table

from .cli_common import console, fail as _fail, fmt_bytes as _fmt_bytes


@click.group()
def db():
    """The FindDBs: where they are, what they hold, upkeep. Commands that only read open every database
    read-only and change nothing, not even the file's journal mode."""


DB_HELP = "FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB)."
DEVICE_HELP = ("The device whose shipped system FindDB to use, no GPU needed: sm_<cc>-<SMs>[-<name>], e.g. sm_90-132 "
               "(default: the current GPU).")
SYSTEM_HELP = "Only the system FindDB shipped for --device (or the current GPU), read-only."


def open_writable(db_url):
    from .db import FindDB, FindDBError

    try:
        return FindDB(db_url)
    except FindDBError as e:
        _fail(str(e))


def _open_ro(db_url, *, immutable=False):
    from .db import FindDB, FindDBError

    try:
        return FindDB(db_url, readonly=True, immutable=immutable)
    except FindDBError as e:
        _fail(str(e))


@dataclass
class _Layer:
    """One FindDB layer as the read-only commands see it; ``db`` is None where the file does not exist yet."""

    name: str     # "user" or "system"
    where: str    # the file, or the URL with its password hidden
    db: object = None

    def close(self):
        if self.db is not None:
            self.db.close()


def _user_where(db_url):
    """(URL, file or None, where to print) of the user DB, without opening it."""
    import sqlalchemy as sa

    from .db.findb import normalize_url, default_db_url, sqlite_file

    url = normalize_url(db_url) if db_url else default_db_url()
    try:
        path = sqlite_file(url)
    except ValueError as e:
        _fail(str(e))
    return url, path, str(path) if path else sa.make_url(url).render_as_string(hide_password=True)


def _user_layer(db_url):
    url, path, where = _user_where(db_url)
    if path is not None and not path.exists():
        return _Layer("user", where)  # a read-only command does not create it
    return _Layer("user", where, _open_ro(url))


def _parse_device(spec):
    from .device import device_from_string

    try:
        return device_from_string(spec)
    except ValueError as e:
        _fail(str(e))


def _system_file(device):
    """(the system DB file for --device or the current GPU, None and why there is none)."""
    from .db.system import system_db_files, system_db_override, system_db_path
    from .device import NoGPUError, current_device

    overridden, path = system_db_override()
    if overridden:
        return (path, None) if path is not None else (None, "MIOFIND_SYSTEM_DB=none")
    if device is not None:
        dev = _parse_device(device)
    else:
        try:
            dev = current_device()
        except NoGPUError:
            return None, "no GPU here to choose it by; give --device, e.g. --device sm_90-132"
    path = system_db_path(dev.arch, dev.sm_count)
    if path is None:
        shipped = ", ".join(f"{a}-{n}" for a, n in system_db_files()) or "none"
        return None, f"none is shipped for {dev.arch} (shipped: {shipped})"
    return path, None


def _layers(db_url, device, system_only):
    """The layers a read-only command shows: the user DB (unless ``system_only``), then the system DB
    for ``device`` (or the current GPU). Without a system DB: an error with ``system_only``, else a note
    on standard error."""
    out = [] if system_only else [_user_layer(db_url)]
    path, why = _system_file(device)
    if path is None:
        if system_only:
            _fail(f"no system FindDB: {why}")
        click.echo(f"miofind: system FindDB not shown: {why}", err=True)
    else:
        out.append(_Layer("system", str(path), _open_ro(str(path), immutable=True)))
    return out


def _user_devices(h, device):
    """The user DB's device strings that ``--device`` selects: the one named, or with a name-less
    ``sm_90-132`` every device of that architecture and SM count."""
    if device is None:
        return None
    dev = _parse_device(device)
    if dev.name:
        return [dev.db_name]
    return [x for x in h.devices() if x == dev.db_name or x.startswith(dev.db_name + "-")]


@db.command("path")
@click.option("--db", "db_url", default=None, help=DB_HELP)
@click.option("--device", default=None, help=DEVICE_HELP)
@click.option("--user", "which", flag_value="user", help="Print only the user FindDB's path.")
@click.option("--system", "which", flag_value="system", help="Print only the system FindDB's path.")
def db_path(db_url, device, which):
    """Print where the FindDBs are, one 'layer<TAB>path' line each: the user DB (which takes every write)
    and the system DB shipped for --device or the current GPU. With --user or --system, the bare path.
    Opens neither."""
    if which != "system":
        where = _user_where(db_url)[2]
        if which == "user":
            click.echo(where)
            return
        click.echo(f"user\t{where}")
    path, why = _system_file(device)
    if path is None:
        if which == "system":
            _fail(f"no system FindDB: {why}")
        click.echo(f"miofind: system FindDB not shown: {why}", err=True)
    else:
        click.echo(str(path) if which == "system" else f"system\t{path}")


@db.command("stats")
@click.option("--db", "db_url", default=None, help=DB_HELP)
@click.option("--device", default=None, help=DEVICE_HELP)
@click.option("--system", "system_only", is_flag=True, help=SYSTEM_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON: one object per layer.")
def db_stats(db_url, device, system_only, as_json):
    """Record counts per solver, per layer: the user DB and the system DB shipped for --device (or the
    current GPU)."""
    from .db import FindDBError

    layers = _layers(db_url, device, system_only)
    out = {}
    try:
        for ly in layers:
            out[ly.name] = {"exists": True, **ly.db.stats()} if ly.db is not None else \
                {"exists": False, "path": ly.where}
    except FindDBError as e:
        _fail(str(e))
    finally:
        for ly in layers:
            ly.close()
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    t = Table(title="FindDB statistics", title_justify="left")
    t.add_column("layer")
    t.add_column("what")
    t.add_column("value", justify="right", overflow="fold")
    for name, st in out.items():
        if not st["exists"]:
            t.add_row(name, "path", st["path"])
            t.add_row(name, "exists", "no (a find creates it)")
            continue
        for k, v in st.items():
            if isinstance(v, dict):
                for kk, vv in v.items():
                    t.add_row(name, f"{k}: {kk}", str(vv))
            elif k != "exists":
                t.add_row(name, k, "" if v is None else str(v))
    console.print(t)


def _is_terminal() -> bool:
    return sys.stdout.isatty()


_SHOW_COLS = ("layer", "device", "problem_key", "solver", "time_ms", "workspace_bytes", "verified", "config", "version")


@db.command("show")
@click.option("--db", "db_url", default=None, help=DB_HELP)
@click.option("--device", default=None, help="The device whose shipped system FindDB to use, no GPU needed: "
              "sm_<cc>-<SMs>[-<name>], e.g. sm_90-132 (default: the current GPU); of the user DB, only its records "
              "(all names of that architecture and SM count when no name is given).")
@click.option("--system", "system_only", is_flag=True, help=SYSTEM_HELP)
@click.option("--key", "key_like", default=None, help="Only keys matching this SQL LIKE pattern (e.g. '%-NHWC-FP16-F').")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="At most this many records (0: all); standard error says when records were left out.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON: {records: [...], shown, total}, each record with its layer.")
def db_show(db_url, device, system_only, key_like, limit, as_json):
    """List stored records by layer (user, then system), device, problem and time. Keys are printed in
    full: a table on a terminal, tab-separated lines with a header otherwise."""
    import dataclasses

    from .db import FindDBError

    layers = _layers(db_url, device, system_only)
    rows, total = [], 0
    try:
        for ly in layers:
            if ly.db is None:
                continue
            devs = _user_devices(ly.db, device) if ly.name == "user" else None
            total += ly.db.count_records(devs, key_like)
            left = None if limit == 0 else limit - len(rows)
            if left is None or left > 0:
                rows += [(ly.name, r) for r in ly.db.iter_records(devs, key_like, limit=left)]
    except FindDBError as e:
        _fail(str(e))
    finally:
        for ly in layers:
            ly.close()
    if as_json:
        recs = [{"layer": name, **dataclasses.asdict(r)} for name, r in rows]
        click.echo(json.dumps({"records": recs, "shown": len(rows), "total": total}, indent=1))
    elif _is_terminal():
        t = Table(title="FindDB records  " + "  ".join(f"{ly.name}: {ly.where}" for ly in layers), title_justify="left")
        for col in ("layer", "device", "problem key", "solver", "time ms", "workspace", "verified", "config", "version"):
            # never cut: the key keeps its line while the other columns fold
            t.add_column(col, overflow="fold", no_wrap=col == "problem key")
        for name, r in rows:
            t.add_row(name, r.device, r.problem_key, r.solver_id, f"{r.time_ms:.4g}", _fmt_bytes(r.workspace_bytes),
                      "yes" if r.verified else "no", json.dumps(r.config) if r.config else "", r.package_version)
        console.print(t)
    else:
        click.echo("\t".join(_SHOW_COLS))
        for name, r in rows:
            vals = (name, r.device, r.problem_key, r.solver_id, repr(r.time_ms), str(r.workspace_bytes),
                    "yes" if r.verified else "no", json.dumps(r.config) if r.config else "", r.package_version)
            click.echo("\t".join(" ".join(v.split()) if any(c in v for c in "\t\n\r") else v for v in vals))
    if len(rows) < total:
        click.echo(f"miofind: showing {len(rows)} of {total} records (--limit {limit}; --limit 0 shows all)", err=True)


# -- transfer and maintenance ----------------------------------------------------------------------

KEY_FILE_HELP = ("A file holding the signing key (its bytes, a trailing line break dropped; at least 16). "
                 "Default: $MIOFIND_IMPORT_KEY.")


def _signing_key(key_file, *, required):
    """The HMAC key of signed exports: --key-file's contents, else $MIOFIND_IMPORT_KEY, else None
    (an error when ``required``)."""
    from .db.transfer import MIN_KEY_BYTES
    from .env import import_key

    if key_file is not None:
        try:
            with open(key_file, "rb") as f:
                data = f.read(65537)
        except OSError as e:
            _fail(f"--key-file={key_file}: cannot read it: {e.strerror or e}")
        key = data.rstrip(b"\r\n")
        if len(data) > 65536:
            _fail(f"--key-file={key_file}: more than 64 KiB; expected a key")
        if len(key) < MIN_KEY_BYTES:
            _fail(f"--key-file={key_file}: {len(key)} bytes; a signing key needs at least {MIN_KEY_BYTES}")
        return key
    try:
        key = import_key()
    except ValueError as e:
        _fail(str(e))
    if key is None and required:
        _fail("--sign needs a key: set MIOFIND_IMPORT_KEY or give --key-file")
    return key


def _check_device_option(device, *, amd, option="--device"):
    from .db.transfer import check_device

    try:
        return check_device(device, amd=amd, option=option)
    except ValueError as e:
        _fail(str(e))


@db.command("export")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
@click.option("--format", "fmt", type=click.Choice(["miofind", "miopen"]), default="miofind", show_default=True,
              help="miofind: JSON Lines of every record and tuned config; miopen: MIOpen's text FindDB (one device).")
@click.option("--device", default=None, help="Only this device (e.g. sm_90-132); miopen needs it when the DB has several.")
@click.option("-o", "--output", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Write to this file (default: standard output).")
@click.option("--sign", is_flag=True, help="End the file with an HMAC-SHA256 signature (miofind format), so that an "
              "import with the same key keeps the records trusted.")
@click.option("--key-file", type=click.Path(dir_okay=False), default=None, help=KEY_FILE_HELP)
def db_export(db_url, fmt, device, out_path, sign, key_file):
    """Write the FindDB's records to a file or standard output.

    Exports the find records and tuned configs. Failed configs of tuning and recorded find failures are
    not exported: they describe runs on this machine, and a find elsewhere records its own.
    With --sign, the key comes from --key-file or $MIOFIND_IMPORT_KEY; an unsigned export imports untrusted.
    """
    import io
    import sys

    from .db import FindDBError
    from .db.transfer import export_records
    from .fileio import atomic_write, default_file_mode

    if device is not None:
        _check_device_option(device, amd=fmt == "miopen")
    if sign and fmt != "miofind":
        _fail("--sign: MIOpen's text format cannot carry a signature; sign a --format miofind export")
    key = _signing_key(key_file, required=True) if sign else None
    h = _open_ro(db_url)
    try:
        if out_path is None:
            n = export_records(h, sys.stdout, fmt=fmt, device=device, sign_key=key)
            sys.stdout.flush()
        else:
            buf = io.StringIO()  # write the file only once the export has succeeded
            n = export_records(h, buf, fmt=fmt, device=device, sign_key=key)
            try:
                atomic_write(out_path, buf.getvalue(), mode=default_file_mode())
            except OSError as e:
                _fail(f"--output={out_path!r}: cannot write it ({e.strerror or e})")
        left_out = h.count_find_failures(device)
    except (FindDBError, ValueError, OSError) as e:
        _fail(str(e))
    finally:
        h.close()
    click.echo(f"wrote {n} lines ({fmt} format{', signed' if sign else ''}){f' to {out_path}' if out_path else ''}",
               err=True)
    if left_out:
        click.echo(f"left out {left_out} recorded find failure(s): they are not exported (a find on the importing "
                   "machine records its own)", err=True)


class _PushedBack:
    """A binary stream whose first line was read ahead (to tell the format) and is given back first."""

    def __init__(self, first: bytes, fh):
        self.first, self.fh = first, fh

    def readline(self, size=-1):
        if self.first:
            line, self.first = self.first, b""
            return line
        return self.fh.readline(size)


@db.command("import")
@click.argument("file")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
@click.option("--format", "fmt", type=click.Choice(["miofind", "miopen"]), default=None,
              help="Default: miofind when the first line starts with '{', else miopen.")
@click.option("--device", default=None, help="miopen: the device the records belong to (required): sm_<cc>-<SMs>, "
              "or gfx<arch>-<CUs> for an AMD GPU's; miofind: import only this device's records.")
@click.option("--device-name", default="", help="miopen: the device's name (e.g. 'NVIDIA H100 80GB HBM3').")
@click.option("--key-file", type=click.Path(dir_okay=False), default=None,
              help="The key that signed the file (see `db export --sign`). " + KEY_FILE_HELP)
@click.option("--max-line-length", "max_line", type=click.IntRange(min=1), default=None,
              help="Longest line accepted, in bytes (default 65536); a longer one stops the import.")
def db_import(file, db_url, fmt, device, device_name, key_file, max_line):
    """Read records from FILE ('-': standard input) into the FindDB, all or nothing: lines that fail a
    check are skipped with their line numbers; anything fatal writes nothing.

    Imported records are stored unverified and untrusted (hints, never the answer of a find), and never
    replace a stored record, unless the file is a miofind export signed (`db export --sign`) with the key
    given here (--key-file or $MIOFIND_IMPORT_KEY).
    """
    import logging
    import sys

    from .db import FindDBError
    from .db.transfer import MAX_LINE, amd_file_token, import_records

    max_line = max_line or MAX_LINE
    key = _signing_key(key_file, required=False)
    try:
        fh = sys.stdin.buffer if file == "-" else open(file, "rb")
    except OSError as e:
        _fail(f"cannot read {file}: {e.strerror or e}")
    try:
        try:
            first = fh.readline(max_line + 2)  # bounded: /dev/zero has no line break
        except OSError as e:
            _fail(f"cannot read {file}: {e.strerror or e}")
        if fmt is None:
            fmt = "miofind" if first.lstrip(b"\xef\xbb\xbf \t").startswith(b"{") else "miopen"
        if fmt == "miopen" and not device:
            _fail(f"{file} is a MIOpen FindDB file, which names no device: give the device its records belong "
                  "to with --device (e.g. --device sm_90-132)")
        if device is not None:
            _check_device_option(device, amd=fmt == "miopen")
        token = amd_file_token(file) if fmt == "miopen" else None
        if token and device.startswith("sm_"):
            logging.getLogger(__name__).warning(
                "%s names an AMD GPU (%s): its times were measured there, not on %s; they are filed under %s as "
                "untrusted hints that no find answers from", file, token, device, device)
        h = open_writable(db_url)
        try:
            rep = import_records(h, _PushedBack(first, fh), fmt=fmt, device=device, device_name=device_name,
                                 sign_key=key, max_line=max_line)
        except (FindDBError, ValueError, OSError) as e:
            _fail(f"cannot import {file}: {e}")
        finally:
            h.close()
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    written = rep.find + rep.perf
    click.echo(f"imported {rep.find} find records and {rep.perf} tuned configs ({fmt} format) into "
               f"{h.path or h.url}; skipped {rep.n_skipped}")
    if rep.trusted:
        click.echo(f"  {rep.trusted} stored as written: the file's signature matches the key")
    if written > rep.trusted:
        click.echo(f"  {written - rep.trusted} stored untrusted (unverified): no find answers from them until it "
                   "measures the problem on this device")
    for note in rep.notes:
        click.echo(f"  note: {note}")
    for why in rep.skipped[:20]:
        click.echo(f"  skipped {why}")
    if rep.n_skipped > 20:
        click.echo(f"  ... and {rep.n_skipped - 20} more")


@db.command("merge")
@click.argument("sources", nargs=-1, required=True)
@click.option("--db", "db_url", default=None, help="The destination FindDB (default: $MIOFIND_DB or the user DB).")
def db_merge(sources, db_url):
    """Merge the records of the SOURCES (URLs or files, opened read-only) into the FindDB, keeping per
    problem and solver the verified, then the faster record."""
    from .db import FindDBError
    from .db.transfer import merge_into

    handles = [_open_ro(s) for s in sources]
    h = open_writable(db_url)
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
    """PRAGMA integrity_check of a SQLite file, opened so that nothing is written: ["ok"] when sound."""
    import sqlite3
    import urllib.parse

    from .db.findb import readonly_sqlite_query

    query = urllib.parse.urlencode(readonly_sqlite_query(path))
    con = sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?{query}", uri=True, timeout=30)
    try:
        return [str(r[0]) for r in con.execute("PRAGMA integrity_check").fetchall()]
    finally:
        con.close()


@db.command("verify")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: {db, integrity, records, perf_records, problems, "
              "trust}.")
def db_verify(db_url, as_json):
    """Check every record (key, solver, applicability, config, workspace size) without a GPU, and a
    SQLite file's integrity; then count, per solver, the records the installed miofind trusts (yes),
    does not (no: another trust key, e.g. imported or written by older code) or cannot judge here
    (unknown: a library version unreadable without a GPU). Exit status 1 if anything is wrong."""
    import dataclasses
    import sqlite3

    from .db import FindDBError
    from .db.maintenance import trust_summary, verify_db

    h = _open_ro(db_url)
    integrity = None
    try:
        if h.path is not None:
            try:
                integrity = _integrity_check(h.path)
            except sqlite3.Error as e:
                integrity = [str(e)]
        problems = verify_db(h)
        trust = trust_summary(h)
        st = h.stats()
    except FindDBError as e:
        _fail(str(e))
    finally:
        h.close()
    where = str(h.path) if h.path else h.url
    bad = integrity is not None and integrity != ["ok"]
    if as_json:
        click.echo(json.dumps({"db": where, "integrity": None if integrity is None else integrity[:10],
                               "records": st["records"], "perf_records": st["perf_records"],
                               "problems": [dataclasses.asdict(p) for p in problems], "trust": trust}, indent=1))
        if problems or bad:
            raise SystemExit(1)
        return
    if integrity is not None:
        click.echo(f"integrity_check of {where}: {'ok' if not bad else 'FAILED: ' + '; '.join(integrity[:10])}")
    if problems:
        t = Table(title=f"{len(problems)} problem(s) in {where}", title_justify="left")
        for col in ("kind", "device", "problem key", "solver", "check", "problem"):
            t.add_column(col)
        for p in problems:
            t.add_row(p.kind, p.device, p.key, p.solver_id, p.check, p.message)
        console.print(t)
    if trust:
        t = Table(title="trusted by this miofind (find records and tuned configs)", title_justify="left")
        for col in ("solver", "yes", "no", "unknown"):
            t.add_column(col, justify="left" if col == "solver" else "right")
        for sid, c in trust.items():
            t.add_row(sid, str(c["yes"]), str(c["no"]), str(c["unknown"]))
        t.add_row("all", *(str(sum(c[k] for c in trust.values())) for k in ("yes", "no", "unknown")))
        console.print(t)
    click.echo(f"checked {st['records']} find records and {st['perf_records']} tuned configs: "
               f"{len(problems)} problem(s)")
    if problems or bad:
        raise SystemExit(1)


@db.command("prune")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@click.option("--keep-stale", is_flag=True, help="Keep records, failed configs and recorded find failures of other "
              "miofind versions or kernel sources.")
def db_prune(db_url, dry_run, keep_stale):
    """Delete invalid records (what `db verify` reports) and records this miofind no longer trusts.

    Recorded find failures and failed tuning configs go when their solver is unknown or retired, their key
    is bad, or (stale) they were recorded under another trust key than the solver's current one.
    """
    from .db import FindDBError
    from .db.maintenance import prune_db

    h = _open_ro(db_url) if dry_run else open_writable(db_url)
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


@db.command("migrate-trust")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
def db_migrate_trust(db_url):
    """Give the records a miofind 0.1.0 wrote (kernel hashes) today's trust keys, for the solvers whose
    kernel sources are unchanged since, and those written before a source edit that left every
    compiled kernel as it was (the generic builds of im2col-GEMM and depthwise) theirs, so that they
    stay trusted; prints the rows changed per table."""
    from .db import FindDBError
    from .db.maintenance import migrate_trust_keys

    h = open_writable(db_url)
    try:
        counts = migrate_trust_keys(h)
    except FindDBError as e:
        _fail(str(e))
    finally:
        h.close()
    click.echo(f"FindDB {h.path or h.url}: re-keyed {counts.get('find', 0)} find records, {counts.get('perf', 0)} "
               f"tuned configs and {counts.get('failures', 0)} failed configs")


@db.command("train-model")
@click.option("--db", "db_url", required=True, help="The FindDB to learn from: SQLAlchemy URL or file (read-only).")
@click.option("--device", "device", default=None,
              help="Only this device's records (a DB device string, e.g. sm_90-132-NVIDIA_H100_80GB_HBM3; "
                   "default: every record).")
@click.option("--out", "out_path", default=None, type=click.Path(dir_okay=False),
              help="Model file to write (default: <db file>.model.npz next to a SQLite DB).")
@click.option("--folds", default=5, show_default=True, type=click.IntRange(0, 50),
              help="Cross-validation folds over problems for the printed accuracy (0: none).")
@click.option("--sm-count", default=132, show_default=True, type=click.IntRange(1, 100000),
              help="SM count of the device (scales the roofline times the model learns from).")
@click.option("--configs", is_flag=True,
              help="Train the config-aware model the tuner's 'model' strategy orders configs by (the solvers' "
                   "numeric config parameters as features, PerfDB default-config times beside the tuned ones; "
                   "regression trees only), written as <db file>.tune.model.npz by default.")
@click.option("--default-configs/--no-default-configs", default=None,
              help="Immediate-mode model: the solvers' numeric config parameters as features, each find record "
                   "given its solver's default config on its problem (what an unseen problem is asked with). "
                   "The default without --configs; --no-default-configs: no config features.")
@click.option("--tile-features", is_flag=True,
              help="With default configs: also the blocks a BM x BN config launches and their wave efficiency as "
                   "features (evaluated, not the shipped recipe: bench/results/costmodel-v7/NOTES.md).")
@click.option("--align-features/--no-align-features", default=None,
              help="The byte alignment of the GEMMs' leading dimensions as problem features (default: on for the "
                   "immediate-mode model, costmodel.IMMEDIATE_ALIGN; off for --configs).")
@click.option("--neighbour-features/--no-neighbour-features", default=None,
              help="What the nearest known problems' records say of each solver as features, with a table of the "
                   "DB's find records in the model file (miofind.neighbours; default: costmodel.IMMEDIATE_NEIGHBOURS "
                   "for the immediate-mode model, off for --configs).")
@click.option("--perceptron/--no-perceptron", default=None,
              help="A perceptron (scikit-learn) states the times, and its times join the LambdaRank trees' order "
                   "(default: on for the immediate-mode model where scikit-learn is installed, "
                   "costmodel.IMMEDIATE_PERCEPTRON; off for --configs).")
def db_train_model(db_url, device, out_path, folds, sm_count, configs, default_configs, tile_features, align_features,
                   neighbour_features, perceptron):
    """Train the learned cost model of immediate mode from a FindDB's records (needs the 'model' extra:
    pip install 'miofind[model]'), print its cross-validated accuracy, write the model file. Shipped
    as finddb/<arch>-<SMs>.model.npz next to the system DB, it ranks solvers on a DB miss. With
    --configs, the config-aware model of `miofind tune --strategy model` (next to the user or system DB)."""
    from pathlib import Path

    from .costmodel import CostModelError, cross_validate, model_path_for, samples_from_db, train, tune_model_path_for
    from .db import FindDBError

    if configs and default_configs:
        _fail("--configs and --default-configs: choose one (the tuner's model learns the tuned configs)")
    default_configs = not configs if default_configs is None else default_configs
    if configs and perceptron:
        _fail("--perceptron: not with --configs (the tuner's model orders configs by its regression trees)")
    if tile_features and not default_configs:
        _fail("--tile-features: needs the default-config features (not --configs or --no-default-configs)")
    h = _open_ro(db_url)
    if out_path is None:
        if h.path is None:
            _fail(f"--out: needed for a FindDB that is not a SQLite file ({h.url})")
        out_path = (tune_model_path_for if configs else model_path_for)(h.path)
    try:
        samples = samples_from_db(h, device)
    except FindDBError as e:
        _fail(str(e))
    finally:
        h.close()
    if not samples:
        _fail(f"--db {db_url}: no records{f' of device {device}' if device else ''} to train on")
    try:
        # the tuner orders configs by the regression's times: the config-aware model has no ranker
        kw = {"configs": True, "rank_rounds": 0} if configs else \
            {"default_configs": default_configs, "tile_features": tile_features}
        kw["align_features"] = align_features
        kw["neighbour_features"] = neighbour_features
        kw["perceptron"] = perceptron
        cv = cross_validate(samples, folds, sm_count=sm_count, **kw) if folds else None
        model = train(samples, sm_count=sm_count, source=str(db_url), **kw)
    except CostModelError as e:
        _fail(str(e))
    path = model.save(Path(out_path))
    n_prob = model.meta["problems"]
    features = (f"; config features ({'default configs' if default_configs else 'tuned configs'}): "
                f"{','.join(model.config_keys)}" if model.config_keys else "") + \
        ("; tile features: blocks and wave efficiency" if tile_features else "") + \
        ("; alignment features" if model.align_features else "") + \
        ("; neighbour features" if model.neighbour_features else "")
    regression = len(model.trees.roots) - model.rank_trees
    if model.perceptron is not None:
        pm = model.meta["perceptron"]
        forests = (f"a {'x'.join(map(str, pm['hidden']))} perceptron ({pm['library']}) states the times, "
                   f"{model.rank_trees} LambdaRank trees and its times order the solvers, {regression} regression "
                   "trees beside them")
    else:
        forests = f"{regression} regression trees state the times, {model.rank_trees} LambdaRank trees order the solvers"
    click.echo(f"trained on {model.meta['samples']} measured times of {n_prob} problems; model {model.version} "
               f"({forests}{features}) -> {path}")
    if cv is None:
        click.echo("cross-validation: not run" + (" (fewer problems than folds)" if folds else ""))
    else:
        click.echo(f"{folds}-fold cross-validation over problems ({cv['problems']} held-out problems): top-1 "
                   f"{100 * cv['top1']:.1f}%, mean slowdown {100 * cv['mean_slowdown']:.2f}%, worst "
                   f"{cv['worst_slowdown']:.2f}x, median relative error {100 * cv['median_rel_err']:.1f}%")
