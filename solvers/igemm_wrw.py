"""Implicit GEMM convolution, backward weights (kernels_src/igemm_wrw.cu): M = K/G, N = C/G*Z*Y*X,
K = N*Do*Ho*Wo, with a deterministic split-K: SPLITK chunks of the reduction write FP32 partial
tiles to the workspace and a second kernel sums them in a fixed order (no atomics)."""

from __future__ import annotations

from miofind.problem import ProblemDescription
from miofind.solver import ConvSolution, KernelInfo, ceil_div

from .igemm_base import (GRID_YZ, INT32_MAX, SM_COUNT, SMEM_STATIC, IgemmBase, Plan, _pow2_ceil, config_keys,
                         fit_threads, macros, nthreads, smem_bytes, space, tile_ok)

RED_BLOCK = 256
SPLITS = (1, 2, 4, 8, 16, 32, 64)
MAX_SPLITK = 256


def split_geometry(plan: Plan, cfg) -> tuple[int, int]:
    """(effective number of chunks, chunk length): chunks are whole BK tiles, none empty."""
    bk = cfg["BK"]
    ktiles = ceil_div(plan.k, bk)
    per = ceil_div(ktiles, max(1, min(cfg["SPLITK"], ktiles)))
    return ceil_div(ktiles, per), per * bk


class IgemmWrw(IgemmBase):
    id = "ConvImplicitGemmWrw"
    algorithm = "miopenConvolutionBwdWeightsAlgoImplicitGEMM"
    directions = frozenset("W")
    source = "igemm_wrw.cu"
    kernel_name = "igemm_wrw"

    def default_config(self, problem: ProblemDescription) -> dict:
        plan = Plan(problem.as_conv())
        bn = _pow2_ceil(plan.n, 16, 128)
        bm = _pow2_ceil(plan.m, 32, 128)
        cfg = fit_threads(plan.math, {"BM": bm, "BN": bn, "BK": 8 if plan.math == 0 else (32 if plan.math == 1 else 16),
                                      "STAGES": 3})
        # split the reduction until about two blocks per SM, each chunk at least 8 K tiles
        tiles = ceil_div(plan.m, bm) * ceil_div(plan.n, bn) * plan.p.groups
        ktiles = ceil_div(plan.k, cfg["BK"])
        split = max(1, min(ceil_div(2 * SM_COUNT, tiles), ktiles // 8, MAX_SPLITK, GRID_YZ // plan.p.groups))
        while split > 1 and split * plan.p.k * plan.n >= INT32_MAX:
            split //= 2
        cfg["SPLITK"] = split
        return cfg

    def config_space(self, problem: ProblemDescription):
        p = problem.as_conv()
        plan = Plan(p)
        for cfg in space(plan):
            ktiles = ceil_div(plan.k, cfg["BK"])
            for s in SPLITS:
                if s > 1 and ktiles // s < 2:
                    break
                c = dict(cfg, SPLITK=s)
                if self.is_valid_config(p, c):
                    yield c

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        plan = Plan(problem.as_conv())
        if not isinstance(config, dict) or set(config) != set(config_keys(plan)):
            return False
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in config.values()):
            return False
        if config["SPLITK"] > MAX_SPLITK or not tile_ok(plan, config):
            return False
        eff, _ = split_geometry(plan, config)
        return eff * plan.p.groups <= GRID_YZ and (eff == 1 or eff * plan.p.k * plan.n < INT32_MAX)

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        p = problem.as_conv()
        plan = Plan(p)
        cfg = dict(config) if config else self.default_config(p)
        eff, _ = split_geometry(plan, cfg)
        return 0 if eff == 1 else 4 * eff * p.k * plan.n

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p, plan, cfg = self._check(problem, config)
        eff, kchunk = split_geometry(plan, cfg)
        mac = macros(plan, cfg)
        mac.update(SPLITK=eff, KCHUNK=kchunk, RED_BLOCK=RED_BLOCK)
        mac = tuple((k, str(v)) for k, v in mac.items())
        nt = nthreads(plan.math, cfg)
        smem = smem_bytes(plan, cfg)
        grid = (ceil_div(plan.m, cfg["BM"]), ceil_div(plan.n, cfg["BN"]), p.groups * eff)
        kernels = [KernelInfo(self.source, "igemm_wrw", grid, (nt, 1, 1), macros=mac, shared_bytes=smem)]
        ws = self.workspace_bytes(p, cfg)
        if eff > 1:
            kernels.append(KernelInfo(self.source, "igemm_wrw_reduce", (ceil_div(p.k * plan.n, RED_BLOCK), 1, 1),
                                      (RED_BLOCK, 1, 1), macros=mac))
        launch = [(k.grid, k.block) for k in kernels]

        def factory(kerns):
            gemm = kerns[0]
            if smem > SMEM_STATIC:
                gemm.max_dynamic_shared_size_bytes = smem

            def invoker(a, b, out, workspace=None):
                if eff == 1:
                    gemm(launch[0][0], launch[0][1], (a, b, out, out), shared_mem=smem)
                else:
                    gemm(launch[0][0], launch[0][1], (a, b, out, workspace), shared_mem=smem)
                    kerns[1](launch[1][0], launch[1][1], (workspace, out))
            return invoker

        return ConvSolution(self.id, kernels, ws, factory, cfg)
