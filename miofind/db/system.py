"""System and user databases, as MIOpen layers them.

System FindDBs ship read-only inside the package (``finddb/<arch>-<SMs>.sqlite``, e.g.
``sm_90-132.sqlite`` for an H100 SXM). The one for this GPU is the file of the same architecture
with the nearest SM count (an exact match when there is one). The user DB overlays it: per problem,
a usable user answer wins over the system's; every write goes to the user DB.

``$MIOFIND_SYSTEM_DB`` overrides the choice: a file path, or ``none`` to use no system DB.
"""

from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from .. import env
from .base import FindDBError, FindDBWarning

if TYPE_CHECKING:
    from .findb import FindDB

__all__ = ["system_db_files", "system_db_override", "system_db_path", "open_system_db", "Overlay"]

_NAME_RE = re.compile(r"^(sm_\d+)-(\d+)\.sqlite$")
_log = logging.getLogger(__name__)


def _finddb_dir() -> Path:
    return Path(str(resources.files("miofind.finddb")))


def system_db_files() -> dict[tuple[str, int], Path]:
    """The shipped system DBs by (architecture, SM count)."""
    out = {}
    d = _finddb_dir()
    if d.is_dir():
        for p in sorted(d.iterdir()):
            m = _NAME_RE.match(p.name)
            if m:
                out[(m.group(1), int(m.group(2)))] = p
    return out


def system_db_override() -> tuple[bool, Path | None]:
    """``$MIOFIND_SYSTEM_DB``: (False, None) when unset; (True, None) for ``none``; (True, path) for a file,
    which is then the system DB whatever the device."""
    override = env.system_db()
    if override is None:
        return False, None
    return True, None if override == "none" else override


def system_db_path(arch: str, sm_count: int) -> Path | None:
    """The system DB for a GPU: same architecture, nearest SM count (ties: the larger); None if none."""
    overridden, path = system_db_override()
    if overridden:
        return path
    same = [(abs(sms - sm_count), -sms, p) for (a, sms), p in system_db_files().items() if a == arch]
    return min(same)[2] if same else None


_opened: dict[Path, FindDB | None] = {}


def open_system_db(arch: str, sm_count: int) -> FindDB | None:
    """The system DB opened read-only and immutable (cached per process); None if there is none or it
    cannot be read (a FindDBWarning says why: work continues without it)."""
    path = system_db_path(arch, sm_count)
    if path is None:
        _log.debug("no system FindDB for %s with %d SMs%s", arch, sm_count,
                  " (MIOFIND_SYSTEM_DB=none)" if env.system_db() == "none" else "")
        return None
    if path not in _opened:
        from .findb import FindDB

        _log.info("system FindDB for %s with %d SMs: %s%s", arch, sm_count, path,
                  " (MIOFIND_SYSTEM_DB)" if env.system_db() is not None else "")
        try:
            _opened[path] = FindDB(str(path), readonly=True, immutable=True)
        except FindDBError as e:
            warnings.warn(f"system FindDB not used: {e}", FindDBWarning, stacklevel=2)
            _opened[path] = None
    return _opened[path]


@dataclass
class Overlay:
    """The user DB (takes every write) over the system DB (read-only, may be None). A read-only
    overlay (immediate mode) may have no user DB at all, when its file does not exist yet."""

    user: FindDB | None
    system: FindDB | None = None

    @property
    def layers(self) -> list[tuple[str, FindDB]]:
        return ([("user", self.user)] if self.user is not None else []) + \
            ([("system", self.system)] if self.system is not None else [])

    def lookup(self, device: str, problem_key: str):
        """(layer name, records) per layer, user first. System DBs are chosen by device already, so
        their records are read whatever device string they carry (the nearest SM count's)."""
        return [(name, db.lookup(device if name == "user" else None, problem_key)) for name, db in self.layers]

    def find_failures(self, device: str, problem_key: str):
        """The recorded find failures of every layer, user first, read by device as ``lookup`` reads records."""
        return [f for name, db in self.layers for f in db.find_failures(device if name == "user" else None, problem_key)]

    def lookup_perf(self, device: str, problem_key: str, solver_id: str):
        for name, db in self.layers:
            got = db.lookup_perf(device if name == "user" else None, problem_key, solver_id)
            if got:
                yield name, got


@dataclass
class PerfSnapshot(Overlay):
    """An Overlay whose PerfDB records of a problem are read once, every solver's in one query per layer, and then
    answered from that snapshot (``lookup_perf``): a find asks for a candidate's tuned config several times (cuDNN's
    prefetch, the predicted deferral, the configs), and each ask of a user FindDB read through ``fastread`` opens the
    file (0.2-0.5 ms in a warm find, bench/results/session-dec01c/call3/). For the span of one find only: records
    stored after the snapshot are not in it. ``of(overlay)`` makes one of an Overlay's layers."""

    def __post_init__(self) -> None:
        self._perf: dict[tuple[str, str], list] = {}

    @classmethod
    def of(cls, dbs: Overlay) -> "PerfSnapshot":
        return cls(dbs.user, dbs.system)

    def lookup_perf(self, device: str, problem_key: str, solver_id: str):
        got = self._perf.get((device, problem_key))
        if got is None:
            got = []
            for name, db in self.layers:
                by: dict[str, list] = {}
                for r in db.lookup_perf(device if name == "user" else None, problem_key, None):
                    by.setdefault(r.solver_id, []).append(r)    # each solver's records in the layer's order
                got.append((name, by))
            self._perf[(device, problem_key)] = got
        for name, by in got:
            if by.get(solver_id):
                yield name, by[solver_id]
