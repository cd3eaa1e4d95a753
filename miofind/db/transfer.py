"""Moving FindDB contents between databases and files: export, import, merge.

Two file formats:

* ``miofind``: JSON Lines. The first line is the header ``{"format": "miofind-db", "version": 1}``,
  then one object per find record (``{"type": "find", ...every Record field}``) and per tuned config
  (``{"type": "perf", ...every PerfRecord field}``). Floats are written by ``json`` (``repr``), so
  they re-import bit for bit. Failed configs of tuning are not exported (they only matter to a
  resumed tune on the same machine), nor are the find failures a find records (``FindFailure``):
  they are observations of one machine's run (a failure there may come from its driver or from
  what else ran), and a find on the importing machine records its own after one benchmark, so
  no file can make a find skip a candidate. A signed export ends with a signature line (below).
* ``miopen``: MIOpen's text FindDB, one line per problem:
  ``KEY=Solver:time_ms,workspace_bytes,algorithm;Solver2:...`` with the solvers fastest first. One file
  holds one device; importing needs the device to file the records under. Import also reads the
  older form MIOpen shipped for gfx803-gfx1030, ``KEY=algorithm:Solver,time_ms,workspace_bytes,
  kcache_algorithm,kcache_config;...`` (the last two name MIOpen's kernel cache and are dropped).

**Imports are all-or-nothing.** Imported files are untrusted data. They are read one line at a time,
each line at most ``max_line`` bytes (64 KiB by default), so memory stays bounded on any input
(``/dev/zero`` stops at its first 64 KiB). Every line is parsed with ``json.loads`` or plain string
splitting (no pickle, no eval); every value goes through the Record / PerfRecord constructors and
the column limits of the schema; every key must re-serialise to itself; every solver id must name a
live solver; a miofind record's device must be ``sm_<cc>-<SMs>[-<name>]`` as
``device.device_from_string`` reads it; and every record must pass the checks of ``db verify``
(``maintenance.RecordChecker``: the solver applies, the config validates, the workspace size is the
one the solver asks for), so verify never flags what an import accepted. A line or entry that fails a
check is skipped, with its line number and reason (``ImportReport.skipped``). The records that pass
are written at the end, in one transaction. Anything fatal (an unknown header, an over-long line, a
bad signature, more than ``max_records`` records, a read error, a record the database refuses)
raises with its line number and writes nothing. Within a file, the last record of a (device, problem,
solver) wins in the miofind format and the first (the fastest) in MIOpen's.

**Imported records are not believed.** They are stored with ``verified=False`` and the trust key
``imported:<the file's key>``, which never equals a solver's (``miofind.trust``): a find never
answers from them, and ``db prune`` deletes them as stale. They are hints (ranking, what to tune)
until a find measures the problem here, and they never replace a record or tuned config the FindDB
already holds. The one exception is a miofind export its producer signed with a key the user
configured: ``export_records(..., sign_key=K)`` (``miofind db export --sign``; K from
``MIOFIND_IMPORT_KEY`` or ``--key-file``) ends the file with the line
``{"type": "signature", "algorithm": "hmac-sha256", "lines": N, "hmac": "<hex>"}``, the HMAC-SHA256
under K of the N non-blank lines before it, from the header on, each without its line break and
followed by ``\\n``. Imported with the same key (``sign_key``), a file whose signature matches is
stored as written (verified flags and trust keys included; its records replace existing ones); a
signature that does not match stops the import; a signed file imported without a key is stored
untrusted. A header line starts a new part (concatenated exports): each part is trusted only when
it ends in its own valid signature. Share the key only between machines whose measurements you trust.

Records imported from a MIOpen file are always untrusted: ``verified=False``, empty
``package_version`` and ``kernel_hash``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, TextIO

import sqlalchemy as sa

from . import findb as _findb
from .findb import FindDB, FindDBError, FindDBWarning, PerfRecord, Record, dialect_insert

__all__ = ["export_records", "import_records", "merge_into", "check_device", "amd_file_token", "ImportReport",
           "MergeReport", "FORMATS", "HEADER", "BATCH", "MAX_LINE", "MAX_RECORDS", "SIGN_ALGORITHM",
           "UNTRUSTED_PREFIX", "MIN_KEY_BYTES"]

FORMATS = ("miofind", "miopen")
HEADER = {"format": "miofind-db", "version": 1}
BATCH = 500                 # rows per statement when writing
MAX_LINE = 64 * 1024        # default longest line, bytes (characters for a text stream)
MAX_RECORDS = 1_000_000     # default most distinct records one import holds in memory before writing
MAX_MESSAGES = 1000         # skip reasons kept in an ImportReport (all are counted)
SIGN_ALGORITHM = "hmac-sha256"
UNTRUSTED_PREFIX = "imported:"
MIN_KEY_BYTES = 16

_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(Record))
_PERF_FIELDS = tuple(f.name for f in dataclasses.fields(PerfRecord))
# MIOpen entry fields: a plain decimal or exponent float, a plain non-negative integer
_TIME_RE = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_INT_RE = re.compile(r"\d+")
_MAX_BIGINT = 2**63 - 1
_MAX_INT = 2**31 - 1
_AMD_DEVICE_RE = re.compile(r"gfx[0-9a-f]{3,4}-[1-9]\d{0,5}")
_AMD_FILE_RE = re.compile(r"gfx[0-9a-f]+(?:_\d+)?", re.I)


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"fmt={fmt!r}: expected one of {', '.join(FORMATS)}")


def _check_key(sign_key: Any, name: str = "sign_key") -> None:
    if sign_key is None:
        return
    if not isinstance(sign_key, bytes):
        raise ValueError(f"{name}: expected bytes, got {type(sign_key).__name__}")
    if len(sign_key) < MIN_KEY_BYTES:
        raise ValueError(f"{name}: {len(sign_key)} bytes; a signing key needs at least {MIN_KEY_BYTES}")


def check_device(device: Any, *, amd: bool = False, option: str = "device") -> str:
    """``device`` if it names a device in the form the FindDB files records under, else a one-line
    ValueError naming ``option``: ``sm_<cc>-<SM count>[-<name>]`` as ``DeviceInfo.db_name`` writes it
    (``device.device_from_string`` reads it); with ``amd``, also an AMD GPU as ``gfx<arch>-<CU count>``
    (``gfx90a-104``: where MIOpen's own FindDB files belong)."""
    from ..device import device_from_string

    if amd and isinstance(device, str) and _AMD_DEVICE_RE.fullmatch(device):
        return device
    try:
        dev = device_from_string(device, option=option)
    except ValueError as e:
        if amd:
            raise ValueError(f"{e}; or, for MIOpen records of an AMD GPU, gfx<arch>-<CU count>, e.g. gfx90a-104") \
                from None
        raise
    if dev.db_name != device:
        raise ValueError(f"{option}={device!r}: not as the FindDB writes it; write {dev.db_name!r}")
    return device


def amd_file_token(name: str) -> str | None:
    """The AMD architecture token in a MIOpen FindDB file's name (``gfx90a68`` in
    ``gfx90a68.HIP.fdb.txt``, ``gfx906_64`` in ``miopen_gfx906_64.HIP.fdb.txt``), or None."""
    m = _AMD_FILE_RE.search(name.replace("\\", "/").rsplit("/", 1)[-1])
    return m.group(0) if m else None


# -- export ----------------------------------------------------------------------------------------

def _as_dict(obj: Any, names: tuple[str, ...]) -> dict[str, Any]:
    # a record of the specialised build leaves out ``build``: its line reads as before schema 4
    return {name: getattr(obj, name) for name in names
            if not (name == "build" and getattr(obj, name) == "specialized")}


def export_records(db: FindDB, fh: TextIO, *, fmt: str = "miofind", device: str | None = None,
                   sign_key: bytes | None = None) -> int:
    """Write the FindDB's records (of ``device`` if given) to the text stream ``fh``; returns the lines written.

    ``fmt="miofind"``: the header line, then the find records and the tuned configs, each ordered by
    device, problem key and solver (the header counts as a line); with ``sign_key`` (bytes, at least
    16), a last line signing the others (see the module doc) so that an import with the same key
    trusts them. ``fmt="miopen"``: one line per problem key of one device, sorted by key, solvers
    fastest first, times written with ``repr``; a FindDB holding several devices needs ``device``
    (ValueError listing them otherwise); it cannot be signed. A record that MIOpen's format cannot
    represent (a separator in a field) is left out with a FindDBWarning.
    """
    _check_format(fmt)
    _check_key(sign_key)
    if fmt == "miofind":
        return _export_miofind(db, fh, device, sign_key)
    if sign_key is not None:
        raise ValueError("sign_key: MIOpen's text format cannot carry a signature; sign a miofind-format export")
    return _export_miopen(db, fh, device)


def _export_miofind(db: FindDB, fh: TextIO, device: str | None, sign_key: bytes | None) -> int:
    mac = hmac.new(sign_key, digestmod=hashlib.sha256) if sign_key is not None else None
    n = 0

    def put(obj: dict) -> None:
        nonlocal n
        line = json.dumps(obj) + "\n"
        fh.write(line)
        if mac is not None:
            mac.update(line.encode("utf-8"))
        n += 1

    put(HEADER)
    for r in sorted(db.iter_records(device=device), key=lambda r: r.db_key):
        put({"type": "find", **_as_dict(r, _RECORD_FIELDS)})
    for p in sorted(db.iter_perf(device=device), key=lambda r: r.db_key):
        put({"type": "perf", **_as_dict(p, _PERF_FIELDS)})
    if mac is not None:
        fh.write(json.dumps({"type": "signature", "algorithm": SIGN_ALGORITHM, "lines": n,
                             "hmac": mac.hexdigest()}) + "\n")
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
    """What an import wrote and what it skipped.

    ``find`` and ``perf`` count the rows written (distinct device, problem and solver); ``trusted``
    how many of those were stored as the file states them (a part with a valid signature), the rest
    being untrusted hints. ``skipped`` holds "line N: why" in line order (the first 1000; ``n_skipped``
    counts them all). ``notes`` says what else the user should know (a signature left unchecked).
    """

    find: int = 0
    perf: int = 0
    skipped: list[str] = field(default_factory=list)
    n_skipped: int = 0
    trusted: int = 0
    notes: list[str] = field(default_factory=list)


def _solver_problem(solver_id: Any, solvers: dict) -> str | None:
    """Why ``solver_id`` is not the DB name of a live solver, or None."""
    if not isinstance(solver_id, str):
        return f"solver_id={solver_id!r}: expected a string"
    if solver_id not in solvers:
        return f"solver_id={solver_id!r}: unknown solver"
    return None if solvers[solver_id] is not None else f"solver_id={solver_id!r}: retired solver"


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


def _physical_lines(fh: Any, max_line: int) -> Iterator[tuple[int, str | bytes]]:
    """(line number, line without its line break) for every line of ``fh``. A stream is read with
    ``readline(max_line + 2)``, so no line costs more memory than that; a longer line raises
    ValueError with its number."""
    readline = getattr(fh, "readline", None)
    if callable(readline):
        def chunks() -> Iterator[str | bytes]:
            no = 1
            while True:
                try:
                    line = readline(max_line + 2)
                except OSError as e:
                    raise OSError(f"line {no}: cannot read it ({e.strerror or e}); nothing imported") from None
                if not line:
                    return
                yield line
                no += 1
        source: Iterable = chunks()
    else:
        source = fh
    for no, line in enumerate(source, 1):
        if isinstance(line, str):
            nl, cr = "\n", "\r"
        elif isinstance(line, (bytes, bytearray)):
            nl, cr = b"\n", b"\r"
        else:
            raise ValueError(f"line {no}: expected text or bytes, got {type(line).__name__}")
        body = line[:-1] if line.endswith(nl) else line
        body = body[:-1] if body.endswith(cr) else body
        if len(body) > max_line:
            raise ValueError(f"line {no}: longer than {max_line} {'characters' if nl == chr(10) else 'bytes'} "
                             "(the maximum line length); nothing imported")
        yield no, body


def _check_header(obj: Any, no: int) -> None:
    fmt, ver = obj.get("format"), obj.get("version")
    if fmt != HEADER["format"] or type(ver) is not int or ver != HEADER["version"]:
        raise ValueError(f"line {no}: unknown file format {fmt!r} version {ver!r} (this miofind reads "
                         f"{HEADER['format']!r} version {HEADER['version']}); nothing imported")


@dataclass
class _Item:
    no: int          # line number
    obj: Any         # the validated Record or PerfRecord, as the file states it
    part: int        # index into _Import.parts (miofind format), -1 for a MIOpen entry
    where: str = ""  # "entry i (solver): " within a MIOpen line


class _Refused(Exception):
    def __init__(self, no: int, why: str) -> None:
        super().__init__(why)
        self.no, self.why = no, why


class _Import:
    """One import: reads and validates every line, then writes what passed in one transaction."""

    def __init__(self, db: FindDB, fmt: str, device: str | None, device_name: str, sign_key: bytes | None,
                 max_line: int, max_records: int) -> None:
        from .maintenance import RecordChecker

        self.db, self.fmt, self.device, self.device_name = db, fmt, device, device_name
        self.sign_key, self.max_line, self.max_records = sign_key, max_line, max_records
        self.report = ImportReport()
        self.checker = RecordChecker()
        self.items: dict[tuple, _Item] = {}
        self.parts: list[bool] = []           # per miofind part: signed with a valid signature
        self.messages: list[tuple[int, int, str]] = []  # (line, order, text), trimmed to the first lines

    # -- reporting --

    def skip(self, no: int, why: str) -> None:
        self.report.n_skipped += 1
        self.messages.append((no, self.report.n_skipped, f"line {no}: {why}"))
        if len(self.messages) > 2 * MAX_MESSAGES:
            self.messages = sorted(self.messages)[:MAX_MESSAGES]

    def _text_lines(self, fh: Any) -> Iterator[tuple[int, str, bytes]]:
        """(line number, text, the bytes a signature covers) of every non-blank line; a line that
        is not UTF-8 is skipped here but still passed to ``on_undecodable`` for the signature."""
        for no, raw in _physical_lines(fh, self.max_line):
            if no == 1:
                raw = raw[1:] if isinstance(raw, str) and raw.startswith("\ufeff") else \
                    raw[3:] if isinstance(raw, (bytes, bytearray)) and raw.startswith(b"\xef\xbb\xbf") else raw
            if isinstance(raw, str):
                text, data = raw, raw.encode("utf-8", "surrogatepass")
            else:
                data = bytes(raw)
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as e:
                    if data.strip():
                        self.on_undecodable(no, data)
                        self.skip(no, f"not UTF-8 ({e.reason} at byte {e.start})")
                    continue
            if text.strip():
                yield no, text, data

    def on_undecodable(self, no: int, data: bytes) -> None:
        pass

    # -- validation --

    def problem(self, obj: Any, kind: str) -> str | None:
        """Why a constructed record may not be stored, or None."""
        key = obj.problem_key
        _, why = self.checker.problem(key)
        if why:
            return f"problem_key: {why}"
        why = _solver_problem(obj.solver_id, self.checker.solvers) or \
            _column_problem(obj, _findb._KINDS[type(obj)][0])
        if why:
            return why
        if self.fmt == "miofind":
            try:
                check_device(obj.device)
            except ValueError as e:
                return str(e)
        found = self.checker.check_record(kind, obj)
        if found:
            return "; ".join(f"{p.message} (db verify: {p.check})" for p in found)
        return None

    def keep(self, no: int, obj: Any, part: int, where: str = "") -> None:
        k = (type(obj), obj.db_key)
        old = self.items.get(k)
        if old is not None:
            if self.fmt == "miopen":
                self.skip(no, f"{where}a second entry for {obj.solver_id} (first on line {old.no}); the first is kept")
                return
            self.skip(old.no, f"{old.where}superseded by line {no} (the same device, problem and solver)")
        elif len(self.items) >= self.max_records:
            raise ValueError(f"line {no}: more than {self.max_records} records (the most one import holds); "
                             "nothing imported: split the file")
        self.items[k] = _Item(no, obj, part, where)

    def add(self, no: int, cls: type, values: dict[str, Any], part: int, where: str = "") -> None:
        try:
            obj = cls(**values)
        except (TypeError, ValueError) as e:
            self.skip(no, f"{where}{e}")
            return
        why = self.problem(obj, "find" if cls is Record else "perf")
        if why:
            self.skip(no, f"{where}{why}")
            return
        self.keep(no, obj, part, where)

    # -- the miofind format --

    def read_miofind(self, fh: Any) -> None:
        mac, hashed, signed_at = None, 0, None

        def new_part() -> None:
            nonlocal mac, hashed, signed_at
            self.parts.append(False)
            mac = hmac.new(self.sign_key, digestmod=hashlib.sha256) if self.sign_key is not None else None
            hashed, signed_at = 0, None

        def covered(data: bytes) -> None:
            nonlocal hashed
            hashed += 1
            if mac is not None:
                mac.update(data + b"\n")

        def undecodable(no: int, data: bytes) -> None:
            if self.parts:
                covered(data)
        self.on_undecodable = undecodable

        for no, line, data in self._text_lines(fh):
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError) as e:  # JSONDecodeError, or an integer too long to convert
                if not self.parts:
                    raise ValueError(f"line {no}: not a miofind-db file (the first line is not a JSON header)") from None
                covered(data)
                self.skip(no, f"not valid JSON ({getattr(e, 'msg', e)})")
                continue
            if isinstance(obj, dict) and "format" in obj and "type" not in obj:
                _check_header(obj, no)  # a repeated header (concatenated exports) must match too
                new_part()
                covered(data)
                continue
            if not self.parts:
                raise ValueError(f"line {no}: not a miofind-db file (no {json.dumps(HEADER)} header line first)")
            if signed_at is not None:
                raise ValueError(f"line {no}: a line after the signature on line {signed_at} (a signed export ends "
                                 "with its signature, or another header follows); nothing imported")
            if isinstance(obj, dict) and obj.get("type") == "signature":
                self.signature(no, obj, mac, hashed)
                signed_at = no
                continue
            covered(data)
            if not isinstance(obj, dict):
                self.skip(no, f"expected a JSON object, got {type(obj).__name__}")
                continue
            kind = obj.pop("type", None)
            cls, names = {"find": (Record, _RECORD_FIELDS), "perf": (PerfRecord, _PERF_FIELDS)}.get(kind, (None, ()))
            if cls is None:
                self.skip(no, f"type={kind!r}: expected 'find' or 'perf'")
                continue
            unknown = sorted(set(obj) - set(names))
            if unknown:
                self.skip(no, f"unknown field(s) {', '.join(map(repr, unknown))}")
                continue
            if self.device is not None and obj.get("device") != self.device:
                self.skip(no, f"device={obj.get('device')!r} is not the requested {self.device!r}")
                continue
            self.add(no, cls, obj, len(self.parts) - 1)

    def signature(self, no: int, obj: dict, mac: Any, hashed: int) -> None:
        want = {"type", "algorithm", "lines", "hmac"}
        sig, lines = obj.get("hmac"), obj.get("lines")
        if (set(obj) != want or obj.get("algorithm") != SIGN_ALGORITHM or type(lines) is not int
                or not isinstance(sig, str) or not re.fullmatch(r"[0-9a-f]{64}", sig)):
            raise ValueError(f"line {no}: malformed signature line (expected {{\"type\": \"signature\", \"algorithm\": "
                             f"\"{SIGN_ALGORITHM}\", \"lines\": N, \"hmac\": \"<64 hex digits>\"}}); nothing imported")
        if mac is None:
            self.report.notes.append(f"line {no}: the file is signed, but no key was given (MIOFIND_IMPORT_KEY or "
                                     "--key-file): its records are stored untrusted")
            return
        if lines != hashed:
            raise ValueError(f"line {no}: the signature covers {lines} lines but {hashed} precede it: lines were "
                             "added or removed after signing; nothing imported")
        if not hmac.compare_digest(mac.hexdigest(), sig):
            raise ValueError(f"line {no}: the signature does not match the key: the file was changed after signing, "
                             "or signed with another key; nothing imported")
        self.parts[-1] = True

    # -- MIOpen's format --

    def read_miopen(self, fh: Any) -> None:
        now = time.time()
        for no, line, _ in self._text_lines(fh):
            key, sep, rest = line.partition("=")
            if not sep:
                self.skip(no, "expected KEY=Solver:time_ms,workspace_bytes,algorithm;...")
                continue
            _, why = self.checker.problem(key)
            if why:
                self.skip(no, f"problem_key: {why}")
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
                    self.skip(no, f"entry {i} ({sid[:50] or '?'}): expected Solver:time_ms,workspace_bytes,algorithm "
                              "(or algorithm:Solver,time_ms,workspace_bytes,kcache_algorithm,kcache_config), got "
                              f"{entry[:200]!r}")
                    continue
                where = f"entry {i} ({sid[:50] or '?'}): "
                if not _TIME_RE.fullmatch(t):
                    self.skip(no, f"{where}time_ms={t[:50]!r}: expected a non-negative decimal number")
                    continue
                if not _INT_RE.fullmatch(ws):
                    self.skip(no, f"{where}workspace_bytes={ws[:50]!r}: expected a non-negative integer")
                    continue
                if len(ws.lstrip("0")) > 19 or int(ws) > _MAX_BIGINT:  # int() of 4300+ digits raises
                    self.skip(no, f"{where}workspace_bytes={ws[:50]!r}{'...' if len(ws) > 50 else ''}: too large")
                    continue
                first = self.items.get((Record, (self.device, key, sid)))
                if first is not None:  # before any work: a line may repeat one entry thousands of times
                    self.skip(no, f"{where}a second entry for {sid[:50]} (first on line {first.no}); the first is kept")
                    continue
                values = dict(device=self.device, device_name=self.device_name, problem_key=key, solver_id=sid,
                              algorithm=algo, time_ms=float(t), workspace_bytes=int(ws), config=None, verified=False,
                              package_version="", kernel_hash="", created_at=now)
                self.add(no, Record, values, -1, where)

    # -- writing --

    def final(self, item: _Item) -> tuple[Any, bool]:
        """The object to store for an item, and whether it is stored as the file states it."""
        if item.part >= 0 and self.parts[item.part]:
            return item.obj, True
        if item.part < 0:
            return item.obj, False  # a MIOpen entry is built untrusted
        old = item.obj.kernel_hash
        key = (old if old.startswith(UNTRUSTED_PREFIX) else UNTRUSTED_PREFIX + old)[:128]
        changes = {"kernel_hash": key, **({"verified": False} if isinstance(item.obj, Record) else {})}
        return dataclasses.replace(item.obj, **changes), False

    def write(self) -> None:
        plan = {Record: [], PerfRecord: []}
        for item in self.items.values():
            obj, trusted = self.final(item)
            plan[type(obj)].append((item, _findb._to_row(obj), trusted))
        dialect = self.db._engine.dialect.name

        def run(con: sa.Connection) -> tuple[dict, int, list]:
            counts, trusted_n, kept = {Record: 0, PerfRecord: 0}, 0, []
            for cls, rows in plan.items():
                if not rows:
                    continue
                table, keys = _findb._KINDS[cls]
                untrusted = [r for r in rows if not r[2]]
                present: set = set()
                if untrusted:
                    devices = sorted({r[1]["device"] for r in untrusted})
                    q = sa.select(*(table.c[k] for k in keys)).where(table.c.device.in_(devices))
                    present = {tuple(x) for x in con.execute(q)}
                what = "record" if cls is Record else "tuned config"
                for replace in (True, False):
                    todo = []
                    for item, row, trusted in rows:
                        if trusted != replace:
                            continue
                        if not trusted and tuple(row[k] for k in keys) in present:
                            kept.append((item.no, f"{item.where}the FindDB already holds a {what} for "
                                                  f"({row['device']}, {row['problem_key']}, {row['solver_id']}); "
                                                  "kept (an untrusted import never replaces one)"))
                            continue
                        todo.append((item.no, row))
                    _write_rows(con, dialect, table, keys, todo, replace)
                    counts[cls] += len(todo)
                    trusted_n += len(todo) if replace else 0
            return counts, trusted_n, kept

        if not any(plan.values()):
            return
        try:
            counts, trusted_n, kept = self.db._run("import records", run, write=True)
        except _Refused as e:
            raise FindDBError(f"line {e.no}: the database refused it: {e.why}; nothing imported") from None
        self.report.find, self.report.perf, self.report.trusted = counts[Record], counts[PerfRecord], trusted_n
        for no, why in kept:
            self.skip(no, why)

    def finish(self) -> ImportReport:
        self.report.skipped = [m for _, _, m in sorted(self.messages)[:MAX_MESSAGES]]
        return self.report


def _write_rows(con: sa.Connection, dialect: str, table: sa.Table, keys: tuple[str, ...],
                rows: list[tuple[int, dict]], replace: bool) -> None:
    """Insert ``rows`` ((line, row) pairs); an existing row of the same key is replaced, or with
    ``replace`` False kept. A statement the database refuses is retried row by row, in savepoints,
    to name the line (``_Refused``); the caller's transaction then rolls everything back."""
    data = _findb._data_cols(table)
    if dialect in ("sqlite", "postgresql"):
        ins = dialect_insert(dialect)(table)
        stmt = (ins.on_conflict_do_update(index_elements=list(keys), set_={c: ins.excluded[c] for c in data
                                                                           if c not in keys})
                if replace else ins.on_conflict_do_nothing(index_elements=list(keys)))

        def put(batch: list[dict]) -> None:
            con.execute(stmt, batch)
    else:
        def put(batch: list[dict]) -> None:
            for row in batch:
                cond = sa.and_(*(table.c[c] == row[c] for c in keys))
                if con.execute(sa.select(table.c.id).where(cond)).first() is None:
                    con.execute(sa.insert(table).values(row))
                elif replace:
                    con.execute(sa.update(table).where(cond).values(row))

    for i in range(0, len(rows), BATCH):
        batch = rows[i:i + BATCH]
        try:
            with con.begin_nested():
                put([row for _, row in batch])
        except sa.exc.DBAPIError as e:
            if _findb._is_lock_error(e):
                raise  # FindDB._run retries the whole transaction
            for no, row in batch:
                try:
                    with con.begin_nested():
                        put([row])
                except sa.exc.DBAPIError as e1:
                    raise _Refused(no, _findb._first_line(e1)) from None
            raise


def import_records(db: FindDB, fh: Any, *, fmt: str = "miofind", device: str | None = None, device_name: str = "",
                   sign_key: bytes | None = None, max_line: int = MAX_LINE,
                   max_records: int = MAX_RECORDS) -> ImportReport:
    """Read records from ``fh`` (a binary or text stream, or an iterable of lines) into ``db`` in one
    transaction; returns an ImportReport. See the module doc for what is checked and trusted.

    ``fmt="miofind"`` restores find records and tuned configs as exported; with ``device`` (in
    ``sm_<cc>-<SMs>[-<name>]`` form) only that device's lines are imported. Its first line must be
    the header. Records are stored untrusted unless the file is signed with ``sign_key`` (bytes).
    ``fmt="miopen"`` needs ``device``, the device the records are filed under (``sm_...``, or an
    AMD GPU's ``gfx<arch>-<CUs>``), which ``device_name`` describes; its records are untrusted hints.
    An untrusted record never replaces one the FindDB holds. Lines that fail validation are skipped
    with their numbers and reasons; a line over ``max_line`` bytes (characters for a text stream),
    more than ``max_records`` distinct records, a bad header or signature raise ValueError naming
    the line; a record the database refuses raises FindDBError naming it. On any exception nothing
    is written.
    """
    _check_format(fmt)
    _check_key(sign_key)
    if not isinstance(device_name, str):
        raise ValueError(f"device_name={device_name!r}: expected a string")
    for name, v in (("max_line", max_line), ("max_records", max_records)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r}: expected a positive integer")
    if fmt == "miopen":
        if not isinstance(device, str) or not device:
            raise ValueError(f"device={device!r}: a MIOpen FindDB file names no device; give the device its "
                             "records belong to (e.g. sm_90-132)")
        check_device(device, amd=True)
    elif device is not None:
        check_device(device)
    if db.readonly:
        raise FindDBError(f"FindDB {db.url} is read-only")
    imp = _Import(db, fmt, device, device_name, sign_key, max_line, max_records)
    if fmt == "miofind":
        imp.read_miofind(fh)
    else:
        imp.read_miopen(fh)
    imp.write()
    return imp.finish()


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
