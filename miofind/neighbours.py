"""Neighbour features of the learned cost model: what the nearest known problems' records say about a solver.

A ``NeighbourTable`` holds the measured times of known problems (a FindDB's find records), by kind: direction,
layouts, data types, math, transposition, dimensionality and grouping (dense, grouped, depthwise) must match for
one problem's records to speak for another's. For a (problem, solver) row, ``features`` gives ``FEATURES``:

- ``nb1_rel``: log2 of the solver's time over the fastest record on the nearest known problem where the solver
  has a record (nearest by ``distance``);
- ``nb1_time``: log10 of that time scaled by the FLOP ratio, minus the row's roofline base (the regression's own
  offset, so the feature is in the units of its target);
- ``nb1_dist``: that problem's distance;
- ``nbk_rel``, ``nbk_time``: the same, weighted 1 / (1 + distance) over the ``k`` nearest.

Distance: the L1 distance of log2(N, C, K, Ho, Wo), plus 3 for another filter size, 3 for other strides, 1 for
other than "same" padding where the problem has it (or the reverse) and 1 for other dilations. A solver with no
record of its kind gets ``MISSING``: a pessimistic prior (twice the fastest, the roofline's time) at a distance no
neighbour has, so that the trees never read an unknown as a fast one.

A training row must see its neighbours as an unseen problem does, or the model learns to trust a twin: its own
layer at another batch, data type or layout. ``TrainExclusion`` drops, for a problem of one of the model
presets' layers, every problem of those presets' layers; for any other problem, every problem of its own layer.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import NamedTuple

import numpy as np

FEATURES = ("nb1_rel", "nb1_time", "nb1_dist", "nbk_rel", "nbk_time")
MISSING = (1.0, 0.0, 99.0, 1.0, 0.0)
K = 4
FILTER_PENALTY, STRIDE_PENALTY, PAD_PENALTY, DILATION_PENALTY = 3.0, 3.0, 1.0, 1.0
_PENALTIES = (FILTER_PENALTY, STRIDE_PENALTY, PAD_PENALTY, DILATION_PENALTY)


def _native_search():
    """``miofind._native.nb_features`` where ``env.native_extension()`` gives the extension and it is built with it,
    else None (numpy)."""
    from . import env

    return getattr(env.native_extension(), "nb_features", None)


def _kind_key(p) -> str:
    """What must match for one problem's records to speak for another's, as a string."""
    grouping = "dw" if p.groups > 1 and p.groups == p.c else ("g" if p.groups > 1 else "")
    return (f"{p.direction}|{','.join(p.layouts)}|{','.join(p.dtypes)}|{p.math}|{int(bool(p.transposed))}|"
            f"{len(p.in_size)}|{grouping}")


def layer_id(p) -> tuple:
    """A layer whatever its batch, data type, layout, math or direction."""
    return (p.c, p.k, tuple(p.in_size), tuple(p.filter_size), tuple(p.strides), tuple(p.pads),
            tuple(p.dilations), p.groups)


def _sizes(p) -> list[float]:
    out = p.out_size
    v = [math.log2(max(1, x)) for x in (p.n, p.c, p.k, *out[-2:])]
    return v + [0.0] * (5 - len(v))


def _code(v) -> int:
    c = 0
    for x in v:
        c = (c << 16) + int(x)
    return c


def _shape(p) -> tuple[int, int, int, int]:
    """(filter, strides, "same" padding, dilations) as integers compared for equality."""
    f = p.filter_size
    return (_code(f), _code(p.strides), int(tuple(p.pads) == tuple([x // 2 for x in f])), _code(p.dilations))


class _Kind(NamedTuple):
    """One kind's known problems: their indices in the table, sizes [n, 5] and shapes [n, 4]; per solver with a
    record there, its column; per (problem, column) whether it has a record, its log2(time / best) and
    log10(time / flops) (0 where none); and ``nb_features``' leading arguments (the arrays' addresses, n, columns)."""

    idx: np.ndarray
    sizes: np.ndarray
    shape: np.ndarray
    col: dict
    have: np.ndarray
    rel: np.ndarray
    tpf: np.ndarray
    c_args: tuple


class NeighbourTable:
    """Known problems' records for ``features``. Build with ``from_records``; ``arrays``/``from_arrays`` store it
    in a model file."""

    def __init__(self, kinds, kind_of, sizes, shape, flops, best, rec_problem, rec_solver, rec_time, solvers, k=K):
        self.kinds = list(kinds)                       # kind keys, by index
        self.kind_of = np.asarray(kind_of, np.int32)   # per problem: its kind's index
        self.sizes = np.asarray(sizes, np.float64).reshape(-1, 5)
        self.shape = np.asarray(shape, np.int64).reshape(-1, 4)
        self.flops = np.asarray(flops, np.float64)
        self.best = np.asarray(best, np.float64)
        self.rec_problem = np.asarray(rec_problem, np.int32)
        self.rec_solver = np.asarray(rec_solver, np.int32)
        self.rec_time = np.asarray(rec_time, np.float64)
        self.solvers = list(solvers)
        self.k = int(k)
        self.keys: list[str] | None = None   # the problems' keys, by index (``from_records``; training only)
        self._kind_index = {kk: i for i, kk in enumerate(self.kinds)}
        self._solver_index = {s: i for i, s in enumerate(self.solvers)}
        self._by_kind: list[_Kind] = []
        local = np.empty(len(self.kind_of), np.int64)
        kind_of_rec = self.kind_of[self.rec_problem]
        for ki in range(len(self.kinds)):
            idx = np.flatnonzero(self.kind_of == ki)
            n = len(idx)
            local[idx] = np.arange(n)
            sizes, shape = self.sizes[idx], self.shape[idx]   # C-contiguous copies
            sel = np.flatnonzero(kind_of_rec == ki)
            cols = sorted(set(self.rec_solver[sel].tolist()))
            col = {si: j for j, si in enumerate(cols)}
            have = np.zeros((n, len(cols)), bool)
            rel = np.zeros((n, len(cols)))
            tpf = np.zeros((n, len(cols)))
            pi = self.rec_problem[sel]
            r, c = local[pi], np.array([col[si] for si in self.rec_solver[sel].tolist()], np.int64)
            have[r, c] = True
            rel[r, c] = np.log2(self.rec_time[sel] / self.best[pi])
            tpf[r, c] = np.log10(self.rec_time[sel] / self.flops[pi])
            # the C search's arguments: the arrays' addresses (the entry keeps the arrays alive)
            c_args = tuple(a.ctypes.data if a.size else 0 for a in (sizes, shape, have.view(np.uint8), rel, tpf))
            self._by_kind.append(_Kind(idx, sizes, shape, col, have, rel, tpf, c_args + (n, len(cols))))
        self._native = _native_search()

    @classmethod
    def from_records(cls, records: dict, parse, k: int | None = None) -> "NeighbourTable":
        """From ``{problem key: [(solver id, ms), ...]}`` (find records; keys ``parse`` cannot read are left out);
        ``k``: neighbours averaged in ``nbk_*`` (default ``K``)."""
        k = K if k is None else k
        kinds, kind_ix = [], {}
        kind_of, sizes, shape, flops, best = [], [], [], [], []
        rp, rs, rt = [], [], []
        solvers, solver_ix = [], {}
        keys = []
        for key in sorted(records):
            recs = [(s, t) for s, t in records[key] if t > 0]
            p = parse(key)
            if p is None or not recs:
                continue
            kk = _kind_key(p)
            if kk not in kind_ix:
                kind_ix[kk] = len(kinds)
                kinds.append(kk)
            pi = len(kind_of)
            keys.append(key)
            kind_of.append(kind_ix[kk])
            sizes.append(_sizes(p))
            shape.append(_shape(p))
            flops.append(float(max(1, p.flops())))
            best.append(min(t for _, t in recs))
            for s, t in recs:
                if s not in solver_ix:
                    solver_ix[s] = len(solvers)
                    solvers.append(s)
                rp.append(pi)
                rs.append(solver_ix[s])
                rt.append(t)
        table = cls(kinds, kind_of, sizes, shape, flops, best, rp, rs, rt, solvers, k)
        table.keys = keys
        return table

    def arrays(self, prefix: str = "nb_") -> dict:
        """The table as arrays for ``np.savez`` (``from_arrays`` reads them back; float64 throughout, so a loaded
        model gives the same features, hence the same answers, as the trained one)."""
        return {f"{prefix}kinds": np.asarray(self.kinds), f"{prefix}kind_of": self.kind_of,
                f"{prefix}sizes": self.sizes, f"{prefix}shape": self.shape,
                f"{prefix}flops": self.flops, f"{prefix}best": self.best,
                f"{prefix}rec_problem": self.rec_problem, f"{prefix}rec_solver": self.rec_solver.astype(np.int16),
                f"{prefix}rec_time": self.rec_time, f"{prefix}solvers": np.asarray(self.solvers),
                f"{prefix}k": np.asarray(self.k)}

    @classmethod
    def from_arrays(cls, z, prefix: str = "nb_") -> "NeighbourTable":
        g = lambda n: z[prefix + n]  # noqa: E731
        return cls([str(s) for s in g("kinds").tolist()], g("kind_of"), g("sizes"), g("shape"), g("flops"),
                   g("best").astype(np.float64), g("rec_problem"), g("rec_solver").astype(np.int32),
                   g("rec_time").astype(np.float64), [str(s) for s in g("solvers").tolist()], int(g("k")))

    def distances(self, p, drop=None) -> tuple[int, np.ndarray] | None:
        """(kind index, distance to each problem of ``p``'s kind, inf where ``drop`` (a bool array over the
        table's problems) is set), or None where the table has no problem of that kind."""
        ki = self._kind_index.get(_kind_key(p))
        if ki is None:
            return None
        entry = self._by_kind[ki]
        idx, sizes, shape = entry.idx, entry.sizes, entry.shape
        here = np.asarray(_sizes(p))
        sh = _shape(p)
        a = np.abs(sizes - here)
        d = a[:, 0] + a[:, 1]   # summed left to right, as the C search sums them
        d += a[:, 2]
        d += a[:, 3]
        d += a[:, 4]
        d += FILTER_PENALTY * (shape[:, 0] != sh[0]) + STRIDE_PENALTY * (shape[:, 1] != sh[1])
        d += PAD_PENALTY * (shape[:, 2] != sh[2]) + DILATION_PENALTY * (shape[:, 3] != sh[3])
        if drop is not None:
            d[drop[idx]] = np.inf
        return ki, d

    def features(self, p, solver_ids, bases, drop=None) -> np.ndarray:
        """``FEATURES`` rows for ``solver_ids`` on problem ``p`` (``bases``: each row's log10 roofline ms);
        ``drop``: a bool array over the table's problems that may not serve (a training row's own layers). In C
        where ``miofind._native`` has ``nb_features`` (the same values: ``_features_numpy`` is the reference)."""
        if self._native is None:
            return self._features_numpy(p, solver_ids, bases, drop)
        ki = self._kind_index.get(_kind_key(p))
        if ki is None:
            out = np.empty((len(solver_ids), len(FEATURES)))
            out[:] = MISSING
            return out
        entry = self._by_kind[ki]
        cols = [entry.col.get(self._solver_index.get(sid, -1), -1) for sid in solver_ids]
        keep = None
        if drop is not None:   # kept alive through the call
            keep = np.ascontiguousarray(drop[entry.idx], np.uint8)
        v = self._native(*entry.c_args, _sizes(p), _shape(p), _PENALTIES, cols, self.k,
                         keep.ctypes.data if keep is not None and keep.size else 0,
                         math.log10(max(1, p.flops())), [float(b) for b in bases], MISSING)
        return np.frombuffer(v, np.float64).reshape(-1, len(FEATURES)).copy()

    def _features_numpy(self, p, solver_ids, bases, drop=None) -> np.ndarray:
        """``features`` with numpy."""
        out = np.empty((len(solver_ids), len(FEATURES)))
        out[:] = MISSING
        got = self.distances(p, drop)
        if got is None:
            return out
        ki, d = got
        entry = self._by_kind[ki]
        col, have, rel, tpf = entry.col, entry.have, entry.rel, entry.tpf
        cols = [col.get(self._solver_index.get(sid, -1), -1) for sid in solver_ids]
        rows = [j for j, c in enumerate(cols) if c >= 0]
        if not rows:
            return out
        cs = [cols[j] for j in rows]
        order = np.argsort(d, kind="stable")
        ds = d[order]
        # every asked solver at once: its first k records in distance order, weighted 1 / (1 + d), summed nearest first
        valid = have[order][:, cs]
        valid &= np.isfinite(ds)[:, None]
        found = valid.any(axis=0)
        if not found.any():
            return out
        take = np.argsort(~valid, axis=0, kind="stable")[:self.k]   # per column: the rows of its first k records
        count = np.minimum(valid.sum(axis=0), self.k)
        r = rel[order][:, cs]
        t = tpf[order][:, cs]
        at = np.arange(len(cs))
        ws, wr, wt = np.zeros(len(cs)), np.zeros(len(cs)), np.zeros(len(cs))
        for j in range(min(self.k, len(ds))):
            on = j < count
            w = np.where(on, 1.0 / (1.0 + ds[take[j]]), 0.0)
            ws += w
            wr += np.where(on, w * r[take[j], at], 0.0)
            wt += np.where(on, w * t[take[j], at], 0.0)
        first = take[0]
        shift = math.log10(max(1, p.flops())) - np.asarray(bases, np.float64)[rows]
        safe = np.where(found, ws, 1.0)
        vals = np.stack([r[first, at], t[first, at] + shift, ds[first], wr / safe, wt / safe + shift], axis=1)
        keep = np.asarray(rows)[found]
        out[keep] = vals[found]
        return out


def preset_layers() -> tuple[dict, dict]:
    """(preset -> its layers, layer -> the presets it is in) of ``miofind.models.MODELS``."""
    from .models import MODELS, model_problems

    layers_of = {}
    for m in MODELS:
        layers_of[m] = {layer_id(q) for q in model_problems(m, batch=1)}
    of_layer = defaultdict(set)
    for m, ls in layers_of.items():
        for lay in ls:
            of_layer[lay].add(m)
    return layers_of, dict(of_layer)


class TrainExclusion:
    """For a training row of problem ``p``, the table's problems it may not take as neighbours (``__call__``: a
    bool array over them): for a layer of the presets (``preset_layers``), every problem of those presets' layers;
    else every problem of its own layer. Arrays are made once per banned set."""

    def __init__(self, table: NeighbourTable, parse, layers_of_preset: dict, preset_of_layer: dict):
        ids: dict = {}
        self._layer_ids = ids
        self._table_layers = np.fromiter((ids.setdefault(layer_id(parse(k)), len(ids)) for k in table.keys),
                                         np.int64, len(table.keys))
        self._layers_of = layers_of_preset
        self._preset_of = preset_of_layer
        self._memo: dict = {}

    def __call__(self, p) -> np.ndarray:
        lay = layer_id(p)
        presets = self._preset_of.get(lay)
        key = ("p", frozenset(presets)) if presets else ("l", lay)
        drop = self._memo.get(key)
        if drop is None:
            banned = set().union(*(self._layers_of[m] for m in presets)) if presets else {lay}
            ids = [self._layer_ids[q] for q in banned if q in self._layer_ids]
            drop = self._memo[key] = np.isin(self._table_layers, ids)
        return drop
