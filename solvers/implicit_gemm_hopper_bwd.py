"""Hopper implicit GEMM, backward data by stride phases: dx splits into strides[0] x strides[1] phases,
each a stride-1 forward convolution of dy with the sub-filter of the taps that reach it, reversed
(kernels_src/implicit_gemm_hopper_fwd.cu built with B_MN = 1: it reads those taps of w in place,
MN-major, and writes that phase's pixels of dx). A split config's FP32 partial planes are the workspace
(reused phase after phase); the pixels of phases no tap reaches (a filter narrower than the stride) are
zeroed by kernels_src/implicit_gemm_hopper_bwd.cu. Stride 1 is one phase of all the taps. FP16/BF16,
NHWC, groups = 1, C and K multiples of 8, dilation 1 with strides above 1. With TMA (K % 64 == 0) each
phase's producer copies dy as im2col boxes around that phase's pixels and w as boxes of the reversed tap's
(C, K) plane, MN-major (``dy_im2col``, ``w_planes``); the default is the forward's rule on the main phase. TMA = 2: the
forward's 32-deep K tiles over dy's channels (64-byte dy rows; w's boxes 32 of dy's channels deep)."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

from miofind import tma
from miofind.launch import B, MAP, OUT, PTR, WS, Launch, with_recipe
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES, needs_int64

from .implicit_gemm_hopper_base import (ALIGN, BK, SMEM_STATIC, WS_ALIGN, ImplicitGemmHopperBase, check_aligned,
                                        default_tile, dense_pixels, esize, forward_kernels, kdepth, padded_channels,
                                        partial_bytes, recipe_steps, sm_count, space, swizzle_of, tile_depth, x_dense)

ZERO_SRC = "implicit_gemm_hopper_bwd.cu"
ZERO_BLOCK = 256
# the rewrite of w as every phase's dense filter, for the backward-data solvers whose phases read a K-major filter (the
# TF32 one and the swapped-operand one)
FLIP_SRC = "implicit_gemm_hopper_flip.cu"


def flip_kernel(p: ProblemDescription, round_tf32: bool = False) -> KernelInfo:
    """The filter rewrite of backward-data problem ``p`` (kernels_src/implicit_gemm_hopper_flip.cu): w, its first
    argument, as every stride phase's dense KYXC filter (dx's channels out, dy's in, taps reversed) at its second;
    with ``round_tf32`` (FP32), each element rounded to TF32 (cvt.rna) as it is written."""
    (sh, sw), (fy, fx) = p.strides, p.filter_size
    macros = (("DATA_T", CUDA_TYPES[p.dtype]), ("FK", str(p.k)), ("FC", str(p.c)), ("FY", str(fy)), ("FX", str(fx)),
              ("SH", str(sh)), ("SW", str(sw))) + ((("ROUND_TF32", "1"),) if round_tf32 else ())
    return KernelInfo(FLIP_SRC, "igemm_hopper_bwd_flip", (ceil_div(p.c, 32), ceil_div(p.k, 32), fy * fx), (32, 8, 1),
                      macros=macros)


def flipped_bytes(p: ProblemDescription) -> int:
    """The rewritten filters: as many elements as w, 256-byte aligned."""
    return ceil_div(math.prod(p.filter_size) * p.c * p.k * esize(p), WS_ALIGN) * WS_ALIGN


class StrideOneForwardView:
    """Mixin of the backward-data solvers that run dx at stride 1 as one forward convolution of dy by a forward solver's
    kernel on the rewritten filter (flip_kernel, in the workspace): the swapped-operand one and the rounding TF32 one.
    Placed before the forward solver's class: ``forward_problem`` is the view, ``applicability`` rejects what has none
    and then takes the forward solver's checks of the view."""
    algorithm = "miopenConvolutionBwdDataAlgoImplicitGEMM"
    directions = frozenset("B")

    @property
    def kernel_files(self):
        return (*super().kernel_files, FLIP_SRC)

    def forward_problem(self, p: ProblemDescription) -> ProblemDescription:
        """dx as a forward convolution of dy (stride 1): dy's channels in, dx's out, the taps reversed, pads
        (taps - 1) x dilation - pad; ``p`` itself where that view does not exist (strides above 1, negative pads)."""
        if p.spatial_dims != 2 or any(s != 1 for s in p.strides) or p.layouts != ("NHWC",) * 3:
            return p
        fwd = phases(p)[0].fwd
        return fwd if fwd is not None and fwd.in_size == p.out_size else p

    def applicability(self, problem):
        p = problem.as_conv()
        if p.spatial_dims == 2 and any(s != 1 for s in p.strides):
            return not_applicable(f"strides {p.strides}: stride 1 only (dx as one forward convolution of dy)")
        if p.spatial_dims == 2 and p.layouts == ("NHWC",) * 3 and self.forward_problem(p) is p:
            return not_applicable(f"pads {p.pads} beyond the dilated filter's reach (no forward view of dx)")
        return super().applicability(problem)

    def workspace_bytes(self, problem, config=None) -> int:
        return flipped_bytes(problem.as_conv())


class Phase(NamedTuple):
    """Phase (a, b) of dx, the pixels hi = hq*sh + a, wi = wq*sw + b (hq < size[0], wq < size[1]), reached
    by taps[0] x taps[1] filter taps from (r0, s0) on; ``fwd`` is its forward view (None when no tap
    reaches it or it has no pixel) and ``y_offset`` the dx element of its first pixel."""
    a: int
    b: int
    r0: int
    s0: int
    taps: tuple[int, int]
    size: tuple[int, int]
    fwd: ProblemDescription | None
    y_offset: int


@functools.lru_cache(maxsize=512)
def phases(p: ProblemDescription) -> tuple[Phase, ...]:
    """The stride phases of backward-data problem ``p`` (2D, NHWC), in the order of their first taps
    (r0, s0). Phase a's first tap is r0 = (a + pad) % stride, its dy row ho = hq + (a + pad) // stride
    - t for tap r0 + t*stride; as a forward convolution with the taps reversed (t' = taps - 1 - t) that
    is input row hq - pad' + t' with pad' = (taps - 1) * dilation - (a + pad) // stride (stride 1:
    pad' = (Y - 1) * dilation - pad). Its output size is stated (out_size_override): ceil((Hi - a) / sh)."""
    (sh, sw), (fy, fx), (hi, wi), (ho, wo) = p.strides, p.filter_size, p.in_size, p.out_size
    out = []
    for r0 in range(sh):
        for s0 in range(sw):
            a, b = (r0 - p.pads[0]) % sh, (s0 - p.pads[1]) % sw
            th, tw = ceil_div(fy - r0, sh), ceil_div(fx - s0, sw)
            size = (ceil_div(hi - a, sh), ceil_div(wi - b, sw))
            fwd = None
            if th > 0 and tw > 0 and min(size) > 0:
                pads = tuple((t - 1) * d - (q + pad) // s for t, d, q, pad, s in
                             zip((th, tw), p.dilations, (a, b), p.pads, p.strides))
                if min(pads) >= 0:
                    # dy's size where the sub-filter fits it (the kernel reads dy's real size: phase_overrides)
                    isz = tuple(max(i, (t - 1) * d + 1 - 2 * q) for i, t, d, q in zip((ho, wo), (th, tw), p.dilations, pads))
                    fwd = dataclasses.replace(
                        ProblemDescription.make("F", n=p.n, c=p.k, k=p.c, in_size=isz, filter_size=(th, tw),
                                                pads=pads, strides=1, dilations=p.dilations, layout="NHWC",
                                                dtype=p.dtype),
                        out_size_override=size)
            out.append(Phase(a, b, r0, s0, (th, tw), size, fwd, (a * wi + b) * p.c))
    return tuple(out)


def runs(p: ProblemDescription) -> list[Phase]:
    """The phases with work: a forward view."""
    return [ph for ph in phases(p) if ph.fwd is not None]


def main_view(p: ProblemDescription) -> ProblemDescription:
    """The forward view of the phase with the most MMA work (the first of equals): the one the default
    config is chosen for."""
    return max(runs(p), key=lambda ph: (math.prod(ph.size) * math.prod(ph.taps), -ph.r0, -ph.s0)).fwd


def phase_overrides(p: ProblemDescription, ph: Phase, in_place: bool = True) -> dict:
    """Macros of a phase's forward kernel that differ from its view's: dy's real size and pixel strides
    (the view states only the output size), dx's pixel strides, the index width of dy and dx, and, with
    ``in_place``, w read in place (B_MN): its filter size, the phase's first tap and the step between its taps'
    indices (without: the view's own dense filter, rewritten for it, as ImplicitGemmHopperBwdTf32 does)."""
    (hi, wi), (ho, wo) = p.in_size, p.out_size
    sh, sw = p.strides
    mac = {"P_HI": ho, "P_WI": wo, "XS_N": ho * wo * p.k, "XS_H": wo * p.k, "XS_W": p.k,
           "YS_N": hi * wi * p.c, "YS_H": sh * wi * p.c, "YS_W": sw * p.c,
           "INDEX_T": "long long" if needs_int64(p) or needs_int64(ph.fwd) else "int"}
    if in_place:
        mac.update({"B_MN": 1, "BW_FY": p.filter_size[0], "BW_FX": p.filter_size[1], "BW_R0": ph.r0, "BW_S0": ph.s0,
                    "BW_SH": sh, "BW_SW": sw})
    return mac


def phase_tma_fits(p: ProblemDescription, ph: Phase) -> bool:
    """Whether copy-engine loads serve phase ``ph``: K tiles of one tap (K % 64 == 0, dy's channels; TF32: % 32; or,
    16-bit, each tap's K tiles padded past K, whose dy and w boxes read zeros there: the forward kernel's TAP_K, unsplit
    configs only, ``config_ok``), and the im2col corners of dy's real size around the phase's output pixels and its
    filter offsets within the 4-D fields."""
    channels = p.k % kdepth(p) == 0 or padded_channels(p, p.k)
    return channels and tma.im2col_fits(p.out_size, ph.size, ph.fwd.pads, (1, 1), ph.taps, p.dilations)


def dy_im2col(p: ProblemDescription, ph: Phase, pixels: int, bk: int | None = None) -> tma.Im2colSpec | tma.TiledSpec:
    """Phase ``ph``'s im2col map of dy (K, Wo, Ho, N) for boxes of ``pixels`` of its output pixels x 64
    channels (TF32, or ``bk``: 32): filter bases hq - pad' (its forward view's), stride 1, over dy's real size. A phase
    whose view is 1x1, stride 1, unpadded (``dense_pixels``: the phase's pixels are dy's) reads dy as a dense (K,
    N*Ho*Wo) matrix through a tiled map instead: its view's x (``x_dense``)."""
    bk = bk or kdepth(p)
    if dense_pixels(ph.fwd):
        return x_dense(ph.fwd, pixels, bk)
    (ho, wo), k, es = p.out_size, p.k, esize(p)
    lower, upper = tma.im2col_corners(p.out_size, ph.size, ph.fwd.pads, (1, 1))
    return tma.Im2colSpec(p.dtype, (k, wo, ho, p.n), (k * es, wo * k * es, ho * wo * k * es), lower, upper, bk,
                          pixels, (1, 1), swizzle_of(bk * es))


def w_planes(p: ProblemDescription, bk: int = BK, bn: int = BK) -> tma.TiledSpec:
    """w (K x Y x X x C, KYXC) as a 3-D map (C, Y*X, K) of boxes of 64 of dx's channels x one tap x 64 (``bk``) of
    dy's: a stage's B tile, MN-major, one box per 64-wide block of its BN columns (rows of 128 bytes of dx's channels,
    whatever the K tile's depth); with BN = 32 (``bn``) one box of 32 of dx's channels, 64-byte rows under the 64-byte
    swizzle."""
    taps, width = math.prod(p.filter_size), min(bn, BK)
    return tma.TiledSpec(p.dtype, (p.c, taps, p.k), (p.c * 2, taps * p.c * 2), (width, 1, bk), swizzle_of(width * 2))


class ImplicitGemmHopperBwd(ImplicitGemmHopperBase):
    id = "ConvImplicitGemmHopperBwd"
    version = 6                 # 2: split-K of the forward kernel; 3: strides above 1 by stride phases; 4: w read in place (no flip kernel); 5: WSPEC; 6: later phases and reduces as programmatic dependent launches
    algorithm = "miopenConvolutionBwdDataAlgoImplicitGEMM"
    directions = frozenset("B")
    source = "implicit_gemm_hopper_fwd.cu"
    kernel_name = "igemm_hopper_fwd"

    @property
    def kernel_files(self):
        return (*super().kernel_files, ZERO_SRC)

    def applicability(self, problem: ProblemDescription):
        p = problem.as_conv()
        if p.direction == "B" and p.solvable and p.spatial_dims == 2:
            if any(s != 1 for s in p.strides) and any(d != 1 for d in p.dilations):
                return not_applicable(f"dilations {p.dilations} with strides {p.strides} not supported "
                                      "(dilation 1 when strided)")
            if any(s > 8 for s in p.strides):
                return not_applicable(f"strides {p.strides} not supported (8 at most)")
            if any(ph.fwd is None and min(ph.taps) > 0 and min(ph.size) > 0 for ph in phases(p)):
                return not_applicable(f"pads {p.pads} exceed the dilated filter extent")
            if not runs(p):
                return not_applicable("no filter tap reaches dx")
        base = super().applicability(problem)
        if not base:
            return base
        if p.c * p.k * math.prod(p.filter_size) >= 2**31:
            return not_applicable("filter of 2^31 elements or more")
        return APPLICABLE

    def forward_problem(self, p: ProblemDescription) -> ProblemDescription:
        return main_view(p) if p.spatial_dims == 2 and runs(p) else p

    def default_config(self, problem: ProblemDescription) -> dict:
        """default_tile of the main phase's view (the forward's rule: the persistent copy-engine config where
        the copy engine serves every phase), else its config without the copy engine."""
        p = problem.as_conv()
        cfg = default_tile(main_view(p))
        if cfg["TMA"] and not self.is_valid_config(p, cfg):
            cfg = default_tile(main_view(p), copy_engine=False)
        return cfg

    def config_space(self, problem: ProblemDescription):
        p = problem.as_conv()
        for cfg in space(main_view(p)):
            if self.is_valid_config(p, cfg):
                yield cfg

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        """Valid for every phase's forward view; with TMA, the copy engine serves every phase (phase_tma_fits)."""
        p = problem.as_conv()
        if p.spatial_dims != 2 or not runs(p):
            return False
        # 32-wide tiles: the MN-major filter tile of 32 n only as the copy engine's 64-byte-swizzled box
        if isinstance(config, dict) and config.get("BN") == 32 and not self.legacy_config(config).get("TMA"):
            return False
        if isinstance(config, dict) and self.legacy_config(config).get("TMA") and \
                not all(phase_tma_fits(p, ph) for ph in runs(p)):
            return False
        return all(super(ImplicitGemmHopperBwd, self).is_valid_config(ph.fwd, config) for ph in runs(p))

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        """A split config's FP32 partial planes for the largest phase (the default config when None);
        0 unsplit."""
        p = problem.as_conv()
        return self.partials_bytes(p, self.config_of(p, config))

    def flip_kernel(self, p: ProblemDescription) -> KernelInfo | None:
        """A kernel rewriting w (its one argument) as every phase's own dense filter in the workspace after the
        partial planes (its second argument), launched first; None where the phases read w in place (B_MN,
        MN-major), as here: ImplicitGemmHopperBwdTf32 rewrites it."""
        return None

    def phase_filter(self, p: ProblemDescription, ph: Phase, cfg) -> tuple[int | None, tma.TiledSpec | None]:
        """(byte offset in the rewritten filters, its tensor map's spec with TMA) of phase ``ph``; (None, None) where
        the phases read w in place (one map of w, ``w_planes``, serves them all)."""
        return None, None

    def zero_kernel(self, p: ProblemDescription) -> KernelInfo:
        """The kernel zeroing the pixels of dx that no tap reaches (its one argument), 16 bytes a thread."""
        (sh, sw), (fy, fx) = p.strides, p.filter_size
        chunks = p.n * math.prod(p.in_size) * p.c * esize(p) // 16
        return KernelInfo(self.zero_source, self.zero_name,
                          (max(1, min(ceil_div(chunks, ZERO_BLOCK), sm_count() * 16)), 1, 1), (ZERO_BLOCK, 1, 1),
                          macros=(("DATA_T", CUDA_TYPES[p.dtype]), ("FY", str(fy)), ("FX", str(fx)),
                                  ("FC", str(p.c)), ("SH", str(sh)), ("SW", str(sw)),
                                  ("PADH", str(p.pads[0])), ("PADW", str(p.pads[1])),
                                  ("ZN", str(p.n)), ("ZH", str(p.in_size[0])), ("ZW", str(p.in_size[1]))))

    zero_source, zero_name = ZERO_SRC, "igemm_hopper_bwd_zero"

    def partials_bytes(self, p: ProblemDescription, cfg) -> int:
        """The split partial planes of the largest phase (0 unsplit): the workspace's first part."""
        return max(partial_bytes(ph.fwd, cfg) for ph in runs(p))

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = self.config_of(p, config)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        es = esize(p)
        flip = self.flip_kernel(p)
        kernels = [flip] if flip else []
        zero = any(min(ph.taps) == 0 and min(ph.size) > 0 for ph in phases(p))   # pixels no tap reaches
        iz = len(kernels)                # the zeroing's index among the kernels, where there is one
        if zero:
            kernels.append(self.zero_kernel(p))
        plan = []                        # per phase: its kernels' indices, smem, dx offset, maps, its filter's offset
        part = self.partials_bytes(p, cfg)
        bk = tile_depth(p, cfg)
        wmaps = tma.MapCache(w_planes(p, bk, cfg["BN"])) if cfg["TMA"] and not flip else None   # in place: one map
        for ph in runs(p):
            fwd, smem = forward_kernels(ph.fwd, cfg, self.source, self.kernel_name, phase_overrides(p, ph, not flip))
            foff, fspec = self.phase_filter(p, ph, cfg)
            maps = None
            if cfg["TMA"]:
                maps = (tma.MapCache(dy_im2col(p, ph, cfg["BM"], bk)), wmaps or tma.MapCache(fspec))
            plan.append((len(kernels), len(fwd), smem, ph.y_offset * es, maps, None if foff is None else part + foff))
            kernels.extend(fwd)
        ws = self.workspace_bytes(p, cfg)
        sid = self.id
        first_phase = plan[0][0]

        def factory(kerns):
            lflip = Launch(kerns[0], kernels[0].grid, kernels[0].block, (PTR, PTR)) if flip else None
            lzero = Launch(kerns[iz], kernels[iz].grid, kernels[iz].block, (PTR,)) if zero else None
            steps = []
            recipe = [(lflip, ((B, 0), (WS, part)))] if flip else []
            recipe += [(lzero, ((OUT, 0),))] if zero else []
            for i, nk, smem, yoff, maps, boff in plan:
                if smem > SMEM_STATIC:
                    kerns[i].max_dynamic_shared_size_bytes = smem
                # an unsplit phase writes pixels of dx no launch before it in this solution writes, and reads
                # dy and w only: it may start while the phase (or zeroing) before it ends, and waits for that
                # grid before it exits (i: its index among the solution's kernels, after the rewriting of w and the
                # zeroing where there are those). A split phase's partial planes are the ones the reduce before it
                # reads: it waits in stream order. The first phase after the rewriting of w (no zeroing between) reads
                # what that wrote: it waits in stream order too.
                dep = i > 0 and nk == 1 and not (flip and i == first_phase and not zero)
                raw = Launch(kerns[i], kernels[i].grid, kernels[i].block, (PTR,) * 4 + (MAP,) * len(maps or ()),
                             shared_mem=smem, pdl=dep)
                lmain = raw.bind_maps(maps) if maps else raw      # the phase's map of dy (a) and its filter's (b)
                lred = Launch(kerns[i + 1], kernels[i + 1].grid, kernels[i + 1].block, (PTR, PTR),
                              pdl=True) if nk > 1 else None
                steps.append((lmain, lred, yoff, boff))
                recipe += recipe_steps(raw, lred, maps, yoff, (B, 0) if boff is None else (WS, boff))

            def invoker(a, b, out, workspace, stream):
                if a % ALIGN or b % ALIGN or out % ALIGN:
                    check_aligned(sid, (("first input", a), ("second input", b), ("output", out)))
                if ws and not workspace:
                    raise ValueError(f"{sid}: workspace of {ws} bytes required, got none")
                if lflip is not None:
                    lflip(stream, b, workspace + part)
                if lzero is not None:
                    lzero(stream, out)
                for lmain, lred, yoff, boff in steps:
                    w = b if boff is None else workspace + boff
                    if lred is None:        # unsplit: the partial pointer is not read
                        lmain(stream, a, w, out + yoff, out + yoff)
                    else:                   # the phases run in stream order: one set of partial planes serves all
                        lmain(stream, a, w, out + yoff, workspace)
                        lred(stream, workspace, out + yoff)
            return with_recipe(invoker, recipe, (ALIGN, ALIGN, ALIGN, 1), bool(ws))

        return ConvSolution(self.id, kernels, ws, factory, cfg)
