"""Plan hints: the cuDNN plans that the FindDBs recorded for the nearest problems of the same kind.

A find of a problem that no DB holds measures cuDNN's first plans at once and the others once no find runs
(``Solver.configs_now``, ``miofind.tiered``). Listing them runs cuDNN's heuristics (modes A and FALLBACK),
several milliseconds of the find's host time. Where the DBs hold cuDNN records of problems of the same kind
(same filter, pads, strides, dilations, bias, layouts, data types, direction and options), the plans those
records name, the nearest problem's first, are offered instead: the find replays them by engine and knobs
(``solvers.cudnn_base``) and measures them like any plan, and the heuristics' plans follow in the background,
replacing the record where faster. A hint is never an answer: nothing here is trusted or timed.

The index is read once per process, DB and solver (one scan of its records; keys split as strings, not parsed
into problems) and is not refreshed by this process's own writes. ``MIOFIND_CUDNN_HINTS=0`` turns hints off.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import threading

log = logging.getLogger("miofind.find")

# (DB identity, device, solver id) -> {problem kind: [(log2 sizes, plan name)]}
_indexes: dict[tuple, dict[str, list]] = {}
_lock = threading.Lock()


def split_key(key: str) -> tuple[str, tuple[float, ...]] | None:
    """(problem kind, log2 of the key's N and channel and second sizes) of a FindDB key, or None where it does
    not split (the key's own order: a backward key writes them as MIOpen does).

    A key is ``C-<input sizes>-<filter>-K-<output sizes>-N-<pads>-<strides>-<dilations>-<bias>-<layouts>-
    <data types>-<direction><options>`` with 1 to 3 sizes each; the filter is the first field within the
    first five that holds an ``x``, else (1-D) the third. The kind is everything but C, K, N and the sizes."""
    parts = key.split("-")
    i = next((j for j in range(1, min(5, len(parts))) if "x" in parts[j]), None)
    d = 1 if i is None else i - 1
    if len(parts) < 4 + 2 * d + 6:
        return None
    try:
        c, k, n = int(parts[0]), int(parts[2 + d]), int(parts[3 + 2 * d])
        out = [int(v) for v in parts[3 + d:3 + 2 * d]]
    except ValueError:
        return None
    if min(c, k, n, *out) < 1:
        return None
    kind = f"{d}|{parts[1 + d]}|" + "-".join(parts[4 + 2 * d:])
    return kind, tuple(math.log2(v) for v in (n, c, k, *out))


@functools.lru_cache(maxsize=4096)
def _plan_name(config: str | None) -> str | None:
    try:
        cfg = json.loads(config) if config else None
    except ValueError:
        return None
    name = cfg.get("plan") if isinstance(cfg, dict) else None
    return name if isinstance(name, str) and name else None


def _identity(db) -> tuple:
    return type(db).__name__, str(getattr(db, "path", None) or getattr(db, "_where", None) or id(db))


def _index(db, device: str | None, solver_id: str) -> dict[str, list]:
    """{problem kind: [(key sizes, plan name)]} of one solver's records in ``db`` (read once per process)."""
    key = (_identity(db), device, solver_id)
    with _lock:
        got = _indexes.get(key)
    if got is not None:
        return got
    out: dict[str, list] = {}
    try:
        rows = db.solver_configs(device, solver_id)
    except Exception as e:      # noqa: BLE001  hints only: without them the heuristics list the plans
        log.debug("plan hints: %r unreadable (%s: %s)", db, type(e).__name__, e)
        rows = []
    for pkey, config in rows:
        name = _plan_name(config)
        split = split_key(pkey) if name else None
        if split is not None:
            out.setdefault(split[0], []).append((split[1], name))
    with _lock:
        _indexes[key] = out
    return out


def plan_hints(dbs, device: str, problem, solver_id: str, count: int) -> list[str]:
    """Up to ``count`` plan names that ``solver_id``'s records in the layers of ``dbs`` (an ``Overlay``: the
    user layer's records of ``device``, the system layer's of any device) name for problems of the same kind
    as ``problem``, nearest first (L1 distance of the log2 sizes ``split_key`` reads)."""
    own = split_key(problem.key())
    if own is None:
        return []
    kind, here = own
    near = []
    for layer, db in dbs.layers:
        for sizes, name in _index(db, device if layer == "user" else None, solver_id).get(kind, ()):
            near.append((sum(abs(a - b) for a, b in zip(here, sizes)), name))
    near.sort(key=lambda t: t[0])
    out: list[str] = []
    for _, name in near:
        if name not in out:
            out.append(name)
            if len(out) == count:
                break
    return out


def clear() -> None:
    """Forget every index (read again at the next hint)."""
    with _lock:
        _indexes.clear()
