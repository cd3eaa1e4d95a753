"""Implicit GEMM convolution, backward weights (kernels_src/implicit_gemm_wrw.cu): M = K/G, N = C/G*Z*Y*X,
K = N*Do*Ho*Wo, with a deterministic split-K: SPLITK chunks of the reduction write FP32 partial
tiles to the workspace and a second kernel sums them in a fixed order (no atomics)."""

from __future__ import annotations

from miofind.problem import ProblemDescription

from .implicit_gemm_base import (GRID_YZ, INT32_MAX, MAX_SPLITK, ImplicitGemmBase, ImplicitGemmPlan, pow2_ceil, config_keys, default_split,
                         default_xpose, fit_threads, math_kind, space, split_geometry, tile_ok)


class ImplicitGemmWrw(ImplicitGemmBase):
    id = "ConvImplicitGemmWrw"
    algorithm = "miopenConvolutionBwdWeightsAlgoImplicitGEMM"
    directions = frozenset("W")
    source = "implicit_gemm_wrw.cu"
    kernel_name = "igemm_wrw"

    def default_config(self, problem: ProblemDescription) -> dict:
        p = problem.as_conv()
        plan = ImplicitGemmPlan(p)
        cfg = fit_threads(plan.math, {"BM": pow2_ceil(plan.m, 32, 128), "BN": pow2_ceil(plan.n, 16, 128),
                                      "BK": 8 if plan.math == 0 else (32 if plan.math == 1 else 16), "STAGES": 3})
        if math_kind(p):
            cfg["XPOSE"] = default_xpose(p, cfg)
        cfg["SPLITK"] = default_split(plan, cfg)
        return cfg

    def config_space(self, problem: ProblemDescription):
        p = problem.as_conv()
        for cfg in space(p):
            plan = ImplicitGemmPlan.of(p, cfg)
            d = default_split(plan, cfg)
            for s in sorted({1, max(1, d // 2), d, 2 * d}):
                c = dict(cfg, SPLITK=s)
                if (s == 1 or split_geometry(plan, c)[0] == s) and self.is_valid_config(p, c):
                    yield c

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        p = problem.as_conv()
        if not isinstance(config, dict) or set(config) != set(config_keys(p)):
            return False
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 0 for v in config.values()):
            return False
        plan = ImplicitGemmPlan.of(p, config)
        if not 1 <= config["SPLITK"] <= MAX_SPLITK or not tile_ok(plan, config):
            return False
        eff, _ = split_geometry(plan, config)
        return eff * p.groups <= GRID_YZ and (eff == 1 or eff * p.k * plan.n < INT32_MAX)
