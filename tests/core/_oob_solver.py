"""A solver that writes far out of bounds after computing a correct result: its launch leaves a
sticky CUDA error (an illegal address) in the context. A module of its own, at top level, so that the
child process of ``miofind.isolate`` can import it (``isolate.solver_ref``); never registered."""

from __future__ import annotations

import dataclasses

from miofind.solver import Solver

COPIED = "ConvImplicitGemmFwd"
# 2^40 floats past the output: 4 TiB away, never mapped
_OOB_SRC = r'''extern "C" __global__ void miofind_test_oob(float* p, long long off) { p[off] = 1.0f; }'''
OFFSET = 1 << 40


def _out_of_bounds(factory):
    def make(kernels):
        import cupy
        import numpy as np

        inner = factory(kernels)
        kernel = cupy.RawKernel(_OOB_SRC, "miofind_test_oob")

        def invoker(a, b, out, workspace, stream):
            inner(a, b, out, workspace, stream)
            with cupy.cuda.ExternalStream(stream):
                kernel((1,), (1,), (np.uint64(out), np.int64(OFFSET)))

        return invoker

    return make


def _real():
    from miofind.registry import get_solver

    return get_solver(COPIED)


class OutOfBoundsWriteFwd(Solver):
    """Implicit GEMM forward, then one write 4 TiB past its output."""

    id = "TestOutOfBoundsWriteFwd"
    family = "implicit_gemm"
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")

    @property
    def dtypes(self):
        return _real().dtypes

    @property
    def kernel_files(self):
        return _real().kernel_files

    def applicability(self, problem):
        return _real().applicability(problem)

    def workspace_bytes(self, problem, config=None):
        return _real().workspace_bytes(problem, config)

    def get_solution(self, problem, config=None):
        sol = _real().get_solution(problem, config)
        return dataclasses.replace(sol, solver_id=self.id, invoker_factory=_out_of_bounds(sol.invoker_factory))
