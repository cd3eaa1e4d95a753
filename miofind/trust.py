"""Trust: whether a stored FindDB or PerfDB entry still describes what this installation would run.

A record is trusted when its **trust key** equals the solver's current one and it was measured
under the same CUDA major version. The trust key holds what decides a kernel's behaviour and
nothing else:

- ``src``: a digest of the solver's kernel sources as compiled (our ``#include`` headers expanded),
  with C/C++ comments and blank lines removed. Renaming a file or editing a comment keeps it;
  changing a line of code changes it.
- ``v``: the solver's ``version`` integer, bumped by hand when its Python-side launch logic changes
  (macros, launch geometry, workspace layout). An explicit number rather than a hash of the Python
  source, so that docstrings, comments, helper moves and renames never untrust a shipped record
  (rebuilding the shipped H100 DB costs about three GPU hours). ``tests/core/test_trust.py`` pins a
  fingerprint of each solver's code (its AST without docstrings) next to its version, so a change
  to the code fails that test until the author either bumps ``version`` or re-records the
  fingerprint, deciding consciously whether behaviour changed.
- the versions of the libraries that run part of the solution (cuDNN for the cuDNN-backed solvers,
  cuFFT for FFT), from ``Solver.library_versions()``.

The key is a greppable string, e.g. ``src=3f1c0a9be2d45e71;v=1;cufft=12000``. Without a GPU or
the library, a library's version may be unreadable: ``compare`` then says "unknown" rather than
guessing.
"""

from __future__ import annotations

import functools
import hashlib
import re

from .solver import Solver

__all__ = ["trust_key", "source_digest", "parse_key", "compare", "is_trusted", "other_model", "UNKNOWN"]

UNKNOWN = "?"
_COMMENT_RE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def _strip_comments(src: str) -> str:
    """C/C++ source without comments (string and character literals kept), trailing spaces and
    blank lines."""
    def repl(m: re.Match) -> str:
        s = m.group(0)
        return " " if s.startswith("/") else s

    text = _COMMENT_RE.sub(repl, src)
    return "\n".join(ln.rstrip() for ln in text.splitlines() if ln.strip())


@functools.lru_cache(maxsize=None)
def _file_digest(name: str) -> str:
    from .compile import expand_source, kernel_path
    from .fileio import stamp

    known, key = _digest_cache(), kernel_path(name)    # keyed by path: two installs share one cache
    hit = known.get(key)
    if hit is not None and hit.get("deps") and all(stamp(d) == st for d, st in hit["deps"].items()):
        return hit["digest"]
    # each file stamped just before its read, and all again after: kept only if no file changed meanwhile
    text, before = expand_source(name, stamp)
    # the expansion prefixes a "// miofind kernel <name>" line: a comment, so stripped with the rest
    digest = hashlib.sha256(_strip_comments(text).encode()).hexdigest()
    if all(before.values()) and all(stamp(p) == st for p, st in before.items()):
        known[key] = {"deps": before, "digest": digest}
        _unsaved.add(key)
    return digest


# Digests of kernel sources carry over between processes in ``<kernel cache>/source-digests.json``,
# each valid while every file it read (the source and the headers it includes) has the stamp
# (``fileio.stamp``: size, modification and change times, inode, device) it had then, so a restored
# modification time does not revive a stale digest. Reading the file and stat-ing the sources costs
# well under a millisecond; stripping and hashing every source of a direction's solvers costs 4-5 ms
# of a first find (bench/results/hot-path/first-find-stages/).
_DIGESTS_FILE = "source-digests.json"
_unsaved: set[str] = set()     # entries computed by this process, not yet written


@functools.lru_cache(maxsize=1)
def _digest_cache() -> dict:
    from .compile import read_cache_json

    data = read_cache_json(_DIGESTS_FILE) or {}
    return data["files"] if data.get("v") == 1 and isinstance(data.get("files"), dict) else {}


def _store_digests(known: dict) -> None:
    """Write the digests back (best effort: a cache directory that cannot be used leaves every later
    process computing them, as before)."""
    from .compile import write_cache_json

    write_cache_json(_DIGESTS_FILE, {"v": 1, "files": known})
    _unsaved.clear()


def source_digest(files) -> str:
    """Digest of kernel sources as compiled, independent of their file names and order."""
    if not files:
        return "none"
    h = hashlib.sha256()
    for d in sorted({_file_digest(f) for f in files}):
        h.update(d.encode())
    if _unsaved:
        _store_digests(_digest_cache())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def trust_key(solver: Solver) -> str:
    """The solver's current trust key (see the module docstring). Library versions that cannot be
    read here (no library, no GPU) appear as ``name=?``."""
    parts = [f"src={source_digest(getattr(solver, 'kernel_files', ()))}", f"v={int(solver.version)}"]
    for lib, ver in sorted(solver.library_versions().items()):
        parts.append(f"{lib}={ver if ver else UNKNOWN}")
    return ";".join(parts)


def parse_key(key: str) -> dict[str, str] | None:
    """A trust key's fields, or None when ``key`` is not one (a pre-0.2 kernel hash, empty)."""
    if not key or "src=" not in key:
        return None
    out = {}
    for part in key.split(";"):
        name, sep, value = part.partition("=")
        if not sep or not name:
            return None
        out[name] = value
    return out if "src" in out and "v" in out else None


def compare(stored: str, current: str) -> tuple[str, str]:
    """("yes" | "no" | "unknown", why) for a stored key against the current one. "unknown" only
    when every readable field matches and a library version on one side cannot be read."""
    if stored == current and parse_key(current) is not None:
        return "yes", "ok"      # the same key, unreadable library versions included
    s, c = parse_key(stored), parse_key(current)
    if s is None:
        return "no", "written before trust keys (kernel hash of an older miofind)"
    if c is None:  # pragma: no cover - trust_key always produces a parseable key
        return "no", f"current trust key {current!r} is malformed"
    if s.get("src") != c["src"]:
        return "no", "kernel source changed since the record was written"
    if s.get("v") != c["v"]:
        return "no", f"solver version {s.get('v')} changed to {c['v']} since the record was written"
    unknown = []
    for lib in sorted(set(s) | set(c)):
        if lib in ("src", "v"):
            continue
        a, b = s.get(lib), c.get(lib)
        if a is None or b is None:
            return "no", f"{lib} version {'missing' if a is None else a} in the record, {b or 'missing'} here"
        if a == UNKNOWN or b == UNKNOWN:
            unknown.append(lib)
        elif a != b:
            return "no", f"written with {lib} {a}, this is {lib} {b}"
    if unknown:
        return "unknown", f"{', '.join(unknown)} version cannot be read here"
    return "yes", "ok"


def is_trusted(record, solver: Solver, cuda_version: str) -> tuple[bool, str]:
    """Whether a stored Record or PerfRecord may be used as is: (True, "ok") or (False, why not).
    Trusted only with the solver's current trust key and under the same CUDA major version; an
    unreadable library version is not trusted."""
    verdict, why = compare(record.kernel_hash, trust_key(solver))
    reasons = [] if verdict == "yes" else [why]
    rec_major, cur_major = record.cuda_version.split(".")[0], cuda_version.split(".")[0]
    if rec_major != cur_major:
        reasons.append(f"written under CUDA {record.cuda_version or '?'}, this is CUDA {cuda_version} "
                       "(major version differs)")
    return (not reasons, "; ".join(reasons) or "ok")


# -- the PerfDB: tuned configs a find may use ----------------------------------------------------

def other_model(record, dev, solver: Solver) -> bool:
    """Whether ``record``'s config was made on another GPU model than ``dev`` and means another kernel here: a
    ``config_device_bound`` solver's (cuBLASLt heuristic places), stored under another device name. Unknown names
    (a device string without one, a record without one) never differ."""
    return bool(solver.config_device_bound and record.device_name and dev.name and record.device_name != dev.name)


def first_trusted_perf(records, dev, problem, solver: Solver, *, where: str | None, consequence: str):
    """The first PerfDB entry of ``records`` that is trusted (trust key, CUDA major) and whose
    config still validates, or None. Each entry passed over is reported with a FindDBWarning naming
    ``where`` it came from and the ``consequence`` (MIOpen's PerfDB: a changed key means re-tune);
    with ``where=None``, silently (a query whose caller does not act on the entry). An entry of
    another GPU model whose config is device-bound (``other_model``) is passed over silently: it is
    no defect of the entry, and the default config is this GPU's own heuristic choice."""
    import warnings

    from .db import FindDBWarning

    for r in records:
        if other_model(r, dev, solver):
            continue
        ok, why = is_trusted(r, solver, dev.cuda_version)
        if ok and not solver.is_valid_config(problem.as_conv(), r.config):
            ok, why = False, "the config no longer validates"
        if ok:
            return r
        if where is not None:
            warnings.warn(f"{where}: tuned config {r.config} of {solver.id} for {problem.key()} is not trusted "
                          f"({why}); {consequence}", FindDBWarning, stacklevel=3)
    return None


def tuned_record(dbs, dev, problem, solver: Solver, *, report: bool = True):
    """The trusted, valid PerfDB entry (user DB over system DB) of a tunable solver for this
    problem, or None. A stored entry that fails validity or comes from another trust key is
    ignored, with a warning unless ``report`` is False."""
    if not solver.tunable:
        return None
    for layer, recs in dbs.lookup_perf(dev.db_name, problem.key(), solver.id):
        r = first_trusted_perf(recs, dev, problem, solver, where=f"{layer} PerfDB" if report else None,
                               consequence="using the default config until it is re-tuned")
        if r is not None:
            return r
    return None


def tuned_config(dbs, dev, problem, solver: Solver, *, report: bool = True):
    """The config of ``tuned_record``, or None."""
    r = tuned_record(dbs, dev, problem, solver, report=report)
    return None if r is None else r.config
