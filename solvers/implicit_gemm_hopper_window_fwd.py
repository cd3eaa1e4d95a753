"""Hopper implicit GEMM over shifted windows, forward (kernels_src/implicit_gemm_hopper_window_fwd.cu):
stride 1, dilation 1, C % 64 == 0. Rows run over the padded image, so one window of x serves the X taps
of a filter row (x read X times less than by the per-tap gather of ConvImplicitGemmHopperFwd); the
whole filter of a block's BN output channels stays in shared memory; a producer warpgroup streams the
windows to two wgmma warpgroups; blocks are persistent over M tiles. FP16/BF16, NHWC, groups = 1.

Tunables: BM (128 or 256 virtual rows), BN (64 or 128 output channels), STAGES (window buffers, 3-6).
Applicable where the resident filter and three windows fit shared memory (Y*X*C*BN*2 bytes beside
STAGES x (BM + 8) x 128)."""

from __future__ import annotations

import math

from miofind.launch import PTR, Launch
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, ceil_div, not_applicable

from .implicit_gemm_hopper_base import (ALIGN, ARCH, SMEM_LIMIT, SMEM_STATIC, ImplicitGemmHopperBase, check_aligned,
                                        problem_macros, sm_count)

KEYS = ("BM", "BN", "STAGES")


def padded(p: ProblemDescription) -> tuple[int, int]:
    """(HP, WP): the padded image, Ho + Y - 1 and Wo + X - 1 at stride 1."""
    return p.out_size[0] + p.filter_size[0] - 1, p.out_size[1] + p.filter_size[1] - 1


def virtual_rows(p: ProblemDescription) -> int:
    hp, wp = padded(p)
    return p.n * hp * wp


def smem_bytes(p: ProblemDescription, cfg) -> int:
    """STAGES windows of BM + 8 rows and the resident filter (Y*X*C/64 tiles of BN x 64), 128-byte rows,
    plus 1 KiB to align to the swizzle period."""
    taps = math.prod(p.filter_size)
    return (cfg["STAGES"] * (cfg["BM"] + 8) + taps * (p.c // 64) * cfg["BN"]) * 128 + 1024


def config_ok(p: ProblemDescription, cfg) -> bool:
    bm, bn, st = (cfg[k] for k in KEYS)
    if bm not in (128, 256) or bn not in (64, 128) or st not in range(3, 7):
        return False
    return smem_bytes(p, cfg) + 16 * st <= SMEM_LIMIT


def grid(p: ProblemDescription, cfg) -> tuple[int, int, int]:
    """(persistent blocks over the M tiles of one N tile, N tiles, 1): one block per SM in all."""
    nt = ceil_div(p.k, cfg["BN"])
    mt = ceil_div(virtual_rows(p), cfg["BM"])
    return min(mt, max(1, sm_count() // nt)), nt, 1


class ImplicitGemmHopperWindowFwd(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperWindowFwd"
    version = 1
    algorithm = "miopenConvolutionFwdAlgoImplicitGEMM"
    directions = frozenset("F")
    source = "implicit_gemm_hopper_window_fwd.cu"
    kernel_name = "igemm_hopper_window_fwd"
    config_keys = KEYS
    tile_ok = staticmethod(config_ok)

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        if any(s != 1 for s in p.strides) or any(d != 1 for d in p.dilations):
            return not_applicable(f"strides {p.strides}, dilations {p.dilations}: stride 1 and dilation 1 only")
        if p.c % 64:
            return not_applicable(f"C={p.c}: a multiple of 64 needed (64-channel windows)")
        if p.filter_size[1] > 9:
            return not_applicable(f"filter width {p.filter_size[1]}: at most 9 (8 extra window rows)")
        if not config_ok(p, {"BM": 128, "BN": 64, "STAGES": 3}):
            return not_applicable(f"filter {p.k}x{p.c}x{p.filter_size}: its 64-channel slice does not fit shared memory")
        if virtual_rows(p) + 2 * 256 >= 2**31:
            return not_applicable(f"{virtual_rows(p)} padded pixels: 2^31 or more")
        return APPLICABLE

    def default_config(self, problem: ProblemDescription) -> dict:
        p = problem.as_conv()
        best = None
        for bn in (128, 64) if p.k > 64 else (64,):
            for st in (4, 3):
                cfg = {"BM": 256, "BN": bn, "STAGES": st}
                if config_ok(p, cfg):
                    return cfg
                best = best or (cfg if config_ok(p, dict(cfg, BM=128)) else None)
        return dict(best, BM=128) if best else {"BM": 128, "BN": 64, "STAGES": 3}

    def config_space(self, problem: ProblemDescription):
        p = problem.as_conv()
        for bm in (128, 256):
            for bn in (64, 128):
                if bn > max(64, 2 * p.k):
                    continue
                for st in range(3, 7):
                    cfg = {"BM": bm, "BN": bn, "STAGES": st}
                    if config_ok(p, cfg):
                        yield cfg

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        return 0

    def legacy_config(self, config):
        return config

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        mac = {**problem_macros(p), **cfg}
        smem = smem_bytes(p, cfg)
        main = KernelInfo(self.source, self.kernel_name, grid(p, cfg), (384, 1, 1),
                          macros=tuple((k, str(v)) for k, v in mac.items()), options=(f"-arch={ARCH}",))
        sid = self.id

        def factory(kerns):
            kern = kerns[0]
            if smem > SMEM_STATIC:
                kern.max_dynamic_shared_size_bytes = smem
            launch = Launch(kern, main.grid, main.block, (PTR, PTR, PTR), shared_mem=smem)

            def invoker(a, b, out, workspace, stream):
                if a % ALIGN or b % ALIGN or out % ALIGN:
                    check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
                launch(stream, a, b, out)
            return invoker

        return ConvSolution(self.id, [main], 0, factory, cfg)
