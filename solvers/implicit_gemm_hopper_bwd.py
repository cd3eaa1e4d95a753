"""Hopper implicit GEMM, backward data for stride 1: the forward wgmma kernel
(kernels_src/implicit_gemm_hopper_fwd.cu) on dy with the flipped, transposed filter, which
kernels_src/implicit_gemm_hopper_bwd.cu copies into the workspace first (C x Y x X x K elements;
a split config's FP32 partial planes follow it, 256-byte aligned). FP16/BF16, NHWC, groups = 1, C and K multiples of 8, pads at most the dilated filter extent."""

from __future__ import annotations

import dataclasses
import math

from miofind.launch import PTR, Launch
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES

from .implicit_gemm_hopper_base import (ALIGN, SMEM_STATIC, WS_ALIGN, ImplicitGemmHopperBase, check_aligned,
                                        forward_kernels, partial_bytes)

FLIP_SRC = "implicit_gemm_hopper_bwd.cu"
FLIP_BLOCK = 256


def forward_view(p: ProblemDescription) -> ProblemDescription:
    """The forward problem whose output is this backward-data problem's dx (stride 1): input dy
    (K channels, the output size), filter C x Y x X x K, pads (filter - 1) * dilation - pad."""
    pads = tuple((f - 1) * d - q for f, d, q in zip(p.filter_size, p.dilations, p.pads))
    return ProblemDescription.make("F", n=p.n, c=p.k, k=p.c, in_size=p.out_size, filter_size=p.filter_size,
                                   pads=pads, strides=1, dilations=p.dilations, layout="NHWC", dtype=p.dtype)


class ImplicitGemmHopperBwd(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperBwd"
    version = 2                 # 2: split-K of the forward kernel (partial planes after the flipped filter)
    algorithm = "miopenConvolutionBwdDataAlgoImplicitGEMM"
    directions = frozenset("B")
    source = "implicit_gemm_hopper_fwd.cu"
    kernel_name = "igemm_hopper_fwd"

    @property
    def kernel_files(self):
        return (*super().kernel_files, FLIP_SRC)

    def applicability(self, problem: ProblemDescription):
        p = problem.as_conv()
        if p.direction == "B" and p.solvable:
            if any(s != 1 for s in p.strides):
                return not_applicable(f"strides {p.strides} not supported (1 only)")
            if any(q > (f - 1) * d for f, d, q in zip(p.filter_size, p.dilations, p.pads)):
                return not_applicable(f"pads {p.pads} exceed the dilated filter extent")
        base = super().applicability(problem)
        if not base:
            return base
        if p.c * p.k * math.prod(p.filter_size) >= 2**31:
            return not_applicable("filter of 2^31 elements or more")
        return APPLICABLE

    def forward_problem(self, p: ProblemDescription) -> ProblemDescription:
        return forward_view(p)

    def _fwd(self, problem: ProblemDescription) -> ProblemDescription:
        return forward_view(problem.as_conv())

    def default_config(self, problem: ProblemDescription) -> dict:
        return super().default_config(self._fwd(problem))

    def config_space(self, problem: ProblemDescription):
        yield from super().config_space(self._fwd(problem))

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        return super().is_valid_config(self._fwd(problem), config)

    def flip_bytes(self, p: ProblemDescription) -> int:
        """The flipped filter's share of the workspace (256-byte aligned): the partial planes start there."""
        return ceil_div(p.c * p.k * math.prod(p.filter_size) * 2, WS_ALIGN) * WS_ALIGN

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        """The flipped filter, then a split config's FP32 partial planes (the default config when None)."""
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        return self.flip_bytes(p) + partial_bytes(forward_view(p), cfg)

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        pf = forward_view(p)
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        fwd, smem = forward_kernels(pf, cfg, self.source, self.kernel_name)
        main = fwd[0]
        total = p.c * p.k * math.prod(p.filter_size)
        fy, fx = p.filter_size
        flip = KernelInfo(FLIP_SRC, "igemm_hopper_flip", (min(ceil_div(total, FLIP_BLOCK), 65535), 1, 1),
                          (FLIP_BLOCK, 1, 1),
                          macros=(("DATA_T", CUDA_TYPES[p.dtype]), ("FK", str(p.k)), ("FY", str(fy)),
                                  ("FX", str(fx)), ("FC", str(p.c))))
        ws = self.workspace_bytes(p, cfg)
        part = self.flip_bytes(p)            # offset of the partial planes (split configs)
        sid = self.id

        def factory(kerns):
            kflip, kmain = kerns[:2]
            if smem > SMEM_STATIC:
                kmain.max_dynamic_shared_size_bytes = smem
            lflip = Launch(kflip, flip.grid, flip.block, (PTR, PTR))
            lmain = Launch(kmain, main.grid, main.block, (PTR, PTR, PTR, PTR), shared_mem=smem)
            lred = Launch(kerns[2], fwd[1].grid, fwd[1].block, (PTR, PTR)) if len(fwd) > 1 else None

            def invoker(a, b, out, workspace, stream):
                if a % ALIGN or out % ALIGN:
                    check_aligned(sid, (("first input", a), ("output", out)))
                if not workspace:
                    raise ValueError(f"{sid}: workspace of {ws} bytes required, got none")
                lflip(stream, b, workspace)
                if lred is None:
                    lmain(stream, a, workspace, out, out)       # unsplit: the partial pointer is not read
                    return
                lmain(stream, a, workspace, out, workspace + part)
                lred(stream, workspace + part, out)
            return invoker

        return ConvSolution(self.id, [flip, *fwd], ws, factory, cfg)
