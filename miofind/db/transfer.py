"""Moving FindDB contents between databases and files: export, import, merge.

Two file formats:

* ``miofind``: JSON Lines. The first line is the header ``{"format": "miofind-db", "version": 1}``,
  then one object per find record (``{"type": "find", ...every Record field}``) and per tuned config
  (``{"type": "perf", ...every PerfRecord field}``). Floats are written by ``json`` (``repr``), so
  they re-import bit for bit; a miofind export re-imports to records equal to the originals. Failed
  configs are not exported (they only matter to a resumed tune on the same machine).
* ``miopen``: MIOpen's text FindDB, one line per problem:
  ``KEY=Solver:time_ms,workspace_bytes,algorithm;Solver2:...`` with the solvers fastest first. One file
  holds one device; importing needs the device to file the records under. Import also reads the
  older form MIOpen shipped for gfx803-gfx1030, ``KEY=algorithm:Solver,time_ms,workspace_bytes,
  kcache_algorithm,kcache_config;...`` (the last two name MIOpen's kernel cache and are dropped).

Imported files are untrusted data. Every line is parsed with ``json.loads`` or plain string
splitting (no pickle, no eval), every value goes through the Record / PerfRecord constructors and the
column limits of the schema, every key must re-serialise to itself
(``ProblemDescription.from_key(k).key() == k``; every key MIOpen writes does, including those that
describe no runnable convolution, which are kept as hints like the others) and every solver id must
name a live solver of this miofind. A line or entry that fails any check is skipped with its line
number and reason (``ImportReport.skipped``); nothing else is lost.

Records imported from a MIOpen file carry ``verified=False`` and an empty ``package_version`` and
``kernel_hash``: ``is_trusted`` never accepts them, so a find never answers from them; they are hints
(for example for ranking or for deciding what to tune) until a find measures the problem itself. They
never replace a record the FindDB already holds for the same (device, problem, solver).
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, TextIO

import sqlalchemy as sa

from . import findb as _findb
from .findb import FindDB, FindDBError, FindDBWarning, PerfRecord, Record

__all__ = ["export_records", "import_records", "merge_into", "ImportReport", "MergeReport", "FORMATS",
           "HEADER", "BATCH"]

FORMATS = ("miofind", "miopen")
HEADER = {"format": "miofind-db", "version": 1}
BATCH = 500  # records per transaction when storing

_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(Record))
_PERF_FIELDS = tuple(f.name for f in dataclasses.fields(PerfRecord))
# MIOpen entry fields: a plain decimal or exponent float, a plain non-negative integer
_TIME_RE = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_INT_RE = re.compile(r"\d+")
_MAX_BIGINT = 2**63 - 1
_MAX_INT = 2**31 - 1


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"fmt={fmt!r}: expected one of {', '.join(FORMATS)}")


# -- export ----------------------------------------------------------------------------------------

def _as_dict(obj: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in names}


def export_records(db: FindDB, fh: TextIO, *, fmt: str = "miofind", device: str | None = None) -> int:
    """Write the FindDB's records (of ``device`` if given) to the text stream ``fh``; returns the lines written.

    ``fmt="miofind"``: the header line, then the find records and the tuned configs, each ordered by
    device, problem key and solver (the header counts as a line). ``fmt="miopen"``: one line per
    problem key of one device, sorted by key, solvers fastest first, times written with ``repr``; a
    FindDB holding several devices needs ``device`` (ValueError listing them otherwise). A record
    that MIOpen's format cannot represent (a separator in a field) is left out with a FindDBWarning.
    """
    _check_format(fmt)
    if fmt == "miofind":
        return _export_miofind(db, fh, device)
    return _export_miopen(db, fh, device)


def _export_miofind(db: FindDB, fh: TextIO, device: str | None) -> int:
    fh.write(json.dumps(HEADER) + "\n")
    n = 1
    finds = sorted(db.iter_records(device=device), key=lambda r: r.db_key)
    for r in finds:
        fh.write(json.dumps({"type": "find", **_as_dict(r, _RECORD_FIELDS)}) + "\n")
        n += 1
    for p in sorted(db.iter_perf(device=device), key=lambda r: r.db_key):
        fh.write(json.dumps({"type": "perf", **_as_dict(p, _PERF_FIELDS)}) + "\n")
        n += 1
    return n


def _miopen_ok(*fields: str) -> bool:
    return all(s and not any(ch in s for ch in "=;:,\r\n") for s in fields)


def _export_miopen(db: FindDB, fh: TextIO, device: str | None) -> int:
    records = list(db.iter_records(device=device))
    if device is None:
        devices = sorted({r.device for r in records})
        if len(devices) > 1:
            raise ValueError(f"device=None: the FindDB holds records of several devices ({', '.join(devices)}) "
                             "and a MIOpen FindDB file holds one; choose one with device")
    by_key: dict[str, list[Record]] = {}
    for r in records:
        by_key.setdefault(r.problem_key, []).append(r)
    n = 0
    for key in sorted(by_key):
        entries = []
        for r in sorted(by_key[key], key=lambda r: (r.time_ms, r.solver_id)):
            if not _miopen_ok(key, r.solver_id, r.algorithm):
                warnings.warn(f"FindDB {db.url}: record ({r.device}, {key!r}, {r.solver_id!r}) has a field MIOpen's "
                              "text format cannot hold (empty, or contains = ; : , or a line break); left out",
                              FindDBWarning, stacklevel=3)
                continue
            entries.append(f"{r.solver_id}:{r.time_ms!r},{r.workspace_bytes},{r.algorithm}")
        if entries:
            fh.write(f"{key}={';'.join(entries)}\n")
            n += 1
    return n


# -- import ----------------------------------------------------------------------------------------

@dataclass
class ImportReport:
    """What an import stored (find records, tuned configs) and what it skipped ("line N: why")."""

    find: int = 0
    perf: int = 0
    skipped: list[str] = field(default_factory=list)


def _key_problem(key: Any) -> str | None:
    """Why ``key`` is not a canonical problem key, or None if it is."""
    from ..problem import ProblemDescription

    if not isinstance(key, str):
        return f"problem_key={key!r}: expected a string"
    try:
        again = ProblemDescription.from_key(key).key()
    except ValueError as e:
        return f"problem_key: {e}"
    except Exception as e:  # a parser bug must not abort an import of untrusted data
        return f"problem_key={key!r}: does not parse ({e.__class__.__name__}: {e})"
    if again != key:
        return f"problem_key={key!r}: not canonical (re-serialises to {again!r})"
    return None


def _solver_problem(solver_id: Any) -> str | None:
    """Why ``solver_id`` is not the DB name of a live solver, or None."""
    from ..registry import registry

    if not isinstance(solver_id, str):
        return f"solver_id={solver_id!r}: expected a string"
    for row in registry():
        if row.id == solver_id:
            return None if row.solver is not None else f"solver_id={solver_id!r}: retired solver"
    return f"solver_id={solver_id!r}: unknown solver"


def _has_nul(v: Any) -> bool:
    if isinstance(v, str):
        return "\x00" in v
    if isinstance(v, dict):
        return any(_has_nul(k) or _has_nul(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_has_nul(x) for x in v)
    return False


def _column_problem(obj: Any, table: sa.Table) -> str | None:
    """What the database would refuse: a string over its column's length, an integer out of range."""
    for col in table.c:
        if col.name == "id" or not hasattr(obj, col.name):
            continue
        v = getattr(obj, col.name)
        length = getattr(col.type, "length", None)
        if isinstance(v, str) and length is not None and len(v) > length:
            return f"{col.name}: {len(v)} characters, more than the {length} the FindDB holds"
        if isinstance(v, int) and not isinstance(v, bool):
            limit = _MAX_BIGINT if isinstance(col.type, sa.BigInteger) else _MAX_INT
            if v > limit:
                return f"{col.name}={v}: too large"
    if _has_nul(dataclasses.asdict(obj)):
        return "contains a NUL character"
    return None


def _lines(fh: Iterable[str | bytes], skip: Callable[[str], None]) -> Iterator[tuple[int, str]]:
    """(line number, text) for every non-blank line of ``fh``; an undecodable one is reported to
    ``skip`` instead."""
    for no, line in enumerate(fh, 1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as e:
                skip(f"line {no}: not UTF-8 ({e.reason} at byte {e.start})")
                continue
        if no == 1:
            line = line.lstrip("\ufeff")  # a byte-order mark some editors write
        if line.strip():
            yield no, line.rstrip("\r\n")


class _Sink:
    """Stores records in batches of BATCH, one transaction each; a batch the database refuses is
    retried record by record, so one bad record costs only its own line."""

    def __init__(self, db: FindDB, report: ImportReport) -> None:
        self.db, self.report = db, report
        self.pending: dict[type, list[tuple[int, Any]]] = {Record: [], PerfRecord: []}

    def add(self, no: int, obj: Any) -> None:
        buf = self.pending[type(obj)]
        buf.append((no, obj))
        if len(buf) >= BATCH:
            self.flush(type(obj))

    def flush(self, cls: type | None = None) -> None:
        for c in ([cls] if cls else list(self.pending)):
            batch, self.pending[c] = self.pending[c], []
            if batch:
                self._store(c, batch)

    def _store(self, cls: type, batch: list[tuple[int, Any]]) -> None:
        store = self.db.store if cls is Record else self.db.store_perf
        attr = "find" if cls is Record else "perf"
        try:
            n = store([obj for _, obj in batch])
        except FindDBError as e:
            if self.db.readonly:
                raise
            refused = []
            n = 0
            for no, obj in batch:  # find the record(s) the database refuses
                try:
                    n += store([obj])
                except FindDBError as e1:
                    refused.append(f"line {no}: the database refused it: {e1}")
            if len(refused) == len(batch) and len(batch) > 1:
                raise e  # nothing went in: the database is the problem, not the records
            self.report.skipped.extend(refused)
        setattr(self.report, attr, getattr(self.report, attr) + n)


def import_records(db: FindDB, fh: Iterable[str | bytes], *, fmt: str = "miofind", device: str | None = None,
                   device_name: str = "") -> ImportReport:
    """Read records from ``fh`` (lines of text or bytes) into ``db``; returns an ImportReport.

    ``fmt="miofind"`` restores find records and tuned configs as exported (a record with the same
    device, problem and solver is replaced); with ``device`` only that device's lines are imported.
    Its first line must be the header; an unknown format or version raises ValueError.
    ``fmt="miopen"`` needs ``device`` (ValueError otherwise), the device the records are filed
    under (``device_name`` describes it); the records are untrusted hints (see the module doc) and
    never replace an existing record. Lines that fail validation are skipped with their reasons.
    """
    _check_format(fmt)
    if fmt == "miopen" and (not isinstance(device, str) or not device):
        raise ValueError(f"device={device!r}: a MIOpen FindDB file names no device; give the device its "
                         "records belong to (e.g. sm_90-132)")
    if not isinstance(device_name, str):
        raise ValueError(f"device_name={device_name!r}: expected a string")
    report = ImportReport()
    sink = _Sink(db, report)
    if fmt == "miofind":
        _import_miofind(db, fh, sink, report, device)
    else:
        _import_miopen(db, fh, sink, report, device, device_name)
    sink.flush()
    return report


def _check_header(obj: Any, no: int) -> None:
    fmt, ver = obj.get("format"), obj.get("version")
    if fmt != HEADER["format"] or type(ver) is not int or ver != HEADER["version"]:
        raise ValueError(f"line {no}: unknown file format {fmt!r} version {ver!r} (this miofind reads "
                         f"{HEADER['format']!r} version {HEADER['version']})")


def _import_miofind(db: FindDB, fh, sink: _Sink, report: ImportReport, device: str | None) -> None:
    skip = report.skipped.append
    seen_header = False
    for no, line in _lines(fh, skip):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, or an integer too long to convert
            if not seen_header:
                raise ValueError(f"line {no}: not a miofind-db file (the first line is not a JSON header)") from None
            skip(f"line {no}: not valid JSON ({getattr(e, 'msg', e)})")
            continue
        if isinstance(obj, dict) and "format" in obj and "type" not in obj:
            _check_header(obj, no)  # a repeated header (concatenated exports) must match too
            seen_header = True
            continue
        if not seen_header:
            raise ValueError(f"line {no}: not a miofind-db file (no {json.dumps(HEADER)} header line first)")
        if not isinstance(obj, dict):
            skip(f"line {no}: expected a JSON object, got {type(obj).__name__}")
            continue
        kind = obj.pop("type", None)
        cls, names = {"find": (Record, _RECORD_FIELDS), "perf": (PerfRecord, _PERF_FIELDS)}.get(kind, (None, ()))
        if cls is None:
            skip(f"line {no}: type={kind!r}: expected 'find' or 'perf'")
            continue
        unknown = sorted(set(obj) - set(names))
        if unknown:
            skip(f"line {no}: unknown field(s) {', '.join(map(repr, unknown))}")
            continue
        if device is not None and obj.get("device") != device:
            skip(f"line {no}: device={obj.get('device')!r} is not the requested {device!r}")
            continue
        _add(sink, report, no, cls, obj)


def _add(sink: _Sink, report: ImportReport, no: int, cls: type, values: dict[str, Any],
         prefix: str = "") -> bool:
    try:
        obj = cls(**values)
    except (TypeError, ValueError) as e:
        report.skipped.append(f"line {no}: {prefix}{e}")
        return False
    why = (_key_problem(obj.problem_key) or _solver_problem(obj.solver_id)
           or _column_problem(obj, _findb._KINDS[cls][0]))
    if why:
        report.skipped.append(f"line {no}: {prefix}{why}")
        return False
    sink.add(no, obj)
    return True


def _import_miopen(db: FindDB, fh, sink: _Sink, report: ImportReport, device: str, device_name: str) -> None:
    skip = report.skipped.append
    existing = {(r.problem_key, r.solver_id) for r in db.iter_records(device=device)}
    now = time.time()
    for no, line in _lines(fh, skip):
        key, sep, rest = line.partition("=")
        if not sep:
            skip(f"line {no}: expected KEY=Solver:time_ms,workspace_bytes,algorithm;...")
            continue
        why = _key_problem(key)
        if why:
            skip(f"line {no}: {why}")
            continue
        for i, entry in enumerate(rest.split(";"), 1):
            if not entry and i > 1:
                continue  # a trailing ';'
            sid, sep, vals = entry.partition(":")
            parts = vals.split(",")
            if sep and len(parts) == 5:  # the older form: algorithm:Solver,time,workspace,kcache algo,kcache config
                algo, sid, t, ws = sid, *parts[:3]
            elif sep and len(parts) == 3:
                t, ws, algo = parts
            else:
                skip(f"line {no}: entry {i} ({sid or '?'}): expected Solver:time_ms,workspace_bytes,algorithm "
                     f"(or algorithm:Solver,time_ms,workspace_bytes,kcache_algorithm,kcache_config), got {entry[:200]!r}")
                continue
            where = f"entry {i} ({sid or '?'}): "
            if not _TIME_RE.fullmatch(t):
                skip(f"line {no}: {where}time_ms={t[:50]!r}: expected a non-negative decimal number")
                continue
            if not _INT_RE.fullmatch(ws):
                skip(f"line {no}: {where}workspace_bytes={ws[:50]!r}: expected a non-negative integer")
                continue
            if (key, sid) in existing:
                skip(f"line {no}: {where}the FindDB already holds a record for it on {device}; kept")
                continue
            values = dict(device=device, device_name=device_name, problem_key=key, solver_id=sid, algorithm=algo,
                          time_ms=float(t), workspace_bytes=int(ws), config=None, verified=False,
                          package_version="", kernel_hash="", created_at=now)
            _add(sink, report, no, Record, values, prefix=where)


# -- merge -----------------------------------------------------------------------------------------

@dataclass
class MergeReport:
    """Records read from the sources and records written to the destination, per kind."""

    find_considered: int = 0
    find_written: int = 0
    perf_considered: int = 0
    perf_written: int = 0

    @property
    def considered(self) -> int:
        return self.find_considered + self.perf_considered

    @property
    def written(self) -> int:
        return self.find_written + self.perf_written


def _better_find(new: Record, old: Record | None) -> bool:
    if old is None:
        return True
    if new.verified != old.verified:
        return new.verified
    return new.time_ms < old.time_ms


def _better_perf(new: PerfRecord, old: PerfRecord | None) -> bool:
    return old is None or new.time_ms < old.time_ms


def merge_into(dest_db: FindDB, source_dbs: Iterable[FindDB | str]) -> MergeReport:
    """Merge the find records and tuned configs of ``source_dbs`` (FindDBs, or URLs / paths opened
    read-only) into ``dest_db``, keeping per (device, problem, solver) the better record: a verified
    record beats an unverified one, then the lower ``time_ms`` wins (a tie keeps what is there);
    for tuned configs the lower ``time_ms`` wins. Failed configs are not merged."""
    report = MergeReport()
    best: dict[tuple, Record] = {r.db_key: r for r in dest_db.iter_records()}
    best_perf: dict[tuple, PerfRecord] = {p.db_key: p for p in dest_db.iter_perf()}
    changed: set[tuple] = set()
    changed_perf: set[tuple] = set()
    for src in source_dbs:
        owned = isinstance(src, str)
        h = FindDB(src, readonly=True) if owned else src
        try:
            for r in h.iter_records():
                report.find_considered += 1
                if _better_find(r, best.get(r.db_key)):
                    best[r.db_key] = r
                    changed.add(r.db_key)
            for p in h.iter_perf():
                report.perf_considered += 1
                if _better_perf(p, best_perf.get(p.db_key)):
                    best_perf[p.db_key] = p
                    changed_perf.add(p.db_key)
        finally:
            if owned:
                h.close()
    finds = [best[k] for k in sorted(changed)]
    perfs = [best_perf[k] for k in sorted(changed_perf)]
    for i in range(0, len(finds), BATCH):
        report.find_written += dest_db.store(finds[i:i + BATCH])
    for i in range(0, len(perfs), BATCH):
        report.perf_written += dest_db.store_perf(perfs[i:i + BATCH])
    return report
