"""Hopper implicit GEMM forward with a fused epilogue (kernels_src/implicit_gemm_hopper_fwd.cu, EPI_BIAS and
EPI_ACT): y = act(conv(x, w) + bias), the bias added and the activation (ReLU or the exact GELU) applied to
the FP32 sums before the output's rounding, so y is written once. Fused forward problems only
(``ProblemDescription.fused``); the plain forward problem is ConvImplicitGemmHopperFwd's. Same tiles,
tunables and split-K as that solver; when split, the reduce kernel applies the epilogue."""

from __future__ import annotations

from miofind.launch import PTR, Launch
from miofind.solver import APPLICABLE, ConvSolution, not_applicable

from .implicit_gemm_hopper_base import ALIGN, SMEM_STATIC, check_aligned, forward_kernels, partial_bytes
from .implicit_gemm_hopper_fwd import ImplicitGemmHopperFwd

ACT_CODES = {"none": 0, "relu": 1, "gelu": 2}


class ImplicitGemmHopperFwdBiasActiv(ImplicitGemmHopperFwd):
    id = "ConvImplicitGemmHopperFwdBiasActiv"
    version = 1
    fused_epilogue = True

    def applicability(self, problem):
        base = super().applicability(problem)
        if not base:
            return base
        if not problem.as_conv().fused:
            return not_applicable("no fused epilogue (bias 0, activation none): ConvImplicitGemmHopperFwd's problem")
        return APPLICABLE

    def get_solution(self, problem, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        epi = {"EPI_BIAS": int(bool(p.bias)), "EPI_ACT": ACT_CODES[p.activation]}
        kernels, smem = forward_kernels(p, cfg, self.source, self.kernel_name, overrides=epi)
        ws = partial_bytes(p, cfg)
        sid = self.id

        def factory(kerns):
            kern = kerns[0]
            if smem > SMEM_STATIC:
                kern.max_dynamic_shared_size_bytes = smem
            launch = Launch(kern, kernels[0].grid, kernels[0].block, (PTR,) * 5, shared_mem=smem)
            red = Launch(kerns[1], kernels[1].grid, kernels[1].block, (PTR,) * 3) if ws else None

            def invoker(a, b, out, workspace, stream, bias=0):
                if a % ALIGN or b % ALIGN or out % ALIGN:
                    check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
                if epi["EPI_BIAS"] and not bias:
                    raise ValueError(f"{sid}: {p.key()} has a fused bias; got a null bias pointer")
                if red is None:
                    launch(stream, a, b, out, out, bias)        # unsplit: the partial pointer is not read
                    return
                if not workspace:
                    raise ValueError(f"{sid}: workspace of {ws} bytes required, got none")
                launch(stream, a, b, out, workspace, bias)
                red(stream, workspace, out, bias)
            return invoker

        return ConvSolution(self.id, kernels, ws, factory, cfg)
