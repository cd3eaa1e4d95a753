"""Implicit GEMM convolution, F/B/W: shared planning for kernels_src/implicit_gemm_{fwd,bwd,wrw}.cu.

Each direction is one GEMM per group whose operands are gathered from the tensors on the fly
(implicit_gemm_core.cu, no im2col buffer); implicit_gemm_fwd.cu, implicit_gemm_bwd.cu and implicit_gemm_wrw.cu give the index
algebra. The problem's sizes and every tensor's element strides are compile-time macros (one build
per problem, as MIOpen's implicit-GEMM solvers); the tile shape is the tunable config.

Math by problem: FP32 strict runs FFMA on the CUDA cores (config keys BM BN BK TM TN STAGES:
thread tile TM x TN); FP16/BF16 run mma.sync m16n8k16 with FP32 accumulation and FP32 math="tf32"
runs mma.sync m16n8k8 TF32 (keys BM BN BK WM WN STAGES XPOSE: warp tile WM x WN). Backward weights
adds SPLITK, the number of reduction chunks (FP32 partials in the workspace, then a fixed-order
reduce). XPOSE = 1 first copies channels-first inputs (and KCYX weights) to channels-last
copies in the workspace (implicit_gemm_xpose.cu), so that tensor-core loads move 16 bytes along channels.

Operand plan: a GEMM operand is contiguous in memory along kk or along its rows; a "run" is the
length over which consecutive elements are contiguous, aligned and valid or invalid together, so
the loads may move VEC elements at once for any power of two VEC dividing the run (16 bytes at
most; FFMA scatters kk-contiguous operands into k-outer shared memory one element at a time).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import NamedTuple

import numpy as np

from miofind.launch import A, B, OUT, PTR, WS, Launch, with_recipe
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES, needs_int64

CORE = "implicit_gemm_core.cu"
XPOSE_SRC = "implicit_gemm_xpose.cu"
LAYOUTS = ("NCHW", "NHWC", "NCDHW", "NDHWC")
CHANNELS_LAST = {"NCHW": "NHWC", "NCDHW": "NDHWC"}
SMEM_LIMIT = 227 * 1024          # opt-in dynamic shared memory per block on sm_90
SMEM_STATIC = 48 * 1024          # above this the factory raises the kernel's dynamic limit
INT32_MAX = 2**31 - 1
GRID_YZ = 65535
SM_COUNT = 132                   # H100 SXM; steers default tiles and the split of backward weights
ALIGN = 256                      # workspace sub-buffer alignment
RED_BLOCK = 256
MAX_SPLITK = 256
ESIZE = {"FP32": 4, "FP16": 2, "BF16": 2}
FFMA_KEYS = ("BM", "BN", "BK", "TM", "TN", "STAGES")
MMA_KEYS = ("BM", "BN", "BK", "WM", "WN", "STAGES", "XPOSE")


def math_kind(p: ProblemDescription) -> int:
    """0: FP32 FFMA, 1: FP16/BF16 mma m16n8k16, 2: TF32 mma m16n8k8."""
    if p.dtype == "FP32":
        return 2 if p.math == "tf32" else 0
    return 1


def dims3(p: ProblemDescription):
    """(in, out, filter, pads, strides, dilations) as (D, H, W) triples; 2D has D = Z = 1."""
    f = (lambda t, v: (v, *t)) if p.spatial_dims == 2 else (lambda t, v: tuple(t))
    return (f(p.in_size, 1), f(p.out_size, 1), f(p.filter_size, 1), f(p.pads, 0), f(p.strides, 1),
            f(p.dilations, 1))


def is_cl(layout: str) -> bool:
    return layout in ("NHWC", "NDHWC")


def strides5(shape, layout) -> tuple[int, int, int, int, int]:
    """(n, c, d, h, w) element strides of a dense tensor; 2D has a d stride of 0."""
    nd = len(shape) - 2
    contig = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        contig[i] = contig[i + 1] * shape[i + 1]
    if is_cl(layout):
        sn, sc, sp = contig[0], contig[-1], contig[1:-1]
    else:
        sn, sc, sp = contig[0], contig[1], contig[2:]
    return (sn, sc, 0, sp[0], sp[1]) if nd == 2 else (sn, sc, sp[0], sp[1], sp[2])


def pointwise(p: ProblemDescription) -> bool:
    """1x1 filter, stride 1, no padding: input and output pixels coincide."""
    return all(f == 1 for f in p.filter_size) and not any(p.pads) and all(s == 1 for s in p.strides)


def vec_for(run: int, vmax: int) -> int:
    v = vmax
    while v > 1 and run % v:
        v //= 2
    return v


def _align(nbytes: int) -> int:
    return ceil_div(nbytes, ALIGN) * ALIGN


class Xpose(NamedTuple):
    """One channels-first -> channels-last copy: input 'a' or 'b' as [batch][rows][cols]."""

    operand: str
    batch: int
    rows: int
    cols: int

    @property
    def elems(self) -> int:
        return self.batch * self.rows * self.cols


def xposes_for(p: ProblemDescription) -> tuple[tuple[Xpose, ...], tuple[str, str, str]]:
    """The copies XPOSE = 1 makes and the layouts (x, w, y) the kernel then sees."""
    d = p.direction
    lx, lw, ly = p.layouts
    cpg, kpg, taps = p.c // p.groups, p.k // p.groups, math.prod(p.filter_size)
    pin, pout = math.prod(p.in_size), math.prod(p.out_size)
    out = []
    w_copy = not is_cl(lw) and cpg > 1 and taps > 1   # otherwise KCYX and KYXC coincide
    if d == "F":
        if not is_cl(lx):
            out.append(Xpose("a", p.n, p.c, pin)); lx = CHANNELS_LAST[lx]
        if w_copy:
            out.append(Xpose("b", p.k, cpg, taps)); lw = CHANNELS_LAST[lw]
    elif d == "B":
        if not is_cl(ly):
            out.append(Xpose("a", p.n, p.k, pout)); ly = CHANNELS_LAST[ly]
        if w_copy:
            out.append(Xpose("b", p.k, cpg, taps)); lw = CHANNELS_LAST[lw]
    else:
        vmax = 16 // ESIZE.get(p.dtype, 4)
        if not is_cl(ly) and pout % vmax:
            out.append(Xpose("a", p.n, p.k, pout)); ly = CHANNELS_LAST[ly]
        if not is_cl(lx):
            out.append(Xpose("b", p.n, p.c, pin)); lx = CHANNELS_LAST[lx]
    return tuple(out), (lx, lw, ly)


class ImplicitGemmPlan:
    """The GEMM of one group for a direction, and how each operand is laid out in memory.

    ``p`` is the problem (forward view, as_conv); ``pi`` the problem the kernel is built for:
    the same, or with the inputs' layouts channels-last when ``xpose`` copies them first.
    """

    def __init__(self, p: ProblemDescription, xpose: int = 0):
        self.p = p
        self.xposes, lays = xposes_for(p) if xpose else ((), p.layouts)
        self.pi = pi = dataclasses.replace(p, layouts=lays) if xpose else p
        d = p.direction
        g = p.groups
        cpg, kpg = p.c // g, p.k // g
        taps = math.prod(p.filter_size)
        isz, osz = dims3(p)[:2]
        npix_o = p.n * math.prod(osz)
        x_cl, w_cl, y_cl = (is_cl(v) for v in pi.layouts)
        pw = pointwise(p)
        if d == "F":
            self.m, self.n, self.k = npix_o, kpg, cpg * taps
            self.kk_clast = x_cl
            self.w_match = (w_cl == x_cl) or cpg == 1 or taps == 1
            # A = x: channels along kk (channels-last) or pixels along rows
            self.a_kc, self.a_run = (True, cpg) if x_cl else (False, math.prod(isz) if pw else 1)
            self.b_kc, self.b_run = True, (self.k if self.w_match else 1)
        elif d == "B":
            self.m, self.n, self.k = p.n * math.prod(isz), cpg, kpg * taps
            self.kk_clast = y_cl
            self.w_match = False
            self.a_kc, self.a_run = (True, kpg) if y_cl else (False, math.prod(isz) if pw else 1)
            if w_cl or taps == 1:       # w's channel stride is 1: B contiguous along its rows c
                self.b_kc, self.b_run = False, cpg
            else:
                self.b_kc, self.b_run = True, (taps if not y_cl else 1)
        else:
            self.m, self.n, self.k = kpg, cpg * taps, npix_o
            self.kk_clast = x_cl
            self.w_match = False
            self.a_kc, self.a_run = (False, kpg) if y_cl else (True, math.prod(osz))
            if x_cl:
                self.b_kc, self.b_run = False, cpg
            else:
                self.b_kc, self.b_run = True, (math.prod(isz) if pw else 1)
        self.math = math_kind(p)
        self.esize = ESIZE[p.dtype]
        # F and B stage the output tile in shared memory; dx/y are contiguous along GEMM rows
        # (pixels) when channels-first. W writes its small dw (or FP32 partials) directly.
        self.epi_smem = d in "FB"
        self.c_mcontig = d in "FB" and not (y_cl if d == "F" else x_cl)

    @classmethod
    def of(cls, p: ProblemDescription, cfg) -> "ImplicitGemmPlan":
        return cls(p, cfg.get("XPOSE", 0) if cfg else 0)

    def vecs(self, cfg) -> tuple[int, int]:
        """(A_VEC, B_VEC) for a config: the widest legal unit (16 bytes at most)."""
        vmax = 16 // self.esize
        out = []
        for kc, run, rows in ((self.a_kc, self.a_run, cfg["BM"]), (self.b_kc, self.b_run, cfg["BN"])):
            if self.math == 0 and kc:
                out.append(1)
                continue
            v = vec_for(run, vmax)
            lim = cfg["BK"] if kc else rows
            while v > 1 and lim % v:
                v //= 2
            out.append(v)
        return tuple(out)

    def reg_path(self, cfg) -> bool:
        """Whether a 16-bit operand loads single elements (no cp.async: register staging)."""
        return self.esize == 2 and 1 in self.vecs(cfg)


def nthreads(math_: int, cfg) -> int:
    if math_ == 0:
        return (cfg["BM"] // cfg["TM"]) * (cfg["BN"] // cfg["TN"])
    return (cfg["BM"] // cfg["WM"]) * (cfg["BN"] // cfg["WN"]) * 32


def _loader_ok(nt: int, rows: int, bk: int, kc: bool, vec: int) -> bool:
    """The loader geometry of implicit_gemm_core.cu's Loader (its static_asserts)."""
    if kc:
        return bk % vec == 0 and nt % (bk // vec) == 0
    if rows % vec:
        return False
    ul = rows // vec
    tr = min(ul, max(32, nt // bk))
    return ul % tr == 0 and nt % tr == 0


def stage_elems(math_: int, rows: int, bk: int, kc: bool) -> int:
    """Elements of one operand stage (implicit_gemm_core.cu's Smem)."""
    kouter = math_ == 0 or not kc
    pad = (4 if math_ == 0 else 8) if kouter else (8 if math_ == 1 else 4)
    return bk * (rows + pad) if kouter else rows * (bk + pad)


def epilogue_bytes(plan: ImplicitGemmPlan, cfg) -> int:
    """The staged epilogue (F, B): the output tile plus BM + BN offsets (implicit_gemm_core.cu's CTile)."""
    if not plan.epi_smem:
        return 0
    ld = (cfg["BM"] if plan.c_mcontig else cfg["BN"]) + (1 if plan.esize == 4 else 2)
    tile = ((cfg["BN"] if plan.c_mcontig else cfg["BM"]) * ld * plan.esize + 15) // 16 * 16
    return tile + (cfg["BM"] + cfg["BN"]) * (8 if needs_int64(plan.p) else 4)


def smem_bytes(plan: ImplicitGemmPlan, cfg) -> int:
    per = stage_elems(plan.math, cfg["BM"], cfg["BK"], plan.a_kc) + stage_elems(plan.math, cfg["BN"], cfg["BK"], plan.b_kc)
    return max(cfg["STAGES"] * per * plan.esize, epilogue_bytes(plan, cfg))


def tile_ok(plan: ImplicitGemmPlan, cfg) -> bool:
    """Validity of a tile config for a plan (keys checked by the caller)."""
    m = plan.math
    bm, bn, bk = cfg["BM"], cfg["BN"], cfg["BK"]
    if m == 0:
        tm, tn = cfg["TM"], cfg["TN"]
        if tm not in (4, 8) or tn not in (4, 8) or bm % tm or bn % tn or bk not in (8, 16):
            return False
    else:
        wm, wn = cfg["WM"], cfg["WN"]
        if wm % 16 or wn % 16 or bm % wm or bn % wn:
            return False
        if bk % (16 if m == 1 else 8) or bk not in (16, 32, 64):
            return False
        if cfg["XPOSE"] not in (0, 1) or (cfg["XPOSE"] and not xpose_ok(plan)):
            return False
    if bm & (bm - 1) or bn & (bn - 1):
        return False
    nt = nthreads(m, cfg)
    if nt % 32 or not 32 <= nt <= 512:
        return False
    if cfg["STAGES"] not in (2, 3, 4):
        return False
    av, bv = plan.vecs(cfg)
    if not (_loader_ok(nt, bm, bk, plan.a_kc, av) and _loader_ok(nt, bn, bk, plan.b_kc, bv)):
        return False
    return smem_bytes(plan, cfg) <= SMEM_LIMIT


def _loader_regs(plan: ImplicitGemmPlan, nt: int, rows: int, bk: int, kc: bool, vec: int, gather: bool) -> int:
    """Registers a Loader holds: per-row gather state (offset + positions, or offset + flag) and,
    on the 16-bit register path, one register per staged element."""
    if kc:
        nr, nk = ceil_div(rows, nt // (bk // vec)), 1
    else:
        ul = rows // vec
        tr = min(ul, max(32, nt // bk))
        nr, nk = ul // tr, ceil_div(bk, nt // tr)
    wide = 2 if needs_int64(plan.p) else 1
    per_row = (wide + plan.p.spatial_dims) if gather else (wide + 1)
    return nr * per_row + (nr * nk if vec * plan.esize < 4 else 0)


def reg_estimate(plan: ImplicitGemmPlan, cfg) -> int:
    """A rough per-thread register count (accumulators, fragments, loader state, ~32 of the rest),
    used to keep configurations that would spill out of the tuning space."""
    nt = nthreads(plan.math, cfg)
    if plan.math == 0:
        core = cfg["TM"] * cfg["TN"] + cfg["TM"] + cfg["TN"]
    else:
        mi, ni = cfg["WM"] // 16, cfg["WN"] // 8
        core = mi * ni * 4 + (mi * 4 + ni * 2) * (2 if plan.math == 2 else 1)  # TF32: FP32 loads + converted
    d = plan.p.direction
    a_gather, b_gather = d in "FB", d == "W"   # which operand carries per-row pixel positions
    av, bv = plan.vecs(cfg)
    return (core + 32 + _loader_regs(plan, nt, cfg["BM"], cfg["BK"], plan.a_kc, av, a_gather)
            + _loader_regs(plan, nt, cfg["BN"], cfg["BK"], plan.b_kc, bv, b_gather))


def xpose_ok(plan: ImplicitGemmPlan) -> bool:
    """XPOSE needs something to copy, the copies' grids within limits and their sizes in the kernel's
    32-bit rows and cols arguments."""
    return bool(plan.xposes) and all(t.batch <= GRID_YZ and ceil_div(t.rows, 32) <= GRID_YZ
                                     and t.rows <= INT32_MAX and t.cols <= INT32_MAX for t in plan.xposes)


def pow2_ceil(v: int, lo: int, hi: int) -> int:
    r = lo
    while r < v and r < hi:
        r *= 2
    return r


def fit_threads(math_: int, cfg: dict) -> dict:
    """Thread (FFMA) or warp (mma) tiles for cfg's block tile: big per-thread tiles, 64-256 threads."""
    bm, bn = cfg["BM"], cfg["BN"]
    if math_ == 0:
        cfg["TN"] = 8 if bn >= 64 else 4
        cfg["TM"] = 8 if (bm // 8) * (bn // cfg["TN"]) >= 64 else 4
    else:
        cfg["WN"] = 32 if bn >= 32 else 16
        cfg["WM"] = 64 if bm >= 64 and (bm // 64) * (bn // cfg["WN"]) >= 4 else min(32, bm)
    return cfg


def default_xpose(p: ProblemDescription, cfg: dict) -> int:
    """Copy to channels-last when a 16-bit operand would otherwise load single elements and the
    copy fixes it (FP16/BF16 only: TF32 loads 4-byte elements with cp.async either way)."""
    if math_kind(p) != 1:
        return 0
    plain, copied = ImplicitGemmPlan(p, 0), ImplicitGemmPlan(p, 1)
    if not xpose_ok(copied):
        return 0
    c1 = dict(cfg, XPOSE=1)
    return int(plain.reg_path(dict(cfg, XPOSE=0)) and not copied.reg_path(c1) and tile_ok(copied, c1))


def default_tile(p: ProblemDescription) -> dict:
    """A tile for the GEMM's shape: BN from N, BM shrunk while the grid is short of SMs."""
    plan = ImplicitGemmPlan(p)
    bn = pow2_ceil(plan.n, 16, 128)
    bm = 128 if plan.m >= 128 else pow2_ceil(plan.m, 32, 128)
    # a short grid wastes SMs: halve BM while there are fewer than ~2 blocks per SM
    while bm > 32 and ceil_div(plan.m, bm) * ceil_div(plan.n, bn) * p.groups < 2 * SM_COUNT:
        bm //= 2
    cfg = fit_threads(plan.math, {"BM": bm, "BN": bn, "BK": 8 if plan.math == 0 else (32 if plan.math == 1 else 16),
                                  "STAGES": 3})
    if plan.math:
        cfg["XPOSE"] = default_xpose(p, cfg)
    return cfg


def config_keys(p: ProblemDescription) -> tuple:
    keys = FFMA_KEYS if math_kind(p) == 0 else MMA_KEYS
    return keys + (("SPLITK",) if p.direction == "W" else ())


# Curated tuning spaces: block tile with its thread (FFMA) or warp (mma) tile, then (BK, STAGES).
FFMA_TILES = ((128, 128, 8, 8), (128, 64, 8, 8), (64, 128, 8, 8), (256, 64, 8, 8), (64, 256, 8, 8),
              (64, 64, 8, 8), (64, 64, 4, 8), (128, 32, 8, 4), (32, 128, 4, 8), (256, 32, 8, 4),
              (64, 32, 4, 4), (32, 64, 4, 4), (32, 32, 4, 4), (128, 16, 8, 4), (256, 16, 8, 4), (64, 16, 4, 4))
FFMA_STEPS = ((8, 3), (8, 4), (16, 2), (16, 3))
MMA_TILES = ((128, 128, 64, 32), (128, 128, 64, 64), (256, 128, 64, 64), (128, 256, 64, 64), (128, 64, 64, 32),
             (64, 128, 32, 64), (64, 64, 32, 32), (128, 32, 32, 32), (32, 128, 32, 32), (64, 32, 32, 16),
             (128, 16, 32, 16), (64, 16, 32, 16), (32, 32, 32, 16))
MMA_STEPS = {1: ((32, 3), (32, 4), (64, 3)), 2: ((16, 3), (16, 4), (32, 3))}


def space(p: ProblemDescription):
    """The tuning space: curated tiles, without tiles far larger than the GEMM, pruned by validity."""
    plan = ImplicitGemmPlan(p)
    if plan.math == 0:
        tiles, steps, names, xps = FFMA_TILES, FFMA_STEPS, ("BM", "BN", "TM", "TN"), (None,)
    else:
        tiles, steps, names = MMA_TILES, MMA_STEPS[plan.math], ("BM", "BN", "WM", "WN")
        xps = (0, 1) if xpose_ok(ImplicitGemmPlan(p, 1)) else (0,)
    for tile, (bk, stages), xp in itertools.product(tiles, steps, xps):
        cfg = dict(zip(names, tile), BK=bk, STAGES=stages)
        if xp is not None:
            cfg["XPOSE"] = xp
        if cfg["BN"] > max(16, 2 * pow2_ceil(plan.n, 16, 256)) or cfg["BM"] > max(32, 2 * pow2_ceil(plan.m, 32, 256)):
            continue
        pc = ImplicitGemmPlan.of(p, cfg)
        if tile_ok(pc, cfg) and reg_estimate(pc, cfg) <= (224 if plan.math == 2 else 240):
            yield cfg


def macros(plan: ImplicitGemmPlan, cfg) -> dict:
    p, pi = plan.p, plan.pi
    isz, osz, fsz, pads, strides, dils = dims3(p)
    xs = strides5(pi.x_shape, pi.layouts[0])
    ws = strides5(pi.w_shape, pi.layouts[1])
    ys = strides5(pi.y_shape, pi.layouts[2])
    av, bv = plan.vecs(cfg)
    out = {
        "DATA_T": CUDA_TYPES[p.dtype], "INDEX_T": "long long" if needs_int64(p) else "int",
        "MATH": plan.math, "IS_BF16": int(p.dtype == "BF16"), "IS3D": int(p.spatial_dims == 3),
        "P_N": p.n, "P_C": p.c, "P_K": p.k, "P_G": p.groups,
        "P_DI": isz[0], "P_HI": isz[1], "P_WI": isz[2], "P_DO": osz[0], "P_HO": osz[1], "P_WO": osz[2],
        "P_Z": fsz[0], "P_Y": fsz[1], "P_X": fsz[2], "P_PD": pads[0], "P_PH": pads[1], "P_PW": pads[2],
        "P_SD": strides[0], "P_SH": strides[1], "P_SW": strides[2],
        "P_DD": dils[0], "P_DH": dils[1], "P_DW": dils[2],
        "XS_N": xs[0], "XS_C": xs[1], "XS_D": xs[2], "XS_H": xs[3], "XS_W": xs[4],
        "WS_K": ws[0], "WS_C": ws[1], "WS_Z": ws[2], "WS_Y": ws[3], "WS_X": ws[4],
        "YS_N": ys[0], "YS_C": ys[1], "YS_D": ys[2], "YS_H": ys[3], "YS_W": ys[4],
        "KK_CLAST": int(plan.kk_clast), "W_MATCH": int(plan.w_match),
        "A_KC": int(plan.a_kc), "A_VEC": av, "B_KC": int(plan.b_kc), "B_VEC": bv,
        "EPI_SMEM": int(plan.epi_smem), "C_MCONTIG": int(plan.c_mcontig),
    }
    for key in FFMA_KEYS if plan.math == 0 else MMA_KEYS[:-1]:
        out[key] = cfg[key]
    return out


def check_alignment(sid: str, align, a: int, b: int) -> None:
    """Vector loads of VEC elements need the tensors' base addresses aligned to VEC elements
    (CuPy allocations are 256-byte aligned; a view into another tensor may not be)."""
    for name, p, al in (("first input", a, align[0]), ("second input", b, align[1])):
        if al > 1 and p % al:
            raise ValueError(f"{sid}: {name} at address {p:#x} is not {al}-byte aligned, "
                             f"as this solution's vector loads need")


def split_geometry(plan: ImplicitGemmPlan, cfg) -> tuple[int, int]:
    """Backward weights: (effective number of chunks, chunk length); chunks are whole BK tiles,
    none empty. Other directions: (1, 0)."""
    if plan.p.direction != "W":
        return 1, 0
    bk = cfg["BK"]
    ktiles = ceil_div(plan.k, bk)
    per = ceil_div(ktiles, max(1, min(cfg["SPLITK"], ktiles)))
    return ceil_div(ktiles, per), per * bk


def default_split(plan: ImplicitGemmPlan, cfg) -> int:
    """Split the reduction until about two blocks per SM, each chunk at least 8 K tiles."""
    g = plan.p.groups
    tiles = ceil_div(plan.m, cfg["BM"]) * ceil_div(plan.n, cfg["BN"]) * g
    ktiles = ceil_div(plan.k, cfg["BK"])
    split = max(1, min(ceil_div(2 * SM_COUNT, tiles), ktiles // 8, MAX_SPLITK, GRID_YZ // g))
    while split > 1 and split * plan.p.k * plan.n >= INT32_MAX:
        split //= 2
    return split


def workspace_layout(plan: ImplicitGemmPlan, cfg) -> tuple[list[int], int, int]:
    """(byte offsets of the channels-last copies, byte offset of the split-K partials, total)."""
    offs, total = [], 0
    for t in plan.xposes:
        offs.append(total)
        total += _align(t.elems * plan.esize)
    eff, _ = split_geometry(plan, cfg)
    part = total
    if eff > 1:
        total += _align(4 * eff * plan.p.k * plan.n)
    return offs, part, total


class ImplicitGemmBase(Solver):
    """Common applicability, configs and launch of the three implicit-GEMM solvers."""

    family = "implicit_gemm"
    tunable = True
    source = ""
    kernel_name = ""

    @property
    def kernel_files(self):
        return (self.source, CORE, XPOSE_SRC)

    # -- applicability ------------------------------------------------------------------------
    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        for lay in p.layouts:
            if lay not in LAYOUTS:
                return not_applicable(f"layout {lay} not supported (NCHW, NHWC, NCDHW, NDHWC)")
        isz, osz, fsz, pads, strides, dils = dims3(p)
        # spatial positions and GEMM K (F, B) / N (W) are 32-bit in the kernels
        if max(isz) * max(strides) + max(pads) + max(d * f for d, f in zip(dils, fsz)) >= 2**28:
            return not_applicable(f"spatial size {p.in_size} with strides/dilations too large for 32-bit positions")
        if (p.c // p.groups) * (p.k // p.groups) * math.prod(fsz) >= INT32_MAX:
            return not_applicable("C/G x K/G x filter taps exceeds 2^31")
        if p.groups > GRID_YZ:
            return not_applicable(f"groups={p.groups} exceeds the grid's z limit {GRID_YZ}")
        plan = ImplicitGemmPlan(p)
        cfg = self.default_config(p)
        if ceil_div(plan.n, cfg["BN"]) > GRID_YZ:
            return not_applicable(f"GEMM N={plan.n} needs more than {GRID_YZ} column tiles")
        if ceil_div(plan.m, cfg["BM"]) > INT32_MAX:
            return not_applicable(f"GEMM M={plan.m} needs more than 2^31 row tiles")
        if not self.is_valid_config(p, cfg):
            return not_applicable("no valid tile configuration")
        return APPLICABLE

    # -- configs ------------------------------------------------------------------------------
    def default_config(self, problem: ProblemDescription) -> dict:
        return default_tile(problem.as_conv())

    def config_space(self, problem: ProblemDescription):
        yield from space(problem.as_conv())

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        p = problem.as_conv()
        if not isinstance(config, dict) or set(config) != set(config_keys(p)):
            return False
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 0 for v in config.values()):
            return False
        return tile_ok(ImplicitGemmPlan.of(p, config), config)

    def _check(self, problem, config) -> tuple[ProblemDescription, ImplicitGemmPlan, dict]:
        p = problem.as_conv()
        cfg = dict(config) if config else self.default_config(p)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        return p, ImplicitGemmPlan.of(p, cfg), cfg

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        p = problem.as_conv()
        cfg = dict(config) if config else self.default_config(p)
        return workspace_layout(ImplicitGemmPlan.of(p, cfg), cfg)[2]

    # -- solution ------------------------------------------------------------------------------
    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p, plan, cfg = self._check(problem, config)
        eff, kchunk = split_geometry(plan, cfg)
        mac = macros(plan, cfg)
        if p.direction == "W":
            mac.update(SPLITK=eff, KCHUNK=kchunk, RED_BLOCK=RED_BLOCK)
        mac = tuple((k, str(v)) for k, v in mac.items())
        nt = nthreads(plan.math, cfg)
        smem = smem_bytes(plan, cfg)
        offs, part_off, ws_total = workspace_layout(plan, cfg)

        kernels = [KernelInfo(XPOSE_SRC, "igemm_xpose", (ceil_div(t.cols, 32), ceil_div(t.rows, 32), t.batch),
                              (256, 1, 1), macros=(("DATA_T", CUDA_TYPES[p.dtype]),)) for t in plan.xposes]
        grid = (ceil_div(plan.m, cfg["BM"]), ceil_div(plan.n, cfg["BN"]), p.groups * eff)
        kernels.append(KernelInfo(self.source, self.kernel_name, grid, (nt, 1, 1), macros=mac))
        if eff > 1:
            kernels.append(KernelInfo(self.source, "igemm_wrw_reduce", (ceil_div(p.k * plan.n, RED_BLOCK), 1, 1),
                                      (RED_BLOCK, 1, 1), macros=mac))
        launch = [(k.grid, k.block) for k in kernels]
        nx = len(plan.xposes)
        xps = [(t.operand, np.int32(t.rows), np.int32(t.cols), off) for t, off in zip(plan.xposes, offs)]
        copied = {t.operand for t in plan.xposes}
        av, bv = plan.vecs(cfg)
        align = (1 if "a" in copied else av * plan.esize, 1 if "b" in copied else bv * plan.esize)
        wrw = p.direction == "W"
        sid = self.id

        def factory(kerns):
            main = kerns[nx]
            if smem > SMEM_STATIC:
                main.max_dynamic_shared_size_bytes = smem
            lx = [Launch(kerns[i], *launch[i], (PTR, PTR, rows, cols)) for i, (_, rows, cols, _) in enumerate(xps)]
            lmain = Launch(main, *launch[nx], (PTR, PTR, PTR, PTR) if wrw else (PTR, PTR, PTR), shared_mem=smem)
            lred = Launch(kerns[nx + 1], *launch[nx + 1], (PTR, PTR)) if eff > 1 else None
            need_ws = bool(xps) or eff > 1

            al0, al1 = align

            if not xps and not wrw:      # one launch: the common forward/backward-data case, kept short
                def invoker(a, b, out, workspace, stream):
                    if a % al0 or b % al1:
                        check_alignment(sid, align, a, b)
                    lmain(stream, a, b, out)
                return with_recipe(invoker, [(lmain, ((A, 0), (B, 0), (OUT, 0)))], (al0, al1, 1, 1))

            # the launches, each pointer as (role, byte offset): operands transposed into the workspace, the
            # main kernel (W: into FP32 partials when split), the split reduction
            src = {"a": (A, 0), "b": (B, 0)}
            steps = []
            for lk, (op, _, _, off) in zip(lx, xps):
                steps.append((lk, (src[op], (WS, off))))
                src[op] = (WS, off)
            last = (WS, part_off) if wrw and eff > 1 else (OUT, 0)
            steps.append((lmain, (src["a"], src["b"], (OUT, 0)) + ((last,) if wrw else ())))
            if lred is not None:
                steps.append((lred, ((WS, part_off), (OUT, 0))))

            def invoker(a, b, out, workspace, stream):
                if a % al0 or b % al1:
                    check_alignment(sid, align, a, b)
                if need_ws and not workspace:
                    raise ValueError(f"{sid}: workspace of {ws_total} bytes required, got none")
                p = (a, b, out, workspace)
                for lk, roles in steps:
                    lk(stream, *[p[r] + o for r, o in roles])
            return with_recipe(invoker, steps, (al0, al1, 1, 1), need_ws)

        return ConvSolution(self.id, kernels, ws_total, factory, cfg)
