"""A learned cost model: predicted time of a solver (and config) on a problem, per device.

Trained from a FindDB's measured records (``train``): gradient-boosted trees (LightGBM, the optional
``model`` extra) regress log(measured time / roofline time) of each (problem, solver) record from
features of the problem (sizes, FLOPs, bytes, arithmetic intensity, the implicit-GEMM dimensions,
layout, data type, direction, groups, strides, filter) and the solver (one-hot id and family). Trained
with ``configs=True`` (the tuner's model), the solver's config is a feature too (its numeric
parameters; -1 where a solver has none) and PerfDB entries add the default config's time next to the
tuned one, so configs of one solver are told apart. The shipped immediate-mode model
(``default_configs=True``) has config features too, but learns and is asked with each solver's
default config on the problem, the same for a known problem as for an unseen one (``train``). A
second forest, LambdaRank on the same features (``train(rank_rounds=...)``, format 2 files), orders a
problem's solvers (``CostModel.rank``) while the regression trees state their times
(``CostModel.predict_ms``): both sit in one tree table and are scored in one pass. With
``train(neighbour_features=True)`` each row also has ``miofind.neighbours.FEATURES``: what the nearest known
problems' records say of its solver, from a table of the training records stored in the model file. With
``train(perceptron=True)`` (the immediate-mode default where scikit-learn is installed; format 3 files) a ReLU
perceptron fitted to the same rows and targets states the times instead, and a problem's order blends its
standardised log times with the ranking forest's standardised scores: held out one preset at a time, its times are
nearer the measured ones than the regression trees' (``PERCEPTRON_HIDDEN``'s comment).

The trees are exported to flat numpy arrays (``CostModel.save``: one ``.npz``); loading and
predicting need neither LightGBM nor a GPU. One problem's candidates (``CostModel.predict_ms``) are
scored through QuickScorer-style bitmask tables built at load (``_Exits``: one table row per feature
threshold, the exit leaf of each tree the highest set bit of an AND), without making the feature
rows: in C where miofind's optional extension is built (``miofind._native``'s ``qs_lookup`` and
``qs_score``; ``MIOFIND_NATIVE=0`` when a model loads keeps it off), else with numpy, the same leaves
added in the same order either way. Feature matrices (training, cross-validation) and trees of more
than 32 leaves take the heap descent (``_Trees.predict``, numpy). All give the same leaves. The
shipped model sits next to its system FindDB (``finddb/sm_90-132.model.npz``). A missing or
unreadable model file leaves immediate mode with ``miofind.predict``'s nearest-problem predictor. The perceptron is
scored without making the feature rows either: each row's solver, family and config part of its first layer is
memoised by the row's joined table row, and the rest runs in C (``miofind._native``'s ``mlp_score``) or numpy.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import time
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import neighbours as nbr
from .predict import Roofline, model_time_ms, parse_problem_key
from .problem import ProblemDescription

log = logging.getLogger(__name__)

FORMAT = 2          # 2: a ranking forest may follow the regression trees (meta "rank_trees")
FORMAT_PERCEPTRON = 3   # 3: format 2 and a perceptron that states the times (meta "perceptron")
FORMATS = (1, 2, 3)     # format 1 files (one regression forest) still load
MODEL_SUFFIX = ".model.npz"
TUNE_MODEL_SUFFIX = ".tune.model.npz"   # the config-aware model the tuner's "model" strategy orders by
_FAMILIES = ("direct", "depthwise", "gemm", "winograd", "fft", "implicit_gemm", "cudnn", "")
_FAMILY_COL = {f: i for i, f in enumerate(_FAMILIES)}
_PROBLEM_FEATURES = (
    "dir", "low_precision", "bf16", "tf32", "nhwc", "log_n", "log_c", "log_k", "log_hi", "log_wi", "log_ho", "log_wo",
    "fy", "fx", "sy", "sx", "py", "px", "dil", "log_groups", "depthwise", "log_cpg", "log_kpg",
    "log_flops", "log_bytes", "log_intensity", "log_gemm_m", "log_gemm_n", "log_gemm_k", "log_out_per_n",
)
# with ``train(align_features=True)``, after the problem features: log2 of the byte alignment (at most 16) of the
# channels-first planes (output and input pixels per image: a NCHW GEMM's leading dimension) and of the channels per
# group (a NHWC GEMM's leading dimension), ``_align_values``
_ALIGN_FEATURES = ("align_out", "align_in", "align_cpg", "align_kpg")
# per-row features of a (problem, config) with a BM x BN tiling (``_tile_values``), after the config columns
_TILE_FEATURES = ("log_tiles", "wave_eff")
_NO_TILING = (-1.0, -1.0)
# LightGBM parameters, fixed before any evaluation (bench/eval_costmodel.py does not tune them)
PARAMS = {
    "objective": "regression", "learning_rate": 0.05, "num_leaves": 31, "max_depth": 8, "min_data_in_leaf": 5,
    "feature_fraction": 0.9, "bagging_fraction": 0.9, "bagging_freq": 1, "lambda_l2": 1.0,
    "use_missing": False, "verbosity": -1, "num_threads": 2, "deterministic": True, "seed": 1,
}
# over PARAMS for the immediate-mode models (config basis "default" or "none", not the tuner's "tuned" one):
# random split thresholds (extra_trees), chosen by the nested leave-one-preset-out criterion, the ranking pick's
# mean slowdown on out-of-fold training presets, lower on all five outer splits (5.88% against 6.77%;
# bench/results/session-nov27/nested/). The tuner's config-aware model keeps PARAMS: with random thresholds it
# told a tuned config from the default in 65.0% of held-out pairs against 91.5% (session-nov27/tune-order/).
IMMEDIATE_PARAMS = {"extra_trees": True}
# whether the immediate-mode models have ``_ALIGN_FEATURES`` (``train(align_features=None)``): chosen by the same
# nested criterion, the out-of-fold mean slowdown averaged over the five outer splits, 5.23% -> 5.01% at the shipped
# seed (5.19 -> 5.22, 5.63 -> 5.07 at seeds 2, 3; bench/results/session-nov27b/align/). The tuner's model has none.
IMMEDIATE_ALIGN = True
# whether the immediate-mode models have ``miofind.neighbours.FEATURES`` (``train(neighbour_features=None)``): not,
# by the same nested criterion, 4.57% without and 4.81% with them at the shipped seed (4.74% with 8 neighbours),
# although held out one preset at a time they gained at seeds 1 and 2 and lost at seed 3
# (bench/results/session-nov28/NOTES.md); they also double the time of an answer (78 against 40 µs on a 2-core host)
IMMEDIATE_NEIGHBOURS = False
NUM_ROUNDS = 600
# trees of the LambdaRank forest ``train`` adds (0: none), and its parameters over PARAMS: 150 trees at
# twice the regression's learning rate (the boosting budget of 300 at 0.05, at half the evaluation
# cost: 600 + 150 trees keep one problem within 50 µs on the CPU; bench/results/costmodel-v3/)
RANK_ROUNDS = 150
RANK_PARAMS = {"objective": "lambdarank", "learning_rate": 0.1}
# the immediate-mode models' perceptron (``train(perceptron=None)``; scikit-learn, the ``model`` extra): hidden layer
# widths, fitting parameters, and the weight of its standardised log times against the ranking forest's standardised
# scores in a problem's order (``_blend``). Held out one preset at a time (seeds 1-3) the ranking alone scores 78.3 /
# 77.6 / 79.1% top-1, 3.69 / 4.27 / 3.86% mean slowdown, 15.0-15.1% median time error; with 64 x 32 the blend scores
# 78.3 / 79.1 / 79.2%, 3.32 / 3.44 / 3.44%, and the perceptron's times 13.2-13.3%. 256 x 128 gives 11.3-11.7% and
# 3.23-3.43% but costs several times the answer time; the shipped 64 x 32 one answers in 48.4 µs against the trees
# alone's 29.3 (bench/results/session-dec03e/classes/, model/speed/).
PERCEPTRON_HIDDEN = (64, 32)
PERCEPTRON_PARAMS = {"early_stopping": True, "max_iter": 300, "batch_size": 256, "learning_rate_init": 1e-3,
                     "alpha": 1e-4}
PERCEPTRON_BLEND = 1.0
IMMEDIATE_PERCEPTRON = True


def _native_scorer():
    """``miofind._native`` where it is built with the exit tables' functions (``qs_score``, ``qs_lookup``) and
    ``MIOFIND_NATIVE`` is not 0 (read when a model's tables are built); else None."""
    from . import env

    native = env.native_extension()
    return native if hasattr(native, "qs_score") and hasattr(native, "qs_lookup") else None


def _address(a: np.ndarray) -> int:
    """The address of a C-contiguous array's first element."""
    assert a.flags.c_contiguous
    return a.__array_interface__["data"][0]


class CostModelError(RuntimeError):
    """A model cannot be trained (no LightGBM, no records) or read (bad file)."""


def _log2(v: float) -> float:
    return math.log2(v) if v > 0 else -1.0


def problem_feature_names(align: bool = False) -> tuple[str, ...]:
    """The names of a feature row's problem part: ``_PROBLEM_FEATURES``, then ``_ALIGN_FEATURES`` with ``align``."""
    return _PROBLEM_FEATURES + (_ALIGN_FEATURES if align else ())


def _align_log2(v: int, elem: int) -> float:
    """log2 of the largest power of two, at most 16, dividing ``v`` elements of ``elem`` bytes: the widest
    vector (and the TMA/cuBLAS 16-byte rule) a row of ``v`` elements keeps aligned."""
    b = v * elem
    return float(min(4, (b & -b).bit_length() - 1)) if b > 0 else 0.0


def _last_two(v, pad) -> tuple:
    """(H, W) of a size tuple: 1D problems get ``pad`` for H, 3D problems' D is dropped."""
    return (v[-2], v[-1]) if len(v) >= 2 else (pad, v[0])


def _problem_parts(p: ProblemDescription, align: bool = False) -> tuple[list[float], ProblemDescription, int, int,
                                                                         tuple[int, int, int]]:
    """(the problem's part of a feature row, named by ``problem_feature_names(align)``, the non-transposed
    problem, its FLOPs, the elements of x, w and y together, the implicit GEMM's (M, N per group, groups)
    for ``_tile_values``): the sizes are computed once, for the features, the roofline time and the tiling
    alike."""
    p = p.as_conv()
    ins, outs, filt = p.in_size, p.out_size, p.filter_size
    ho, wo = _last_two(outs, 1)
    hi, wi = _last_two(ins, 1)
    fy, fx = _last_two(filt, 1)
    sy, sx = _last_two(p.strides, 1)
    py, px = _last_two(p.pads, 0)
    if len(ins) > 2:   # 3D problems fold D into H
        hi *= math.prod(ins[:-2])
        ho *= math.prod(outs[:-2])
    dtype, layout, direction = p.dtypes[0], p.layouts[0], p.direction
    low = dtype in ("FP16", "BF16")
    n, c, k, groups = p.n, p.c, p.k, p.groups
    cpg, kpg = c // groups, k // groups
    taps = math.prod(filt)
    out_sp = math.prod(outs)
    in_sp = math.prod(ins)
    # x, w (K x C/G x filter) and y: ProblemDescription.io_shapes in some order
    elements = n * c * in_sp + k * cpg * taps + n * k * out_sp
    nbytes = (2 if low else 4) * elements
    flops = 2 * n * k * out_sp * cpg * taps   # ProblemDescription.flops
    # the GEMM an implicit-GEMM kernel runs for this direction (per group)
    if direction == "F":
        m, gn, gk = n * out_sp, kpg, cpg * taps
    elif direction == "B":
        m, gn, gk = n * in_sp, cpg, kpg * taps
    else:
        m, gn, gk = kpg, cpg * taps, n * out_sp
    log2 = math.log2
    lg = [log2(v) if v > 0 else -1.0 for v in (n, c, k, hi, wi, ho, wo, groups, cpg, kpg, flops, nbytes,
                                                 flops / max(1, nbytes), m, gn, gk, out_sp)]
    features = [
        float("FBW".index(direction)), float(low), float(dtype == "BF16"), float(p.math == "tf32"),
        float(layout.startswith("NHWC") or layout.startswith("NDHWC")),
        *lg[:7], float(fy), float(fx), float(sy), float(sx), float(py), float(px), float(max(p.dilations)),
        lg[7], float(groups > 1 and groups == c), *lg[8:],
    ]
    if align:
        elem = 2 if low else 4
        features += [_align_log2(out_sp, elem), _align_log2(in_sp, elem), _align_log2(cpg, elem),
                     _align_log2(kpg, elem)]
    return features, p, flops, elements, (m, gn, groups)


def _tile_values(tiling, config, sm_count) -> tuple[float, float]:
    """``_TILE_FEATURES`` of a config on a problem (``tiling``: its implicit GEMM's M, N per group and
    groups, ``_problem_parts``): log2 of the blocks a BM x BN tiling of M x N launches (times SPLITK and
    the groups), and their wave efficiency, blocks / (waves x SMs), where a wave is ``sm_count``
    blocks; (-1, -1) for a config without integer BM and BN. Whether a kernel tiles M by BM or by BN
    is the trees' to learn per solver."""
    if not isinstance(config, dict) or type(config.get("BM")) is not int or type(config.get("BN")) is not int:
        return _NO_TILING
    m, n, g = tiling
    split = config.get("SPLITK", 1)
    split = split if isinstance(split, int) and split > 0 else 1
    tiles = g * -(-m // config["BM"]) * -(-n // config["BN"]) * split
    return math.log2(tiles), tiles / (-(-tiles // sm_count) * sm_count)


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


def _unique_splits(feature: np.ndarray, threshold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (feature, threshold) pairs sorted by feature, then threshold, as (features,
    thresholds), and the index of each input pair among them."""
    order = np.lexsort((threshold, feature))
    f, t = feature[order], threshold[order]
    new = np.ones(len(order), bool)
    new[1:] = (f[1:] != f[:-1]) | (t[1:] != t[:-1])
    index = np.empty(len(order), np.intp)
    index[order] = np.cumsum(new) - 1
    return f[new].astype(np.intp), t[new], index


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
        return self.leaves(x).sum(axis=1)

    def leaves(self, x: np.ndarray) -> np.ndarray:
        """The leaf value of each tree per row of ``x``: [rows, trees]."""
        rows = x.shape[0]
        trees = len(self.roots)
        if rows == 0 or trees == 0:
            return np.zeros((rows, trees))
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
        return self._heap_value.take(g + np.tile(np.arange(trees, dtype=np.intp) - inner, rows)).reshape(rows, -1)

    def __post_init__(self):
        # Each tree as a complete binary tree of the deepest tree's depth, in heap order (children
        # of position i at 2i+1, 2i+2): a leaf above the last level repeats itself below (its node
        # points to itself with threshold +inf), so the descent needs no child table.
        self._split_feature, self._split_threshold, split_of_node = _unique_splits(self.feature, self.threshold)
        children = self.children.astype(np.intp)
        self._inner = (1 << self.depth) - 1
        level = self.roots.astype(np.intp)[:, None]
        splits, levels = [], []
        for _ in range(self.depth):
            levels.append(level)
            splits.append(split_of_node[level])
            level = children[level].reshape(len(self.roots), -1)
        self._heap_split = (np.concatenate(splits, axis=1) if splits else np.zeros((len(self.roots), 0), np.intp)).ravel()
        self._heap_value = self.value[level].ravel()
        self.exits = _Exits.build(self, levels, level)


class _Exits:
    """QuickScorer's tables (Lucchese et al., SIGIR 2015) of a forest whose trees have at most 32
    leaves: one problem's few rows are scored with a handful of numpy calls (or one C call,
    ``native``) instead of a descent.

    Leaf i of a tree (left to right) is bit 31 - i of a uint32. A node whose test x[f] > threshold
    holds rules out the leaves of its left subtree; the tree's exit leaf is the leftmost leaf that
    no true node rules out, i.e. the highest set bit of the AND of the true nodes' masks. The nodes
    of one feature, sorted by threshold, are true for a value v exactly up to
    ``bisect_left(thresholds, v)``, so one precomputed row per (feature, count) holds the AND per
    tree of those nodes' masks, and a row's masks are the AND of one table row per feature. The
    table is ANDed as uint64 (two trees per word; an odd forest gets an all-ones column)."""

    MAX_BOUNDED = 1024   # joined rows of (solver, config values): 2.4 MB for 600 trees

    def __init__(self, table, used, lookup, values, offset, ntrees):
        self.lookup = lookup      # per feature: (sorted thresholds, table row per count), or None (unused)
        self.values = values      # float64 [trees * 32]: leaf values by (tree, bit)
        self.offset = offset      # int32 [trees]: tree * 32 - 1, added to frexp's exponent (bit + 1)
        self.ntrees = ntrees
        native = _native_scorer()
        self.native = native.qs_score if native else None   # ``score`` in C, or None: with numpy
        self._native_lookup = native.qs_lookup if native else None
        self._publish(table)      # self.table: uint32 [table rows, trees (even)]; row 0: all ones (no node true)
        self._used = self._first = used   # rows in use; ``joined`` fills the spare rows after them
        self._bounded = 0
        self.joined_rows: dict = {}
        self._lock = threading.Lock()

    @classmethod
    def build(cls, trees: "_Trees", levels, bottom) -> "_Exits | None":
        """The tables from the heap layout (``levels[d]``: the node ids at depth d, ``bottom``: at
        the last level, leaves repeated); None where a tree has more than 32 leaves."""
        ntrees, depth = len(trees.roots), trees.depth
        if ntrees == 0:
            return None
        nfeat = int(trees.feature.max()) + 1
        # rank of each leaf, left to right, at every bottom position
        starts = np.ones(bottom.shape, bool)
        starts[:, 1:] = bottom[:, 1:] != bottom[:, :-1]
        rank = np.cumsum(starts, axis=1) - 1
        if rank[:, -1].max() >= 32:
            return None
        values = np.zeros((ntrees, 32))
        values[np.repeat(np.arange(ntrees), bottom.shape[1]), 31 - rank.ravel()] = trees.value[bottom.ravel()]
        low = np.array([(1 << h) - 1 for h in range(33)], np.uint64)   # low[h]: the lowest h bits set
        children = trees.children
        feat, thr, tree, mask = [np.zeros(0, np.int32)], [np.zeros(0)], [np.zeros(0, np.intp)], [np.zeros(0, np.uint32)]
        for d, ids in enumerate(levels):
            t, k = np.nonzero(children[ids, 0] != ids)   # real internal nodes (leaves point to themselves)
            span = 1 << (depth - d)
            lo = rank[t, k * span]                       # the left subtree's leaves: lo .. hi - 1
            hi = rank[t, k * span + span // 2 - 1] + 1
            node = ids[t, k]
            feat.append(trees.feature[node])
            thr.append(trees.threshold[node])
            tree.append(t)
            mask.append(~(low[32 - lo] ^ low[32 - hi]).astype(np.uint32))
        feat, thr, tree, mask = (np.concatenate(a) for a in (feat, thr, tree, mask))
        ufeat, uthr, split = _unique_splits(feat, thr)
        used = 1 + len(ufeat)
        table = np.full((used + 64, ntrees + ntrees % 2), 0xFFFFFFFF, np.uint32)   # 64 spare rows for ``joined``
        np.bitwise_and.at(table, (1 + split, tree), mask)
        lookup = [None] * nfeat
        first = np.searchsorted(ufeat, np.arange(nfeat + 1))
        for f in range(nfeat):
            a, b = first[f], first[f + 1]
            if a < b:   # rows 1 + a .. b: cumulative AND along the feature's thresholds
                table[1 + a:1 + b] = np.bitwise_and.accumulate(table[1 + a:1 + b], axis=0)
                lookup[f] = (uthr[a:b].tolist(), [0, *range(1 + a, 1 + b)])
        # int32 like frexp's exponents: the sum needs no cast
        return cls(table, used, lookup, values.ravel(), np.arange(ntrees, dtype=np.int32) * 32 - 1, ntrees)

    def _publish(self, table):
        """Make ``table`` the one scored: as uint64 words for numpy, and with its address and shape for
        qs_score in one tuple (read at once, it keeps the array it names alive through the call)."""
        values = np.ascontiguousarray(self.values, np.float64)
        self.table, self.wide = table, table.view(np.uint64)
        self._native_args = (table, values, _address(table), len(table), table.shape[1], _address(values))

    def lookup_rows(self, look):
        """A function of a feature row (a list of floats) to its table rows: one per (feature index,
        sorted thresholds, table row per count) of ``look``, the row of the count of thresholds below
        the feature's value (bisect_left), in C with ``native``."""
        if self.native is not None:
            return self._native_lookup(look)
        return lambda values: [rows[bisect_left(th, values[f])] for f, th, rows in look]

    def rows_for(self, features) -> list[int]:
        """The table rows of a (feature index, value) sequence."""
        out = []
        lookup = self.lookup
        for f, v in features:
            look = lookup[f] if f < len(lookup) else None
            if look is not None:
                out.append(look[1][bisect_left(look[0], v)])
        return out

    def joined(self, key, features, *, bounded: bool = False) -> int | None:
        """The table row that ANDs the rows of ``features`` (``rows_for``), made once per ``key``:
        a kind of row's features other than the problem's and the roofline time (solver, family,
        config). ``bounded`` rows (one per config) stop at ``MAX_BOUNDED`` (then None)."""
        row = self.joined_rows.get(key)
        if row is not None:
            return row
        with self._lock:
            if key not in self.joined_rows:
                if bounded and self._bounded >= self.MAX_BOUNDED:
                    return None
                self._bounded += bounded
                mask = np.bitwise_and.reduce(self.table[[0, *self.rows_for(features)]], axis=0)
                table = self.table
                if self._used == len(table):   # grow; readers keep the old array
                    table = np.concatenate([table, np.empty_like(table[:max(64, self._used - self._first)])])
                table[self._used] = mask
                if table is not self.table:
                    self._publish(table)
                self.joined_rows[key] = self._used   # published after the row is in self.table
                self._used += 1
            return self.joined_rows[key]

    def score(self, per_row, common, more=None, cut=None):
        """Sum of the leaf values per row of a problem: row i ANDs table rows ``per_row[j][i]`` for
        each j (at least two lists: the joined row, the roofline time's row, then any per-row
        feature's), where given the list ``more[i]`` (the lists of equal length), and every row the
        table rows ``common``. With ``cut``: the sums over trees ``[:cut]`` and ``[cut:]`` apart (two
        forests in one table). Through ``native`` where there is one (the same leaves, summed in
        numpy's order), else numpy."""
        n = len(per_row[0])
        if self.native is not None:
            # read after every joined row was made; table and values hold the arrays whose addresses C
            # reads through the call (it releases the GIL: ``joined`` may publish a grown table meanwhile)
            table, values, table_at, rows, width, values_at = self._native_args
            v = np.frombuffer(self.native(table_at, rows, width, values_at, self.ntrees, cut, common, per_row, more),
                              np.float64)
            return v if cut is None else (v[:n], v[n:])
        k = len(per_row)
        wide = self.wide   # read after every joined row was made
        flat = per_row[0] + per_row[1]
        for rows in per_row[2:]:
            flat += rows
        g = wide.take(flat + common, axis=0)
        m = g[:n] & g[n:2 * n]
        for j in range(2, k):
            m &= g[j * n:(j + 1) * n]
        m &= np.bitwise_and.reduce(g[k * n:], axis=0)
        if more is not None:
            m &= np.bitwise_and.reduce(wide.take(more, axis=0), axis=1)
        m = m.view(np.uint32)
        e = np.frexp(m if m.shape[1] == self.ntrees else m[:, :self.ntrees])[1]   # the highest set bit + 1
        v = self.values.take(e + self.offset)
        if cut is None:
            return v.sum(axis=1)
        v = np.add.reduceat(v, [0, cut], axis=1)
        return v[:, 0], v[:, 1]


class _Perceptron:
    """A ReLU perceptron that regresses a row's log10(time / roofline time) from its feature row: ``weights[i]``
    (inputs x outputs) and ``biases[i]`` per layer, the last of one output. The training rows' standardisation is
    folded into the first layer, which takes the raw rows (``CostModel.rows``)."""

    def __init__(self, weights, biases):
        self.weights = [np.ascontiguousarray(w, dtype=np.float64) for w in weights]
        self.biases = [np.ascontiguousarray(b, dtype=np.float64) for b in biases]

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, hidden=PERCEPTRON_HIDDEN, seed: int = 1) -> "_Perceptron":
        """Fitted with scikit-learn's ``MLPRegressor`` (``PERCEPTRON_PARAMS``) on standardised ``x``."""
        try:
            if _sklearn_version() is None:
                raise ImportError("sklearn")
            from sklearn.neural_network import MLPRegressor
        except ImportError:
            raise CostModelError("the cost model's perceptron needs scikit-learn (pip install 'miofind[model]')") \
                from None
        mean = x.mean(0)
        scale = x.std(0)
        scale[scale == 0] = 1.0
        params = dict(PERCEPTRON_PARAMS, batch_size=min(PERCEPTRON_PARAMS["batch_size"], len(x)))
        mlp = MLPRegressor(hidden_layer_sizes=tuple(hidden), random_state=seed, **params)
        mlp.fit((x - mean) / scale, y)
        w0, b0 = mlp.coefs_[0], mlp.intercepts_[0]
        # ((x - mean) / scale) @ w0 + b0 = x @ (w0 / scale) + (b0 - (mean / scale) @ w0)
        return cls([w0 / scale[:, None], *mlp.coefs_[1:]], [b0 - (mean / scale) @ w0, *mlp.intercepts_[1:]])

    def predict(self, x: np.ndarray) -> np.ndarray:
        """log10(time / roofline time) of each feature row of ``x``."""
        return self.top(x @ self.weights[0] + self.biases[0])

    def top(self, first: np.ndarray) -> np.ndarray:
        """The output from the first layer's sums (before its ReLU; overwritten), one row per row."""
        h = np.maximum(first, 0.0, out=first)
        for w, b in zip(self.weights[1:-1], self.biases[1:-1]):
            h = h @ w
            h += b
            np.maximum(h, 0.0, out=h)
        return h @ self.weights[-1][:, 0] + self.biases[-1][0]

    def arrays(self) -> dict:
        return {**{f"perceptron_w{i}": w for i, w in enumerate(self.weights)},
                **{f"perceptron_b{i}": b for i, b in enumerate(self.biases)}}

    @classmethod
    def from_arrays(cls, z, layers: int, n_features: int, where) -> "_Perceptron":
        """Read ``arrays``' entries; CostModelError naming ``where`` when they do not chain from ``n_features``
        inputs to one output."""
        try:
            w = [z[f"perceptron_w{i}"].astype(np.float64) for i in range(layers)]
            b = [z[f"perceptron_b{i}"].astype(np.float64) for i in range(layers)]
        except KeyError as e:
            raise CostModelError(f"cost model {where}: perceptron layer missing ({e})") from None
        width = n_features
        for i, (wi, bi) in enumerate(zip(w, b)):
            if wi.ndim != 2 or wi.shape[0] != width or bi.shape != (wi.shape[1],):
                raise CostModelError(f"cost model {where}: perceptron layer {i} has weights {wi.shape} and biases "
                                     f"{bi.shape}, expected {width} inputs")
            width = wi.shape[1]
        if layers < 1 or width != 1:
            raise CostModelError(f"cost model {where}: perceptron ends in {width} outputs, expected 1")
        return cls(w, b)


def _blend(neg_scores, log_ms, weight: float) -> list[float]:
    """A problem's sort key (lowest first): the ranking forest's negated scores and the perceptron's log times, each
    standardised within the problem, the times weighted by ``weight``."""
    a, b = _standard([float(v) for v in neg_scores]), _standard([float(v) for v in log_ms])
    return [u + weight * v for u, v in zip(a, b)]


def _standard(v: list[float]) -> list[float]:
    """(v - mean) / standard deviation (the population's, as numpy's std), zeros where all are equal."""
    mean = sum(v) / len(v)
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / len(v))
    return [(x - mean) / sd for x in v] if sd > 0 else [0.0] * len(v)


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
        self.tile_features = bool(meta.get("tile_features"))
        self.align_features = bool(meta.get("align_features"))
        self._np = len(problem_feature_names(self.align_features))
        self._tile_col = self._np + 1 + len(self.solver_ids) + len(_FAMILIES) + len(self.config_keys)
        self._nb_col = self._tile_col + (len(_TILE_FEATURES) if self.tile_features else 0)
        self.neighbour_features = bool(meta.get("neighbour_features"))
        self.n_features = self._nb_col + (len(nbr.FEATURES) if self.neighbour_features else 0)
        self.neighbours: nbr.NeighbourTable | None = None   # set by ``train`` and ``load`` where neighbour_features
        # set by ``train`` and ``load`` where meta "perceptron": it states the times, and its times join the order
        self.perceptron: _Perceptron | None = None
        self._perceptron_parts = None        # the first layer's weights by part (``_perceptron_log_ms``)
        self._perceptron_rows: dict = {}     # a row's key -> its row of ``_perceptron_matrix``
        self._perceptron_matrix = np.zeros((0, 0))   # made with the parts
        self._perceptron_lock = threading.Lock()
        # a second forest (LambdaRank) after the regression trees: its scores order the solvers
        self.rank_trees = int(meta.get("rank_trees", 0))
        self._cut = len(trees.roots) - self.rank_trees if self.rank_trees else None
        exits = trees.exits
        if exits is not None:   # predict_ms's lookups: (thresholds, table row per count) by feature
            look = lambda f: exits.lookup[f] if f < len(exits.lookup) and exits.lookup[f] else ([], [0])  # noqa: E731
            self._problem_look = [(f, *look(f)) for f in range(self._np) if look(f)[0]]
            self._problem_rows = exits.lookup_rows(self._problem_look)
            self._roofline_look = look(self._np)
            c0 = self._np + 1 + len(self.solver_ids) + len(_FAMILIES)
            self._config_feature = {k: c0 + j for j, k in enumerate(self.config_keys)}
            self._known_rows: dict = {}   # predict_ms: (solver id, family, config items, types) -> joined row
            self._tile_look = [look(self._tile_col + j) for j in range(len(_TILE_FEATURES))]
            self._tile_rows: dict = {}   # ``_tile_row``: tile feature values -> joined row
            self._nb_look = [look(self._nb_col + j) for j in range(len(nbr.FEATURES))]

    @property
    def config_basis(self) -> str:
        """What its config features were trained on: "none" (no config features; the config given
        is ignored), "tuned" (recorded and PerfDB configs: the tuner's model) or "default" (each
        solver's default config on the problem: ask it with default configs)."""
        return self.meta.get("config_basis") or ("tuned" if self.config_keys else "none")

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

    def rows(self, problem: ProblemDescription, pairs, sm_count: int = 132,
             drop: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(feature rows, log10 roofline ms) for (solver, config) pairs on one problem (``drop``: the neighbour
        table's problems its neighbour features may not come from, ``miofind.neighbours.TrainExclusion``)."""
        pf, _, _, _, tiling = _problem_parts(problem, self.align_features)
        n = len(pairs)
        x = np.zeros((n, self.n_features))
        np_ = len(pf)
        x[:, :np_] = pf
        s0 = np_ + 1
        f0 = s0 + len(self.solver_ids)
        c0 = f0 + len(_FAMILIES)
        x[:, c0:] = -1.0
        if self.tile_features:
            t0 = self._tile_col
            for i, (_, config) in enumerate(pairs):
                x[i, t0:t0 + len(_TILE_FEATURES)] = _tile_values(tiling, config, sm_count)
        roofline: dict[tuple, float] = {}   # the roofline time depends on the family alone
        base = []
        for i, (solver, config) in enumerate(pairs):
            fk = (solver.family, solver.is_reference)
            r = roofline.get(fk)
            if r is None:
                r = roofline[fk] = math.log10(model_time_ms(problem, solver, sm_count))
            base.append(r)
            self._fill_row(x[i], solver, config)
        base = np.asarray(base)
        x[:, np_] = base
        if self.neighbour_features:
            x[:, self._nb_col:] = self._neighbour_values(problem, pairs, base, drop)
        return x, base

    def _fill_row(self, row: np.ndarray, solver, config) -> None:
        """Set a feature row's solver and family one-hots and its config columns (``row``'s config columns hold -1
        already: a parameter the config lacks)."""
        s0 = self._np + 1
        f0 = s0 + len(self.solver_ids)
        c0 = f0 + len(_FAMILIES)
        col = self._solver_col.get(solver.id)
        if col is not None:
            row[s0 + col] = 1.0
        row[f0 + _FAMILY_COL.get(solver.family, len(_FAMILIES) - 1)] = 1.0
        if isinstance(config, dict):
            keypos = self._config_col
            for k, v in config.items():
                j = keypos.get(k)
                if j is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
                    row[c0 + j] = v

    def _perceptron_row(self, solver, config) -> np.ndarray:
        """The perceptron's first-layer sums over a row's solver, family and config columns, and its bias."""
        lo, hi = self._np + 1, self._tile_col
        row = np.zeros(self.n_features)
        row[lo + len(self.solver_ids) + len(_FAMILIES):hi] = -1.0
        self._fill_row(row, solver, config)
        return row[lo:hi] @ self.perceptron.weights[0][lo:hi] + self.perceptron.biases[0]

    def _perceptron_log_ms(self, pf, pairs, keys, base, tiles=None, neighbours=None) -> np.ndarray:
        """log10 ms of each row by the perceptron, without making the feature rows: its first layer is the sum of
        the problem's part (``pf``, once), each row's roofline part (``base``), its solver, family and config part
        (``_perceptron_row``, with the bias; memoised by ``keys``: the rows' joined table rows, which stand for their
        solver, family and config values; None: not memoised), and tile and neighbour parts where the model has
        those features."""
        mlp = self.perceptron
        w = self._perceptron_parts
        if w is None or w[0] is not mlp:
            w0 = mlp.weights[0]
            with self._perceptron_lock:   # (another perceptron's memo is forgotten)
                self._perceptron_rows = {}
                self._perceptron_matrix = np.zeros((64, w0.shape[1]))
            w_problem, w_base = np.ascontiguousarray(w0[:self._np]), w0[self._np].copy()
            native = _native_scorer()   # with mlp_score: the rest of the first layer and the layers after in C
            native = native if hasattr(native, "mlp_score") else None
            # the C scorer's layers after the first: weights' and biases' addresses, inputs, outputs
            layers = [v for wi, bi in zip(mlp.weights[1:], mlp.biases[1:])
                      for v in (_address(wi), _address(bi), wi.shape[0], wi.shape[1])]
            w = self._perceptron_parts = (mlp, w_problem, w_base, w0[self._tile_col:self._nb_col], w0[self._nb_col:],
                                          native, (_address(w_problem), _address(w_base), layers))
        _, w_problem, w_base, w_tile, w_nb, native, addresses = w
        memo = self._perceptron_rows
        idx, extra = [], None
        for i, ((solver, config), key) in enumerate(zip(pairs, keys)):
            j = memo.get(key) if key is not None else None
            if j is None:
                v = self._perceptron_row(solver, config)
                j = self._perceptron_memo(key, v) if key is not None else None
                if j is None:
                    extra = extra or {}
                    extra[i] = v
                    j = 0
            idx.append(j)
        mat = self._perceptron_matrix   # read after the indices: rows stored before them are in it
        if native is not None and not extra and tiles is None and neighbours is None:
            return np.frombuffer(native.mlp_score(_address(mat), len(mat), mat.shape[1], idx, pf, addresses[0], base,
                                                  addresses[1], addresses[2]))
        first = mat[idx]
        if extra:
            for i, v in extra.items():
                first[i] = v
        base = np.asarray(base)
        first += np.dot(pf, w_problem)
        first += np.multiply.outer(base, w_base)
        if tiles is not None:
            first += np.asarray(tiles) @ w_tile
        if neighbours is not None:
            first += np.asarray(neighbours) @ w_nb
        return base + mlp.top(first)

    def _perceptron_memo(self, key, v: np.ndarray) -> int | None:
        """Store a row part (``_perceptron_row``) for ``key``: its row of ``_perceptron_matrix``, None where the memo
        is full (4096 keys)."""
        with self._perceptron_lock:
            j = self._perceptron_rows.get(key)
            if j is not None:
                return j
            n = len(self._perceptron_rows)
            if n >= 4096:
                return None
            m = self._perceptron_matrix
            if n >= len(m):
                grown = np.zeros((max(64, 2 * len(m)), len(v)))
                grown[:len(m)] = m
                self._perceptron_matrix = m = grown
            m[n] = v
            self._perceptron_rows[key] = n
            return n

    def _neighbour_values(self, problem, pairs, base, drop=None) -> np.ndarray:
        """Rows of ``miofind.neighbours.FEATURES`` (``MISSING`` throughout without a table)."""
        if self.neighbours is None:
            out = np.empty((len(pairs), len(nbr.FEATURES)))
            out[:] = nbr.MISSING
            return out
        return self.neighbours.features(problem, [s.id for s, _ in pairs], base, drop)

    def predict_ms(self, problem: ProblemDescription, pairs, sm_count: int = 132) -> list[float]:
        """Predicted time in ms of each (solver, config) on ``problem``: the regression trees on the
        feature rows ``rows`` makes, scored from the exit tables (``_Exits``) without making them."""
        return self.rank(problem, pairs, sm_count)[0]

    def rank(self, problem: ProblemDescription, pairs, sm_count: int = 132) -> tuple[list[float], list[int]]:
        """(``predict_ms``'s times, the indices of ``pairs`` best first). A model with a ranking
        forest (``rank_trees``; ``train(rank_rounds=...)``) orders by its scores, highest first,
        which need not be the order of the times (equal scores: the order of ``pairs``); a model
        without one orders by the times. Both
        forests are scored in one pass over the same tables."""
        if not pairs:
            return [], []
        times, neg = self._evaluate(problem, pairs, sm_count)
        # by the negated ranking scores where there are (equal ones keep the order of ``pairs``)
        return times, sorted(range(len(times)), key=(times if neg is None else neg).__getitem__)

    def _evaluate(self, problem, pairs, sm_count):
        """(times in ms, negated ranking scores or None) of non-empty ``pairs``."""
        cut = self._cut
        exits = self.trees.exits
        if exits is None:   # trees of more than 32 leaves: the descent over the full feature rows
            x, base = self.rows(problem, pairs, sm_count)
            if cut is None:
                log_ms, neg = base + self.trees.predict(x), None
            else:
                v = np.add.reduceat(self.trees.leaves(x), [0, cut], axis=1)   # summed as ``_Exits.score`` sums
                log_ms, neg = base + v[:, 0], (-v[:, 1]).tolist()
            if self.perceptron is not None:
                log_ms = base + self.perceptron.predict(x)
                if neg is not None:
                    neg = _blend(neg, log_ms, self.meta["perceptron"]["blend"])
            return (10.0 ** log_ms).tolist(), neg
        pf, conv, flops, elements, tiling = _problem_parts(problem, self.align_features)
        common = self._problem_rows(pf) or [0]
        # the rest of a row is its roofline time (one per family) and one joined table row of its
        # solver, family and config (``_joined_row``), known by the config's items and their types
        roof = Roofline(conv, flops, elements, sm_count)
        roof_th, roof_rows = self._roofline_look
        known = self._known_rows
        roofline: dict[tuple, float] = {}
        base, joined, roofs, more = [], [], [], []
        keys = [] if self.perceptron is not None else None   # the perceptron's memo keys of the rows
        tiles = [] if self.tile_features else None   # each row's joined row of its tile features
        for solver, config in pairs:
            family, ref = solver.family, solver.is_reference
            r = roofline.get((family, ref))
            if r is None:
                r = roofline[family, ref] = math.log10(roof.ms(family, ref))
            base.append(r)
            roofs.append(roof_rows[bisect_left(roof_th, r)])
            if tiles is not None:   # (-1, -1) unless the config has a tiling: its row made once
                tiles.append(self._tile_row(exits, _tile_values(tiling, config, sm_count) if isinstance(config, dict)
                                            and "BN" in config else _NO_TILING))
            if isinstance(config, dict) and config:
                key = (solver.id, family, tuple(config.items()), tuple(map(type, config.values())))
            else:
                key = (solver.id, family)
            try:
                row = known.get(key)
            except TypeError:   # an unhashable config value
                row = key = None
            cols = None
            if row is None:
                row, cols = self._joined_row(exits, solver.id, family, config)
                if cols:
                    more.append((len(joined), cols))
                elif key is not None and len(known) < 4096:
                    known[key] = row
            joined.append(row)
            if keys is not None:   # the joined row stands for the solver, family and config values (not with cols)
                keys.append(None if cols else row)
        if more:   # each row's config columns' table rows, padded with row 0 (all ones)
            width = max(len(c) for _, c in more)
            rows = [[0] * width for _ in joined]
            for i, cols in more:
                rows[i][:len(cols)] = cols
            more = rows
        per_row = [joined, roofs] if tiles is None else [joined, roofs, tiles]
        nb = None
        if self.neighbour_features:   # one table row per (row, neighbour feature), as the roofline time's
            nb = self._neighbour_values(problem, pairs, base)
            for (th, trows), col in zip(self._nb_look, nb.T.tolist()):
                per_row.append([trows[bisect_left(th, v)] for v in col])
        if cut is None:
            s = exits.score(per_row, common, more or None)
            score = None
        else:
            s, score = exits.score(per_row, common, more or None, cut)
            score = np.negative(score).tolist()
        if self.perceptron is not None:
            tile_values = None if tiles is None else [_tile_values(tiling, config, sm_count) for _, config in pairs]
            s = self._perceptron_log_ms(pf, pairs, keys, base, tile_values, nb)
            if score is not None:
                score = _blend(score, s, self.meta["perceptron"]["blend"])
        else:
            s += base
        return np.power(10.0, s, out=s).tolist(), score

    def _tile_row(self, exits: "_Exits", values) -> int:
        """The table row that ANDs the rows of a row's ``_TILE_FEATURES`` ``values``: one joined row
        per combination of their table rows (few: the trees' thresholds on two features)."""
        row = self._tile_rows.get(values)
        if row is None:
            rows = tuple(trows[bisect_left(th, v)] for (th, trows), v in zip(self._tile_look, values))
            row = exits.joined(("tile", *rows), list(zip(range(self._tile_col, self.n_features), values)))
            if len(self._tile_rows) < 4096:
                self._tile_rows[values] = row
        return row

    def _joined_row(self, exits: "_Exits", solver_id: str, family: str, config) -> tuple[int, list[int]]:
        """The joined table row of a row's solver, family and config, and the table rows of its
        config columns where the table has no room for another config (else none)."""
        key = (self._solver_col.get(solver_id, -1), _FAMILY_COL.get(family, len(_FAMILIES) - 1))
        if isinstance(config, dict):
            cols = self._config_feature
            key += tuple((cols[k], float(v)) for k, v in config.items()
                         if k in cols and isinstance(v, (int, float)) and not isinstance(v, bool))
        row = exits.joined(key, self._row_features(*key), bounded=len(key) > 2)
        if row is not None:
            return row, []
        cols = tuple(c for c, _ in key[2:])   # too many configs: their columns' rows, the rest joined
        return exits.joined(key[:2] + cols, self._row_features(*key[:2], *cols)), exits.rows_for(key[2:])

    def _row_features(self, scol: int, fcol: int, *config) -> list[tuple[int, float]]:
        """(feature, value) of a row's solver one-hot (``scol``; -1: an unknown solver), family
        one-hot and config columns, as ``rows`` fills them: ``config`` holds (feature, value) of the
        config's numeric parameters, or only the feature (its value left out); the rest are -1."""
        s0 = self._np + 1
        f0 = s0 + len(self.solver_ids)
        c0 = f0 + len(_FAMILIES)
        given = {c[0] if isinstance(c, tuple) else c: c[1] if isinstance(c, tuple) else None for c in config}
        out = [(s0 + i, float(i == scol)) for i in range(len(self.solver_ids))]
        out += [(f0 + i, float(i == fcol)) for i in range(len(_FAMILIES))]
        for col in range(c0, c0 + len(self.config_keys)):
            v = given.get(col, -1.0)
            if v is not None:
                out.append((col, v))
        return out

    # -- files -----------------------------------------------------------------------------------

    def save(self, path) -> Path:
        """Write the model to ``path`` (a ``.npz``); returns the path."""
        path = Path(path)
        t = self.trees
        arrays = dict(feature=t.feature, threshold=t.threshold, children=t.children, value=t.value, roots=t.roots,
                      depth=np.asarray(t.depth), meta=np.asarray(json.dumps(self.meta, sort_keys=True)))
        if self.neighbours is not None:
            arrays.update(self.neighbours.arrays())
        if self.perceptron is not None:
            arrays.update(self.perceptron.arrays())
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
                table = nbr.NeighbourTable.from_arrays(z) if meta.get("neighbour_features") else None
                layers = {k: z[k] for k in z.files if k.startswith("perceptron_")}
        except (OSError, KeyError, ValueError, IndexError) as e:
            raise CostModelError(f"cost model {path}: cannot be read ({e.__class__.__name__}: {e})") from None
        if meta.get("format") not in FORMATS:
            raise CostModelError(f"cost model {path}: format {meta.get('format')!r}, expected one of {FORMATS}")
        model = cls(trees, meta, path)
        model.neighbours = table
        perceptron = meta.get("perceptron")
        if perceptron is not None:
            if meta["format"] < FORMAT_PERCEPTRON or not isinstance(perceptron, dict) or \
                    not isinstance(perceptron.get("layers"), int) or \
                    not isinstance(perceptron.get("blend"), (int, float)):
                raise CostModelError(f"cost model {path}: perceptron {perceptron!r} in a format {meta['format']} "
                                     f"file, expected format {FORMAT_PERCEPTRON} with its layers and blend weight")
            model.perceptron = _Perceptron.from_arrays(layers, perceptron["layers"], model.n_features, path)
        if trees.children.shape != (len(trees.feature), 2) or (trees.feature >= model.n_features).any():
            raise CostModelError(f"cost model {path}: tree arrays do not match its {model.n_features} features")
        if not 0 <= model.rank_trees < len(trees.roots) or (model.rank_trees and meta["format"] < 2):
            raise CostModelError(f"cost model {path}: rank_trees {model.rank_trees} does not fit its "
                                 f"{len(trees.roots)} trees (format {meta['format']})")
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
        if r.time_ms > 0 and solver(r.solver_id) is not None and parse_problem_key(r.problem_key) is not None:
            out.append(Sample(r.problem_key, r.solver_id, r.config, r.time_ms))
    if with_defaults:
        for pr in db.iter_perf(device):
            s = solver(pr.solver_id)
            p = parse_problem_key(pr.problem_key)
            if s is None or p is None or not pr.default_time_ms or pr.default_time_ms <= 0:
                continue
            try:
                default = s.default_config(p.as_conv())
            except Exception:  # a solver that cannot name its default here: skip the entry
                continue
            if default and default != pr.config:
                out.append(Sample(pr.problem_key, pr.solver_id, default, pr.default_time_ms, default=True))
    return out


def default_config_samples(samples: list[Sample]) -> list[Sample]:
    """The find records of ``samples`` (PerfDB default-config samples dropped), each given its
    solver's *default* config on its problem in place of the recorded one: the config a tunable
    solver would run on an unseen problem, a function of the problem (its tile and split choice).
    A model trained on them (``train(default_configs=True)``) sees the same features for a known
    problem as for an unseen one; the recorded time stays the FindDB's (tuned where it was tuned).
    Solvers that are not tunable, or cannot name a default here, get None."""
    from .registry import get_solver

    memo: dict[tuple[str, str], dict | None] = {}
    out = []
    for s in samples:
        if s.default:
            continue
        k = (s.problem_key, s.solver_id)
        if k not in memo:
            memo[k] = default_config(get_solver(s.solver_id), parse_problem_key(s.problem_key))
        out.append(Sample(s.problem_key, s.solver_id, memo[k], s.time_ms))
    return out


def default_config(solver, problem: ProblemDescription):
    """``solver``'s default config on ``problem`` (None where it is not tunable or names none)."""
    if not solver.tunable:
        return None
    try:
        return solver.default_config(problem.as_conv())
    except Exception:   # a solver that cannot name its default here: no config features
        return None


def _lightgbm():
    try:
        import lightgbm
    except ImportError:
        raise CostModelError("training a cost model needs LightGBM: pip install 'miofind[model]'") from None
    return lightgbm


def relevance(times) -> np.ndarray:
    """LambdaRank labels of one problem's measured times: 3 for the fastest, 2 within 1.1x of it,
    1 within 1.5x, else 0 (fixed in costmodel2, before any evaluation of the ranker)."""
    r = np.asarray(times, float) / np.min(times)
    return np.where(r <= 1.0, 3, np.where(r <= 1.1, 2, np.where(r <= 1.5, 1, 0)))


GRADED_TOP, GRADED_STEPS = 30, 10


def graded_relevance(times) -> np.ndarray:
    """LambdaRank labels graded by the log of the slowdown: ``GRADED_TOP`` for the fastest, one less
    per 1/``GRADED_STEPS`` of a doubling (about 7% per step), at least 0 (8x slower or more). With the
    linear gains ``train`` sets for them, a swap of two solvers weighs in proportion to log2 of their
    time ratio, so a costly swap weighs more than a near-tie (the bands of ``relevance`` do not tell a
    1.6x pick from a 7x one)."""
    r = np.log2(np.asarray(times, float) / np.min(times))
    return np.clip(GRADED_TOP - np.rint(GRADED_STEPS * r), 0, GRADED_TOP).astype(int)


RANK_LABELS = {"bands": relevance, "graded": graded_relevance}


def train(samples: list[Sample], *, sm_count: int = 132, rounds: int = NUM_ROUNDS, params: dict | None = None,
          source: str = "", configs: bool = False, rank_rounds: int = RANK_ROUNDS,
          rank_params: dict | None = None, rank_labels: str = "bands", default_configs: bool = False,
          tile_features: bool = False, align_features: bool | None = None,
          neighbour_features: bool | None = None, perceptron: bool | None = None) -> CostModel:
    """A CostModel fitted to ``samples`` (CostModelError without LightGBM or samples).

    ``rounds`` regression trees state the times; ``rank_rounds`` > 0 adds a LambdaRank forest on
    the same features (``params`` and ``rank_params`` over ``RANK_PARAMS``; groups: problems; labels:
    ``relevance``) whose scores order a problem's
    solvers (``CostModel.rank``; leave-one-preset-out it picks the fastest more often than the
    times do, ``bench/results/costmodel-v3/``).

    ``configs``: the solvers' numeric config parameters are features, and PerfDB default-config
    samples are learnt next to the tuned ones. Off by default: an unseen problem has no tuned
    config, and a model that learnt the tuned configs' times predicts a tunable solver at its
    default config as slower than its tuned time (leave-one-preset-out over the shipped DB: top-1
    71.3% with them, 77.9% without; ``bench/results/costmodel-v2/``). Without them the model
    predicts each solver's time as the FindDB records it (tuned where it was tuned), from find
    records alone, and ignores the config it is given.

    ``default_configs``: config features, each find record given its solver's default config on
    its problem (``default_config_samples``), not its tuned one; no PerfDB samples. Such a model is
    asked with default configs (``CostModel.config_basis`` "default"; ``find.predicted`` does so):
    what a tunable solver's heuristic picks is a feature of every problem, known or unseen
    (leave-one-preset-out: ``bench/results/costmodel-v7/``).

    ``tile_features``: two more per-row features of a config with a BM x BN tiling on its problem,
    the blocks it launches and their wave efficiency on ``sm_count`` SMs (``_tile_values``).

    ``align_features``: four more problem features, the byte alignment of the GEMMs' leading dimensions
    (``_ALIGN_FEATURES``); None: ``IMMEDIATE_ALIGN`` for the immediate-mode models, none for the tuner's.

    ``neighbour_features``: five more per-row features, what the nearest known problems' find records say of the
    row's solver (``miofind.neighbours``); the model file keeps a table of the training find records for them. A
    training row's neighbours leave out its own layer, or every layer of the model presets it is a layer of
    (``neighbours.TrainExclusion``), as an unseen problem has none of them. None: ``IMMEDIATE_NEIGHBOURS`` for the
    immediate-mode models, none for the tuner's.

    ``perceptron``: a ReLU perceptron (scikit-learn's ``MLPRegressor``, ``PERCEPTRON_HIDDEN``) fitted to the same rows
    and targets as the regression trees; it states the times (``predict_ms``), and a problem's order blends its
    standardised log times with the ranking forest's standardised scores (``PERCEPTRON_BLEND``). CostModelError
    without scikit-learn. None: ``IMMEDIATE_PERCEPTRON`` for the immediate-mode models where scikit-learn is
    installed (a warning where not: the trees state the times), none for the tuner's."""
    from .registry import get_solver

    lgb = _lightgbm()
    if default_configs:
        samples = default_config_samples(samples)
        configs = True
    elif not configs:
        samples = [s for s in samples if not s.default]
    if not samples:
        raise CostModelError("no measured records to train on")
    if rounds < 1 or rank_rounds < 0:
        raise CostModelError(f"rounds {rounds}, rank_rounds {rank_rounds}: need rounds >= 1, rank_rounds >= 0")
    solver_ids = tuple(sorted({s.solver_id for s in samples}))
    keys = list(numeric_config_keys(s.config for s in samples)) if configs else []
    basis = "default" if default_configs else ("tuned" if configs else "none")
    if align_features is None:
        align_features = IMMEDIATE_ALIGN and basis != "tuned"
    if neighbour_features is None:
        neighbour_features = IMMEDIATE_NEIGHBOURS and basis != "tuned"
    meta = {"format": FORMAT if rank_rounds else 1, "solvers": list(solver_ids), "config_keys": keys,
            "sm_count": sm_count, "samples": len(samples), "problems": len({s.problem_key for s in samples}),
            "support": sorted({support_class(parse_problem_key(s.problem_key)) for s in samples}),
            "source": source, "params": {**PARAMS, **({} if basis == "tuned" else IMMEDIATE_PARAMS), **(params or {})},
            "rounds": rounds, "configs": configs, "config_basis": basis, "tile_features": tile_features,
            "align_features": align_features}
    if neighbour_features:
        meta["neighbour_features"] = True
    shell = CostModel(_Trees.empty(), dict(meta, version=""))
    exclusion = None
    if neighbour_features:
        found: dict[str, list] = {}
        for s in samples:
            if not s.default:
                found.setdefault(s.problem_key, []).append((s.solver_id, s.time_ms))
        shell.neighbours = nbr.NeighbourTable.from_records(found, parse_problem_key)
        exclusion = nbr.TrainExclusion(shell.neighbours, parse_problem_key, *nbr.preset_layers())
    x, base, y = _matrix(shell, samples, sm_count, get_solver, exclusion)
    names = [*problem_feature_names(align_features), "log_roofline_ms", *(f"solver={s}" for s in solver_ids),
             *(f"family={f or 'other'}" for f in _FAMILIES), *(f"cfg_{k}" for k in shell.config_keys),
             *(_TILE_FEATURES if tile_features else ()), *(nbr.FEATURES if neighbour_features else ())]
    ds = lgb.Dataset(x, label=y - base, feature_name=names)
    dump = lgb.train(meta["params"], ds, num_boost_round=rounds).dump_model()
    if rank_rounds:
        # a problem's samples together (stable: the regression keeps the given order): one ranking group
        order = sorted(range(len(samples)), key=lambda i: samples[i].problem_key)
        keys = [samples[i].problem_key for i in order]
        bounds = [0, *(i for i in range(1, len(keys)) if keys[i] != keys[i - 1]), len(keys)]
        yo = y[order]
        labeller = RANK_LABELS[rank_labels]
        label = np.concatenate([labeller(10.0 ** yo[a:b]) for a, b in zip(bounds, bounds[1:])])
        rank_ds = lgb.Dataset(x[order], label=label, group=np.diff(bounds), feature_name=names)
        meta["rank_params"] = {**meta["params"], **RANK_PARAMS, **(rank_params or {})}
        meta["rank_labels"] = rank_labels
        if rank_labels == "graded":
            meta["rank_params"]["label_gain"] = list(range(GRADED_TOP + 1))
        ranker = lgb.train(meta["rank_params"], rank_ds, num_boost_round=rank_rounds).dump_model()
        meta["rank_trees"] = len(ranker["tree_info"])
        dump = dict(dump, tree_info=dump["tree_info"] + ranker["tree_info"])   # one forest, ranker last
    trees = _Trees.from_lightgbm(dump)
    mlp = None
    if perceptron is None:
        perceptron = IMMEDIATE_PERCEPTRON and basis != "tuned" and _sklearn_version() is not None
        if IMMEDIATE_PERCEPTRON and basis != "tuned" and not perceptron:
            log.warning("scikit-learn is not installed: the cost model has no perceptron, and its regression trees "
                        "state the times (pip install 'miofind[model]')")
    if perceptron:
        mlp = _Perceptron.fit(x, y - base, PERCEPTRON_HIDDEN, seed=int(meta["params"].get("seed", 1)))
        meta["format"] = FORMAT_PERCEPTRON
        meta["perceptron"] = {"layers": len(mlp.weights), "hidden": list(PERCEPTRON_HIDDEN), "blend": PERCEPTRON_BLEND,
                              "params": PERCEPTRON_PARAMS, "library": f"scikit-learn {_sklearn_version()}"}
    digest = hashlib.sha256(trees.threshold.tobytes() + trees.value.tobytes() + json.dumps(meta, sort_keys=True).encode())
    if shell.neighbours is not None:
        digest.update(shell.neighbours.rec_time.tobytes() + shell.neighbours.rec_problem.tobytes())
    if mlp is not None:
        for w in mlp.weights + mlp.biases:
            digest.update(w.tobytes())
    meta["version"] = time.strftime("%Y%m%d", time.gmtime()) + "-" + digest.hexdigest()[:10]
    meta["feature_names"] = names
    model = CostModel(trees, meta)
    model.neighbours = shell.neighbours
    model.perceptron = mlp
    return model


def _sklearn_version() -> str | None:
    """scikit-learn's version, None where it is not installed."""
    try:
        import sklearn
    except ImportError:
        return None
    return sklearn.__version__


def _matrix(model: CostModel, samples, sm_count, get_solver, exclusion=None):
    by_problem: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_problem.setdefault(s.problem_key, []).append(i)
    x = np.empty((len(samples), model.n_features))
    base = np.empty(len(samples))
    for key, idx in by_problem.items():
        p = parse_problem_key(key)
        xs, bs = model.rows(p, [(get_solver(samples[i].solver_id), samples[i].config) for i in idx], sm_count,
                            exclusion(p) if exclusion is not None else None)
        x[idx], base[idx] = xs, bs
    y = np.log10([s.time_ms for s in samples])
    return x, base, y


# -- the model of a device -----------------------------------------------------------------------

def model_path_for(db_path) -> Path:
    """Where the model of a system FindDB file lives: next to it, ``<name>.model.npz``."""
    p = Path(db_path)
    return p.with_name(p.name.removesuffix(".sqlite") + MODEL_SUFFIX)


_loaded: dict[Path, CostModel | None] = {}


def _load_once(path: Path, consequence: str) -> CostModel | None:
    """The model file at ``path``, read once per process; None when there is none or it cannot be
    read (logged once, with ``consequence``)."""
    if path not in _loaded:
        model = None
        if path.is_file():
            try:
                model = CostModel.load(path)
                log.debug("cost model %s (version %s)", path, model.version)
            except CostModelError as e:
                log.warning("%s; %s", e, consequence)
        _loaded[path] = model
    return _loaded[path]


def model_for_db(db_path) -> CostModel | None:
    """The model shipped next to a system FindDB file (cached per process); None when there is none
    or it cannot be read (logged once)."""
    if db_path is None:
        return None
    return _load_once(model_path_for(db_path), "immediate mode predicts from the nearest known problem")


def tune_model_path_for(db_path) -> Path:
    """Where the config-aware model of a FindDB file lives: next to it, ``<name>.tune.model.npz``
    (``miofind db train-model --configs`` writes it there)."""
    p = Path(db_path)
    return p.with_name(p.name.removesuffix(".sqlite") + TUNE_MODEL_SUFFIX)


_without_configs: set[Path] = set()


def tune_model_for_db(db_path) -> CostModel | None:
    """The config-aware model next to a FindDB file (cached per process); None when there is none,
    it cannot be read, or it has no config features (each logged once)."""
    if db_path is None:
        return None
    path = tune_model_path_for(db_path)
    model = _load_once(path, "the tuner's model strategy cannot use it")
    if model is not None and not model.config_keys:
        if path not in _without_configs:
            _without_configs.add(path)
            log.warning("cost model %s has no config features; it cannot order configs", path)
        return None
    return model


def config_order(model, problem: ProblemDescription, solver, configs, sm_count: int = 132) -> list[int] | None:
    """Indices of ``configs`` (of ``solver`` on ``problem``), predicted fastest first by ``model``'s
    times (``predict_ms``; equal times keep the given order), or None when the model cannot tell
    them apart: none of the configs' numeric parameters is a config feature of the model, or it
    does not know the solver, or was not trained on this kind of problem (``CostModel.supports``)."""
    if model is None or not configs:
        return None
    keys = set(numeric_config_keys(configs))
    if not keys & set(model.config_keys) or not model.supports(problem, [solver.id]):
        return None
    times = model.predict_ms(problem, [(solver, c) for c in configs], sm_count)
    return sorted(range(len(configs)), key=times.__getitem__)


# -- accuracy ------------------------------------------------------------------------------------

def ranking_metrics(problems) -> dict | None:
    """Accuracy over ``problems``, each a list of (measured ms, predicted ms[, place]) of its
    candidates: top-1 (the pick, the lowest place where given, else the lowest prediction, is the
    measured fastest), mean and worst slowdown of that pick against the measured fastest (mean as
    a fraction: 0.05 = 5%), and the median relative error |predicted/measured - 1| over every
    candidate. None for no problems."""
    slow, rel = [], []
    for rows in problems:
        if not rows:
            continue
        best = min(r[0] for r in rows)
        slow.append(min(rows, key=lambda r: r[-1])[0] / best)
        rel += [abs(r[1] / r[0] - 1) for r in rows]
    if not slow:
        return None
    return {"problems": len(slow), "top1": sum(s <= 1.0 + 1e-12 for s in slow) / len(slow),
            "mean_slowdown": float(np.mean(slow)) - 1, "worst_slowdown": float(max(slow)),
            "median_rel_err": float(np.median(rel))}


def cross_validate(samples: list[Sample], folds: int = 5, *, sm_count: int = 132, rounds: int = NUM_ROUNDS,
                   seed: int = 1, configs: bool = False, rank_rounds: int = RANK_ROUNDS,
                   default_configs: bool = False, tile_features: bool = False,
                   align_features: bool | None = None, neighbour_features: bool | None = None,
                   perceptron: bool | None = None) -> dict | None:
    """``folds``-fold cross-validation over problems (a problem's records all fall in one fold):
    ``ranking_metrics`` of the held-out folds' find records, each predicted at its recorded config
    (its default config with ``default_configs``) by a model ``train`` fits (with ``configs``,
    ``rank_rounds``, ``default_configs``, ``tile_features``, ``align_features``, ``perceptron``) to the other folds,
    picked in the order of ``CostModel.rank``."""
    from .registry import get_solver

    asked = default_config_samples(samples) if default_configs else samples   # the test folds' configs
    keys = sorted({s.problem_key for s in samples})
    if folds < 2 or len(keys) < folds:
        return None
    order = np.random.default_rng(seed).permutation(len(keys))
    fold_of = {keys[i]: j % folds for j, i in enumerate(order)}
    problems = []
    for f in range(folds):
        model = train([s for s in samples if fold_of[s.problem_key] != f], sm_count=sm_count, rounds=rounds,
                      configs=configs, rank_rounds=rank_rounds, default_configs=default_configs,
                      tile_features=tile_features, align_features=align_features,
                      neighbour_features=neighbour_features, perceptron=perceptron)
        test: dict[str, list[Sample]] = {}
        for s in asked:
            if fold_of[s.problem_key] == f and not s.default:
                test.setdefault(s.problem_key, []).append(s)
        for key, ss in test.items():
            solvers = [get_solver(s.solver_id) for s in ss]
            if not model.supports(parse_problem_key(key), [s.id for s in solvers]):
                continue
            pred, order = model.rank(parse_problem_key(key), [(sv, s.config) for sv, s in zip(solvers, ss)], sm_count)
            place = {i: j for j, i in enumerate(order)}
            problems.append([(s.time_ms, p, place[i]) for i, (s, p) in enumerate(zip(ss, pred))])
    return ranking_metrics(problems)
