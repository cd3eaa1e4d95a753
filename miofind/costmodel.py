"""A learned cost model: predicted time of a solver (and config) on a problem, per device.

Trained from a FindDB's measured records (``train``): gradient-boosted trees (LightGBM, the optional
``model`` extra) regress log(measured time / roofline time) of each (problem, solver) record from
features of the problem (sizes, FLOPs, bytes, arithmetic intensity, the implicit-GEMM dimensions,
layout, data type, direction, groups, strides, filter), the solver (one-hot id and family) and the
solver's config (its numeric parameters; -1 where a solver has none). PerfDB entries add the
default config's time next to the tuned one, so configs of one solver are told apart too.

The trees are exported to flat numpy arrays (``CostModel.save``: one ``.npz``) and evaluated with
numpy alone (``CostModel.predict``): loading and predicting need neither LightGBM nor a GPU. The
shipped model sits next to its system FindDB (``finddb/sm_90-132.model.npz``). A missing or
unreadable model file leaves immediate mode with ``miofind.predict``'s nearest-problem predictor.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .predict import model_time_ms
from .problem import ProblemDescription

log = logging.getLogger(__name__)

FORMAT = 1
MODEL_SUFFIX = ".model.npz"
_FAMILIES = ("direct", "depthwise", "gemm", "winograd", "fft", "implicit_gemm", "cudnn", "")
_FAMILY_COL = {f: i for i, f in enumerate(_FAMILIES)}
_PROBLEM_FEATURES = (
    "dir", "low_precision", "bf16", "tf32", "nhwc", "log_n", "log_c", "log_k", "log_hi", "log_wi", "log_ho", "log_wo",
    "fy", "fx", "sy", "sx", "py", "px", "dil", "log_groups", "depthwise", "log_cpg", "log_kpg",
    "log_flops", "log_bytes", "log_intensity", "log_gemm_m", "log_gemm_n", "log_gemm_k", "log_out_per_n",
)
# LightGBM parameters, fixed before any evaluation (bench/eval_costmodel.py does not tune them)
PARAMS = {
    "objective": "regression", "learning_rate": 0.05, "num_leaves": 31, "max_depth": 8, "min_data_in_leaf": 5,
    "feature_fraction": 0.9, "bagging_fraction": 0.9, "bagging_freq": 1, "lambda_l2": 1.0,
    "use_missing": False, "verbosity": -1, "num_threads": 2, "deterministic": True, "seed": 1,
}
NUM_ROUNDS = 600


class CostModelError(RuntimeError):
    """A model cannot be trained (no LightGBM, no records) or read (bad file)."""


def _log2(v: float) -> float:
    return math.log2(v) if v > 0 else -1.0


def problem_features(p: ProblemDescription) -> list[float]:
    """The problem's part of a feature row, in ``_PROBLEM_FEATURES`` order."""
    p = p.as_conv()
    two = lambda v, pad: ((pad,) + tuple(v))[-2:]  # noqa: E731  (H, W); 3D problems fold D into H
    ho, wo = two(p.out_size, 1)
    hi, wi = two(p.in_size, 1)
    fy, fx = two(p.filter_size, 1)
    sy, sx = two(p.strides, 1)
    py, px = two(p.pads, 0)
    depth_in = math.prod(p.in_size[:-2]) if len(p.in_size) > 2 else 1
    depth_out = math.prod(p.out_size[:-2]) if len(p.out_size) > 2 else 1
    low = p.dtype in ("FP16", "BF16")
    esize = 2 if low else 4
    a, b, o = p.io_shapes()
    nbytes = esize * sum(math.prod(s) for s in (a, b, o))
    flops = p.flops()
    cpg, kpg = p.c // p.groups, p.k // p.groups
    taps = math.prod(p.filter_size)
    out_sp = math.prod(p.out_size)
    in_sp = math.prod(p.in_size)
    # the GEMM an implicit-GEMM kernel runs for this direction (per group)
    if p.direction == "F":
        m, n, k = p.n * out_sp, kpg, cpg * taps
    elif p.direction == "B":
        m, n, k = p.n * in_sp, cpg, kpg * taps
    else:
        m, n, k = kpg, cpg * taps, p.n * out_sp
    return [
        "FBW".index(p.direction), float(low), float(p.dtype == "BF16"), float(p.math == "tf32"),
        float(p.layout.startswith("NHWC") or p.layout.startswith("NDHWC")),
        _log2(p.n), _log2(p.c), _log2(p.k), _log2(hi * depth_in), _log2(wi), _log2(ho * depth_out), _log2(wo),
        fy, fx, sy, sx, py, px, max(p.dilations), _log2(p.groups), float(p.groups > 1 and p.groups == p.c),
        _log2(cpg), _log2(kpg), _log2(flops), _log2(nbytes), _log2(flops / max(1, nbytes)),
        _log2(m), _log2(n), _log2(k), _log2(out_sp),
    ]


def support_class(p: ProblemDescription) -> str:
    """``<direction>-<dtype>-<dense|grouped|depthwise>``: the kinds of problem a model covers."""
    grouping = "dense" if p.groups == 1 else ("depthwise" if p.groups == p.c else "grouped")
    return f"{p.direction}-{p.dtype}-{grouping}"


def _config_values(config, keys) -> list[float]:
    out = []
    for k in keys:
        v = config.get(k) if isinstance(config, dict) else None
        out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else -1.0)
    return out


def numeric_config_keys(configs) -> tuple[str, ...]:
    """The sorted names of the numeric parameters found in ``configs``."""
    keys = set()
    for c in configs:
        if isinstance(c, dict):
            keys |= {k for k, v in c.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return tuple(sorted(keys))


@dataclass
class _Trees:
    """Every tree in one flat node table. Leaves are nodes that point to themselves with threshold
    +inf, so evaluation runs a fixed number of steps (the deepest tree's depth) with no masks."""

    feature: np.ndarray     # int32 [nodes]
    threshold: np.ndarray   # float64 [nodes]
    children: np.ndarray    # int32 [nodes, 2]: (x <= threshold, x > threshold)
    value: np.ndarray       # float64 [nodes]: the leaf value (0 on internal nodes)
    roots: np.ndarray       # int32 [trees]
    depth: int

    @classmethod
    def empty(cls) -> "_Trees":
        z = np.zeros(0, np.int32)
        return cls(z, z.astype(np.float64), np.zeros((0, 2), np.int32), z.astype(np.float64), z, 0)

    @classmethod
    def from_lightgbm(cls, dump: dict) -> "_Trees":
        feature, threshold, children, value, roots = [], [], [], [], []
        depth = 0

        def add(node, d):
            nonlocal depth
            i = len(feature)
            feature.append(0)
            threshold.append(math.inf)
            children.append([i, i])
            value.append(0.0)
            if "leaf_index" in node or "split_index" not in node:
                value[i] = float(node.get("leaf_value", 0.0))
                depth = max(depth, d)
                return i
            if node.get("decision_type", "<=") != "<=":
                raise CostModelError(f"tree node: decision_type {node.get('decision_type')!r} is not supported")
            feature[i] = int(node["split_feature"])
            threshold[i] = float(node["threshold"])
            left = add(node["left_child"], d + 1)
            right = add(node["right_child"], d + 1)
            children[i] = [left, right]
            return i

        for t in dump["tree_info"]:
            roots.append(add(t["tree_structure"], 0))
        return cls(np.asarray(feature, np.int32), np.asarray(threshold, np.float64),
                   np.asarray(children, np.int32), np.asarray(value, np.float64), np.asarray(roots, np.int32), depth)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Sum of the trees' leaf values per row of ``x`` [rows, features]."""
        rows = x.shape[0]
        trees = len(self.roots)
        if rows == 0 or trees == 0:
            return np.zeros(rows)
        # every distinct (feature, threshold) split decided once per row: [rows, splits] flat
        decide = (x[:, self._split_feature] > self._split_threshold).ravel()
        inner = self._inner
        # g: the heap node (global: tree * inner + position) of each (row, tree); rows major
        g = np.tile(np.arange(trees, dtype=np.intp) * inner, rows)
        rowbase = np.repeat(np.arange(rows, dtype=np.intp) * len(self._split_feature), trees)
        step = np.tile(1 - np.arange(trees, dtype=np.intp) * inner, rows)   # child = 2g + step + decision
        for _ in range(self.depth):
            right = decide.take(self._heap_split.take(g) + rowbase)
            g += g
            g += step
            g += right
        return self._heap_value.take(g + np.tile(np.arange(trees, dtype=np.intp) - inner, rows)).reshape(rows, -1).sum(axis=1)

    def __post_init__(self):
        # Each tree as a complete binary tree of the deepest tree's depth, in heap order (children
        # of position i at 2i+1, 2i+2): a leaf above the last level repeats itself below (its node
        # points to itself with threshold +inf), so the descent needs no child table.
        feature, threshold = self.feature.astype(np.intp), self.threshold
        pairs = np.stack([feature.astype(np.float64), threshold], axis=1) if len(feature) else np.zeros((0, 2))
        uniq, split_of_node = np.unique(pairs, axis=0, return_inverse=True)
        self._split_feature = uniq[:, 0].astype(np.intp)
        self._split_threshold = uniq[:, 1]
        split_of_node = split_of_node.reshape(-1).astype(np.intp)
        children = self.children.astype(np.intp)
        self._inner = (1 << self.depth) - 1
        level = self.roots.astype(np.intp)[:, None]
        splits = []
        for _ in range(self.depth):
            splits.append(split_of_node[level])
            level = children[level].reshape(len(self.roots), -1)
        self._heap_split = (np.concatenate(splits, axis=1) if splits else np.zeros((len(self.roots), 0), np.intp)).ravel()
        self._heap_value = self.value[level].ravel()


class CostModel:
    """A trained model: ``predict_ms(problem, [(solver, config)])`` gives predicted times in ms."""

    def __init__(self, trees: _Trees, meta: dict, path: Path | None = None):
        self.trees = trees
        self.meta = meta
        self.path = path
        self.solver_ids: tuple[str, ...] = tuple(meta["solvers"])
        self.config_keys: tuple[str, ...] = tuple(meta["config_keys"])
        self._solver_col = {s: i for i, s in enumerate(self.solver_ids)}
        self._config_col = {k: i for i, k in enumerate(self.config_keys)}
        self._support = frozenset(meta["support"])
        self.n_features = len(_PROBLEM_FEATURES) + 1 + len(self.solver_ids) + len(_FAMILIES) + len(self.config_keys)

    @property
    def version(self) -> str:
        """``<trained date>-<content hash>``: names the model a prediction came from."""
        return self.meta["version"]

    def knows(self, solver_id: str) -> bool:
        return solver_id in self._solver_col

    def supports(self, problem: ProblemDescription, solver_ids) -> bool:
        """Whether the model was trained on this kind of problem (direction, data type, grouping:
        dense, grouped or depthwise) and on every solver of ``solver_ids``. Outside that the trees
        would extrapolate; immediate mode then predicts as before the model."""
        return support_class(problem) in self._support and all(s in self._solver_col for s in solver_ids)

    def rows(self, problem: ProblemDescription, pairs, sm_count: int = 132) -> tuple[np.ndarray, np.ndarray]:
        """(feature rows, log10 roofline ms) for (solver, config) pairs on one problem."""
        pf = problem_features(problem)
        n = len(pairs)
        x = np.zeros((n, self.n_features))
        np_ = len(pf)
        x[:, :np_] = pf
        s0 = np_ + 1
        f0 = s0 + len(self.solver_ids)
        c0 = f0 + len(_FAMILIES)
        x[:, c0:] = -1.0
        roofline: dict[tuple, float] = {}   # the roofline time depends on the family alone
        base, solver_cols, family_cols = [], [], []
        keypos = self._config_col
        for i, (solver, config) in enumerate(pairs):
            fk = (solver.family, solver.is_reference)
            r = roofline.get(fk)
            if r is None:
                r = roofline[fk] = math.log10(model_time_ms(problem, solver, sm_count))
            base.append(r)
            col = self._solver_col.get(solver.id)
            if col is not None:
                solver_cols.append((i, s0 + col))
            family_cols.append(f0 + _FAMILY_COL.get(solver.family, len(_FAMILIES) - 1))
            if isinstance(config, dict):
                for k, v in config.items():
                    j = keypos.get(k)
                    if j is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
                        x[i, c0 + j] = v
        base = np.asarray(base)
        x[:, np_] = base
        if solver_cols:
            x[tuple(np.asarray(solver_cols).T)] = 1.0
        x[np.arange(n), family_cols] = 1.0
        return x, base

    def predict_ms(self, problem: ProblemDescription, pairs, sm_count: int = 132) -> list[float]:
        """Predicted time in ms of each (solver, config) on ``problem``."""
        if not pairs:
            return []
        x, base = self.rows(problem, pairs, sm_count)
        return list(10.0 ** (base + self.trees.predict(x)))

    # -- files -----------------------------------------------------------------------------------

    def save(self, path) -> Path:
        """Write the model to ``path`` (a ``.npz``); returns the path."""
        path = Path(path)
        t = self.trees
        arrays = dict(feature=t.feature, threshold=t.threshold, children=t.children, value=t.value, roots=t.roots,
                      depth=np.asarray(t.depth), meta=np.asarray(json.dumps(self.meta, sort_keys=True)))
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)
        self.path = path
        return path

    @classmethod
    def load(cls, path) -> "CostModel":
        """Read a model written by ``save``; CostModelError naming the file when it cannot be read."""
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                trees = _Trees(z["feature"].astype(np.int32), z["threshold"].astype(np.float64),
                               z["children"].astype(np.int32), z["value"].astype(np.float64),
                               z["roots"].astype(np.int32), int(z["depth"]))
        except (OSError, KeyError, ValueError) as e:
            raise CostModelError(f"cost model {path}: cannot be read ({e.__class__.__name__}: {e})") from None
        if meta.get("format") != FORMAT:
            raise CostModelError(f"cost model {path}: format {meta.get('format')!r}, expected {FORMAT}")
        model = cls(trees, meta, path)
        if trees.children.shape != (len(trees.feature), 2) or (trees.feature >= model.n_features).any():
            raise CostModelError(f"cost model {path}: tree arrays do not match its {model.n_features} features")
        return model


# -- training ------------------------------------------------------------------------------------

@dataclass
class Sample:
    """One measured (problem, solver, config) time."""

    problem_key: str
    solver_id: str
    config: dict | None
    time_ms: float
    default: bool = False   # a PerfDB entry's default-config time (not a find record)


def samples_from_db(db, device: str | None = None, *, with_defaults: bool = True) -> list[Sample]:
    """The FindDB's measured times: every find record, and (``with_defaults``) each PerfDB entry's
    default-config time where the default differs from the tuned config. Records of unknown
    solvers or unparsable keys are left out."""
    from .registry import get_solver

    out = []
    known: dict[str, object] = {}

    def solver(sid):
        if sid not in known:
            try:
                known[sid] = get_solver(sid)
            except ValueError:
                known[sid] = None
        return known[sid]

    for r in db.iter_records(device):
        if r.time_ms > 0 and solver(r.solver_id) is not None and _parse(r.problem_key) is not None:
            out.append(Sample(r.problem_key, r.solver_id, r.config, r.time_ms))
    if with_defaults:
        for pr in db.iter_perf(device):
            s = solver(pr.solver_id)
            p = _parse(pr.problem_key)
            if s is None or p is None or not pr.default_time_ms or pr.default_time_ms <= 0:
                continue
            try:
                default = s.default_config(p.as_conv())
            except Exception:  # a solver that cannot name its default here: skip the entry
                continue
            if default and default != pr.config:
                out.append(Sample(pr.problem_key, pr.solver_id, default, pr.default_time_ms, default=True))
    return out


@functools.lru_cache(maxsize=16384)
def _parse(key: str) -> ProblemDescription | None:
    try:
        return ProblemDescription.from_key(key)
    except ValueError:
        return None


def _lightgbm():
    try:
        import lightgbm
    except ImportError:
        raise CostModelError("training a cost model needs LightGBM: pip install 'miofind[model]'") from None
    return lightgbm


def train(samples: list[Sample], *, sm_count: int = 132, rounds: int = NUM_ROUNDS, params: dict | None = None,
          source: str = "") -> CostModel:
    """A CostModel fitted to ``samples`` (CostModelError without LightGBM or samples)."""
    from .registry import get_solver

    lgb = _lightgbm()
    if not samples:
        raise CostModelError("no measured records to train on")
    solver_ids = tuple(sorted({s.solver_id for s in samples}))
    meta = {"format": FORMAT, "solvers": list(solver_ids), "config_keys": list(numeric_config_keys(s.config for s in samples)),
            "sm_count": sm_count, "samples": len(samples), "problems": len({s.problem_key for s in samples}),
            "support": sorted({support_class(_parse(s.problem_key)) for s in samples}),
            "source": source, "params": dict(PARAMS, **(params or {})), "rounds": rounds}
    shell = CostModel(_Trees.empty(), dict(meta, version=""))
    x, base, y = _matrix(shell, samples, sm_count, get_solver)
    names = [*_PROBLEM_FEATURES, "log_roofline_ms", *(f"solver={s}" for s in solver_ids),
             *(f"family={f or 'other'}" for f in _FAMILIES), *(f"cfg_{k}" for k in shell.config_keys)]
    ds = lgb.Dataset(x, label=y - base, feature_name=names, free_raw_data=True)
    booster = lgb.train(meta["params"], ds, num_boost_round=rounds)
    trees = _Trees.from_lightgbm(booster.dump_model())
    digest = hashlib.sha256(trees.threshold.tobytes() + trees.value.tobytes() + json.dumps(meta, sort_keys=True).encode())
    meta["version"] = time.strftime("%Y%m%d", time.gmtime()) + "-" + digest.hexdigest()[:10]
    meta["feature_names"] = names
    return CostModel(trees, meta)


def _matrix(model: CostModel, samples, sm_count, get_solver):
    by_problem: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_problem.setdefault(s.problem_key, []).append(i)
    x = np.empty((len(samples), model.n_features))
    base = np.empty(len(samples))
    for key, idx in by_problem.items():
        p = _parse(key)
        xs, bs = model.rows(p, [(get_solver(samples[i].solver_id), samples[i].config) for i in idx], sm_count)
        x[idx], base[idx] = xs, bs
    y = np.log10([s.time_ms for s in samples])
    return x, base, y


# -- the model of a device -----------------------------------------------------------------------

def model_path_for(db_path) -> Path:
    """Where the model of a system FindDB file lives: next to it, ``<name>.model.npz``."""
    p = Path(db_path)
    return p.with_name(p.name.removesuffix(".sqlite") + MODEL_SUFFIX)


_loaded: dict[Path, CostModel | None] = {}


def model_for_db(db_path) -> CostModel | None:
    """The model shipped next to a system FindDB file (cached per process); None when there is none
    or it cannot be read (logged once)."""
    if db_path is None:
        return None
    path = model_path_for(db_path)
    if path not in _loaded:
        model = None
        if path.is_file():
            try:
                model = CostModel.load(path)
                log.debug("cost model %s (version %s)", path, model.version)
            except CostModelError as e:
                log.warning("%s; immediate mode predicts from the nearest known problem", e)
        _loaded[path] = model
    return _loaded[path]


# -- accuracy ------------------------------------------------------------------------------------

def ranking_metrics(problems) -> dict | None:
    """Accuracy over ``problems``, each a list of (measured ms, predicted ms) of its candidates:
    top-1 (the lowest prediction is the measured fastest), mean and worst slowdown of that pick
    against the measured fastest (mean as a fraction: 0.05 = 5%), and the median relative error
    |predicted/measured - 1| over every candidate. None for no problems."""
    slow, rel = [], []
    for rows in problems:
        if not rows:
            continue
        best = min(m for m, _ in rows)
        slow.append(min(rows, key=lambda r: r[1])[0] / best)
        rel += [abs(p / m - 1) for m, p in rows]
    if not slow:
        return None
    return {"problems": len(slow), "top1": sum(s <= 1.0 + 1e-12 for s in slow) / len(slow),
            "mean_slowdown": float(np.mean(slow)) - 1, "worst_slowdown": float(max(slow)),
            "median_rel_err": float(np.median(rel))}


def cross_validate(samples: list[Sample], folds: int = 5, *, sm_count: int = 132, rounds: int = NUM_ROUNDS,
                   seed: int = 1) -> dict | None:
    """``folds``-fold cross-validation over problems (a problem's records all fall in one fold):
    ``ranking_metrics`` of the held-out folds' find records, each predicted at its recorded config."""
    from .registry import get_solver

    keys = sorted({s.problem_key for s in samples})
    if folds < 2 or len(keys) < folds:
        return None
    order = np.random.default_rng(seed).permutation(len(keys))
    fold_of = {keys[i]: j % folds for j, i in enumerate(order)}
    problems = []
    for f in range(folds):
        model = train([s for s in samples if fold_of[s.problem_key] != f], sm_count=sm_count, rounds=rounds)
        test: dict[str, list[Sample]] = {}
        for s in samples:
            if fold_of[s.problem_key] == f and not s.default:
                test.setdefault(s.problem_key, []).append(s)
        for key, ss in test.items():
            solvers = [get_solver(s.solver_id) for s in ss]
            if not model.supports(_parse(key), [s.id for s in solvers]):
                continue
            pred = model.predict_ms(_parse(key), [(sv, s.config) for sv, s in zip(solvers, ss)], sm_count)
            problems.append([(s.time_ms, p) for s, p in zip(ss, pred)])
    return ranking_metrics(problems)
