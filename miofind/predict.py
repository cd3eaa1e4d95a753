"""Predicted solver times for immediate mode, when the FindDB has no answer for a problem.

Two predictors, tried in order:

1. **Nearest known problem.** Among the problems the FindDBs hold for this device with the same
   direction, data type, layouts, math, filter, strides, dilations, grouping and dimensionality,
   take the one nearest in log2(N, C, K, Ho, Wo) and scale its measured times by the FLOP ratio.
   Solvers it lacks get the cost model's time, scaled by the median measured/model ratio of the
   solvers it has (the model calibrated on that problem).
2. **Per-solver cost model** (MIOpen's fallback, "predicted utilisation"): time = max(FLOPs /
   (peak x efficiency of the family), bytes / (0.7 x bandwidth)) + launch overhead. Peaks and
   efficiencies are coarse H100 figures (``_PEAK_TFLOPS``, ``_EFFICIENCY``); they rank solvers,
   they are not measurements.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass

from .problem import ProblemDescription

# dense peaks of an H100 SXM (132 SMs), TFLOP/s; scaled by SM count for other parts of the family
_PEAK_TFLOPS = {"FP32": 67.0, "TF32": 495.0, "FP16": 990.0, "BF16": 990.0}
_BANDWIDTH = 3.0e12   # bytes/s
_LAUNCH_MS = 0.006
# fraction of the peak each family reaches on a typical layer (from bench/results/all-families-gpu-suite)
_EFFICIENCY = {
    "FP32": {"winograd": 0.75, "cudnn": 0.55, "implicit_gemm": 0.5, "fft": 0.4, "gemm": 0.35, "direct": 0.25,
             "depthwise": 0.25},
    "LOW": {"cudnn": 0.35, "implicit_gemm": 0.25, "gemm": 0.2, "winograd": 0.06, "fft": 0.04, "direct": 0.02,
            "depthwise": 0.02},
}
_NAIVE_EFFICIENCY = 0.002


@dataclass(frozen=True)
class Prediction:
    time_ms: float
    basis: str      # "nearest <key> (distance d)" or "model"


def model_time_ms(problem: ProblemDescription, solver, sm_count: int = 132) -> float:
    """The cost model's time for ``solver`` on ``problem`` (see the module docstring)."""
    p = problem.as_conv()
    a, b, o = p.io_shapes()
    return Roofline(p, p.flops(), sum(math.prod(s) for s in (a, b, o)), sm_count).ms(solver.family, solver.is_reference)


class Roofline:
    """``model_time_ms`` of any solver on one non-transposed problem ``p`` whose FLOPs and element
    count of x, w and y together are known (the learned cost model computes them once per problem)."""

    __slots__ = ("flops", "peak", "memory", "eff")

    def __init__(self, p: ProblemDescription, flops: int, elements: int, sm_count: int = 132):
        low = p.dtype in ("FP16", "BF16")
        peak_key = p.dtype if low else ("TF32" if p.math == "tf32" else "FP32")
        self.flops = flops
        self.peak = _PEAK_TFLOPS[peak_key] * 1e12 * sm_count / 132
        self.memory = (2 if low else 4) * elements / (0.7 * _BANDWIDTH)
        self.eff = _EFFICIENCY["LOW" if low else "FP32"]

    def ms(self, family: str, is_reference: bool) -> float:
        """The time in ms of a solver of ``family`` (a naive reference solver: ``is_reference``)."""
        eff = _NAIVE_EFFICIENCY if is_reference else self.eff.get(family, 0.1)
        return max(self.flops / (self.peak * eff), self.memory) * 1e3 + _LAUNCH_MS


@functools.lru_cache(maxsize=16384)
def parse_problem_key(key: str) -> ProblemDescription | None:
    """The problem of a FindDB key, or None for a key that does not parse (cached: the cost model and
    the nearest-problem predictor parse the same keys over and over)."""
    try:
        return ProblemDescription.from_key(key)
    except ValueError:
        return None


def _shape_class(p: ProblemDescription) -> tuple:
    """What must match exactly for one problem's times to predict another's."""
    grouping = "dw" if p.groups > 1 and p.groups == p.c else ("g" if p.groups > 1 else "")
    return (p.direction, p.layouts, p.dtypes, p.math, p.transposed, len(p.in_size), p.filter_size, p.strides,
            p.dilations, grouping, p.pads == tuple(f // 2 for f in p.filter_size))


def _sizes(p: ProblemDescription) -> tuple[float, ...]:
    return tuple(math.log2(max(1, v)) for v in (p.n, p.c, p.k, *p.out_size))


def nearest_problem(problem: ProblemDescription, keys) -> tuple[str, float] | None:
    """The nearest key of the same shape class, and its distance; None if there is none."""
    cls, here = _shape_class(problem), _sizes(problem)
    best = None
    for k in keys:
        q = parse_problem_key(k)
        if q is None or k == problem.key() or _shape_class(q) != cls:
            continue
        d = sum(abs(x - y) for x, y in zip(here, _sizes(q)))
        if best is None or d < best[1]:
            best = (k, d)
    return best


def predict(problem: ProblemDescription, solvers, nearest: tuple[str, float] | None, nearest_records,
            sm_count: int = 132) -> dict[str, Prediction]:
    """Predicted time per solver id, from the nearest problem's records when given, else the model."""
    model = {s.id: model_time_ms(problem, s, sm_count) for s in solvers}
    if nearest is None or not nearest_records:
        return {sid: Prediction(t, "model") for sid, t in model.items()}
    key, dist = nearest
    q = parse_problem_key(key)
    scale = problem.flops() / q.flops()
    by_solver = {r.solver_id: r for r in nearest_records}
    basis = f"nearest {key} (distance {dist:.2f})"
    ratios = [by_solver[s.id].time_ms / model_time_ms(q, s, sm_count) for s in solvers if s.id in by_solver]
    calib = statistics.median(ratios) if ratios else 1.0
    out = {}
    for s in solvers:
        r = by_solver.get(s.id)
        if r is not None:
            out[s.id] = Prediction(r.time_ms * scale, basis)
        else:
            out[s.id] = Prediction(model[s.id] * calib, f"model calibrated on {key}")
    return out
