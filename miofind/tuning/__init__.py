"""Tuning tunable solvers into the PerfDB: strategies, the tuner, and fleet workers."""

from .tuner import Budget, GpuMeasurer, Outcome, ProblemOutcome, Tuner, TuneOptions

__all__ = ["Budget", "GpuMeasurer", "Outcome", "ProblemOutcome", "Tuner", "TuneOptions"]
