"""Tiled direct convolution, forward, NCHW 2D, shared memory (kernels_src/direct_tiled_fwd.cu).

Problem sizes are compile-time macros (one build per problem, as MIOpen's direct solvers do);
the tile shape, output channels per thread and the input-channel chunk are tunable.
"""

from __future__ import annotations

import itertools

from miofind.launch import A, B, OUT, PTR, Launch, with_recipe
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES, index_overflow, wide_index

SOURCE = "direct_tiled_fwd.cu"
SMEM_LIMIT = 48 * 1024
GRID_X_MAX = 2**31 - 1
SPACE = {
    "TILE_W": (8, 16, 32),
    "TILE_H": (2, 4, 8, 16),
    "KPT": (2, 4, 8, 16),
    "CCH": (2, 4, 8, 16),
}

def _smem_bytes(p: ProblemDescription, cfg) -> int:
    (y, x), (sh, sw), (dh, dw) = p.filter_size, p.strides, p.dilations
    in_th = (cfg["TILE_H"] - 1) * sh + (y - 1) * dh + 1
    in_tw = (cfg["TILE_W"] - 1) * sw + (x - 1) * dw + 1
    return 4 * cfg["CCH"] * (in_th * in_tw + y * x * cfg["KPT"])

def _grid(p: ProblemDescription, cfg) -> tuple[int, int, int]:
    (ho, wo), kpg = p.out_size, p.k // p.groups
    return (ceil_div(ho, cfg["TILE_H"]) * ceil_div(wo, cfg["TILE_W"]), p.groups * ceil_div(kpg, cfg["KPT"]), p.n)


class DirectTiledFwd(Solver):
    id = "ConvDirectTiledFwd"
    family = "direct"
    algorithm = "miopenConvolutionFwdAlgoDirect"
    directions = frozenset("F")
    tunable = True
    arbitrary_out_size = True
    kernel_files = (SOURCE,)

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        if p.direction != "F":
            return not_applicable(f"direction {p.direction} not supported (forward only)")
        if p.spatial_dims != 2:
            return not_applicable("3D not supported (2D only)")
        if p.layouts != ("NCHW",) * 3:
            return not_applicable(f"layout {'-'.join(p.layouts)} not supported (NCHW only)")
        if p.filter_size[0] * p.filter_size[1] > 121:
            return not_applicable(f"filter {p.filter_size} larger than 11x11")
        if p.n > 65535:
            return not_applicable(f"batch {p.n} exceeds the grid's z limit 65535")
        cfg = self.default_config(p)
        if not self.is_valid_config(p, cfg):
            return not_applicable("no tile configuration fits 48 KiB of shared memory")
        why = index_overflow(p)
        if why:
            return not_applicable(why)
        gx, gy, _ = _grid(p, cfg)
        if gx > GRID_X_MAX or gy > 65535:
            return not_applicable(f"launch grid {gx} x {gy} exceeds CUDA's limits (2^31-1 x 65535)")
        return APPLICABLE

    def default_config(self, problem: ProblemDescription) -> dict:
        p = problem.as_conv()
        ho, wo = p.out_size
        kpg = p.k // p.groups
        cfg = {"TILE_W": 16 if wo > 8 else 8, "TILE_H": 8 if ho > 4 else 4,
               "KPT": 8 if kpg >= 8 else (4 if kpg >= 4 else 2), "CCH": 8}
        while _smem_bytes(p, cfg) > SMEM_LIMIT and cfg["CCH"] > 2:
            cfg["CCH"] //= 2
        while _smem_bytes(p, cfg) > SMEM_LIMIT and cfg["TILE_H"] > 2:
            cfg["TILE_H"] //= 2
        return cfg

    def config_space(self, problem: ProblemDescription):
        p = problem.as_conv()
        for vals in itertools.product(*SPACE.values()):
            cfg = dict(zip(SPACE, vals))
            if self.is_valid_config(p, cfg):
                yield cfg

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        if not isinstance(config, dict) or set(config) != set(SPACE):
            return False
        if any(config[k] not in v for k, v in SPACE.items()):
            return False
        nt = config["TILE_W"] * config["TILE_H"]
        p = problem.as_conv()
        return 32 <= nt <= 512 and _smem_bytes(p, config) <= SMEM_LIMIT

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = dict(config) if config else self.default_config(p)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        (hi, wi), (ho, wo), (y, x) = p.in_size, p.out_size, p.filter_size
        macros = {
            "DATA_T": CUDA_TYPES[p.dtype], "INDEX_T": "long long" if wide_index(p) else "int",
            "C_": p.c, "K_": p.k, "G_": p.groups, "HI": hi, "WI": wi, "HO": ho, "WO": wo, "Y_": y, "X_": x,
            "PH": p.pads[0], "PW": p.pads[1], "SH": p.strides[0], "SW": p.strides[1],
            "DH": p.dilations[0], "DW": p.dilations[1], **cfg,
        }
        grid = _grid(p, cfg)
        kinfo = KernelInfo(SOURCE, "direct_tiled_fwd", grid, (cfg["TILE_W"] * cfg["TILE_H"], 1, 1),
                           macros=tuple((k, str(v)) for k, v in macros.items()))

        def factory(kernels):
            launch = Launch(kernels[0], kinfo.grid, kinfo.block, (PTR, PTR, PTR))

            def invoker(a, b, out, workspace, stream):
                launch(stream, a, b, out)
            return with_recipe(invoker, [(launch, ((A, 0), (B, 0), (OUT, 0)))])

        return ConvSolution(self.id, [kinfo], 0, factory, cfg)

