"""Implicit GEMM convolution, F/B/W: shared planning for kernels_src/igemm_{fwd,bwd,wrw}.cu.

Each direction is one GEMM per group whose operands are gathered from the tensors on the fly
(igemm_core.cu, no im2col buffer); igemm_fwd.cu, igemm_bwd.cu and igemm_wrw.cu give the index
algebra. The problem's sizes and every tensor's element strides are compile-time macros (one build
per problem, as MIOpen's implicit-GEMM solvers); the tile shape is the tunable config.

Math by problem: FP32 strict runs FFMA on the CUDA cores (config keys BM BN BK TM TN STAGES:
thread tile TM x TN); FP16/BF16 run mma.sync m16n8k16 with FP32 accumulation and FP32 math="tf32"
runs mma.sync m16n8k8 TF32 (keys BM BN BK WM WN STAGES: warp tile WM x WN). Backward weights adds
SPLITK, the number of reduction chunks (partials in the workspace, then a fixed-order reduce).

Operand plan: a GEMM operand is contiguous in memory along kk or along its rows; a "run" is the
length over which consecutive elements are contiguous, aligned and valid or invalid together, so
the loads may move VEC elements at once for any power of two VEC dividing the run (16 bytes at
most; FFMA scatters kk-contiguous operands into k-outer shared memory one element at a time).
"""

from __future__ import annotations

import itertools
import math

from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES, needs_int64

CORE = "igemm_core.cu"
LAYOUTS = ("NCHW", "NHWC", "NCDHW", "NDHWC")
CHANNELS_LAST = ("NHWC", "NDHWC")
SMEM_LIMIT = 227 * 1024          # opt-in dynamic shared memory per block on sm_90
SMEM_STATIC = 48 * 1024          # above this the factory raises the kernel's dynamic limit
INT32_MAX = 2**31 - 1
GRID_YZ = 65535
SM_COUNT = 132                   # H100 SXM; only steers the default split of backward weights
ESIZE = {"FP32": 4, "FP16": 2, "BF16": 2}
FFMA_KEYS = ("BM", "BN", "BK", "TM", "TN", "STAGES")
MMA_KEYS = ("BM", "BN", "BK", "WM", "WN", "STAGES")


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


def strides5(shape, layout) -> tuple[int, int, int, int, int]:
    """(n, c, d, h, w) element strides of a dense tensor; 2D has a d stride of 0."""
    nd = len(shape) - 2
    contig = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        contig[i] = contig[i + 1] * shape[i + 1]
    if layout in CHANNELS_LAST:
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


class Plan:
    """The GEMM of one group for a direction, and how each operand is laid out in memory."""

    def __init__(self, p: ProblemDescription):
        self.p = p
        d = p.direction
        g = p.groups
        cpg, kpg = p.c // g, p.k // g
        taps = math.prod(p.filter_size)
        _, osz, _, _, _, _ = dims3(p)
        isz = dims3(p)[0]
        npix_o = p.n * math.prod(osz)
        x_cl = p.layouts[0] in CHANNELS_LAST
        w_cl = p.layouts[1] in CHANNELS_LAST
        y_cl = p.layouts[2] in CHANNELS_LAST
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


def nthreads(math_: int, cfg) -> int:
    if math_ == 0:
        return (cfg["BM"] // cfg["TM"]) * (cfg["BN"] // cfg["TN"])
    return (cfg["BM"] // cfg["WM"]) * (cfg["BN"] // cfg["WN"]) * 32


def _loader_ok(nt: int, rows: int, bk: int, kc: bool, vec: int) -> bool:
    """The loader geometry of igemm_core.cu's Loader (its static_asserts)."""
    if kc:
        return bk % vec == 0 and nt % (bk // vec) == 0
    if rows % vec:
        return False
    ul = rows // vec
    tr = min(ul, max(32, nt // bk))
    return ul % tr == 0 and nt % tr == 0


def stage_elems(math_: int, rows: int, bk: int, kc: bool) -> int:
    """Elements of one operand stage (igemm_core.cu's Smem)."""
    kouter = math_ == 0 or not kc
    pad = (4 if math_ == 0 else 8) if kouter else (8 if math_ == 1 else 4)
    return bk * (rows + pad) if kouter else rows * (bk + pad)


def smem_bytes(plan: Plan, cfg) -> int:
    per = stage_elems(plan.math, cfg["BM"], cfg["BK"], plan.a_kc) + stage_elems(plan.math, cfg["BN"], cfg["BK"], plan.b_kc)
    return cfg["STAGES"] * per * plan.esize


def tile_ok(plan: Plan, cfg) -> bool:
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
    nt = nthreads(m, cfg)
    if nt % 32 or not 32 <= nt <= 512:
        return False
    if cfg["STAGES"] not in (2, 3, 4):
        return False
    av, bv = plan.vecs(cfg)
    if not (_loader_ok(nt, bm, bk, plan.a_kc, av) and _loader_ok(nt, bn, bk, plan.b_kc, bv)):
        return False
    return smem_bytes(plan, cfg) <= SMEM_LIMIT


def _pow2_ceil(v: int, lo: int, hi: int) -> int:
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


def default_tile(plan: Plan) -> dict:
    """A tile for the GEMM's shape: BN from N, BM shrunk while the grid is short of SMs."""
    bn = _pow2_ceil(plan.n, 16, 128)
    bm = 128 if plan.m >= 128 else _pow2_ceil(plan.m, 32, 128)
    # a short grid wastes SMs: halve BM while there are fewer than ~2 blocks per SM
    while bm > 32 and ceil_div(plan.m, bm) * ceil_div(plan.n, bn) * plan.p.groups < 2 * SM_COUNT:
        bm //= 2
    cfg = {"BM": bm, "BN": bn, "BK": 8 if plan.math == 0 else (32 if plan.math == 1 else 16), "STAGES": 3}
    return fit_threads(plan.math, cfg)


def config_keys(plan: Plan) -> tuple:
    keys = FFMA_KEYS if plan.math == 0 else MMA_KEYS
    return keys + (("SPLITK",) if plan.p.direction == "W" else ())


def space(plan: Plan):
    """A tuning space of tile shapes (the validity check prunes it per problem)."""
    if plan.math == 0:
        grid = {"BM": (32, 64, 128, 256), "BN": (16, 32, 64, 128), "BK": (8, 16), "TM": (4, 8), "TN": (4, 8),
                "STAGES": (2, 3, 4)}
    else:
        grid = {"BM": (32, 64, 128, 256), "BN": (16, 32, 64, 128, 256), "BK": (32, 64) if plan.math == 1 else (16, 32),
                "WM": (32, 64), "WN": (16, 32, 64), "STAGES": (3, 4)}
    for vals in itertools.product(*grid.values()):
        cfg = dict(zip(grid, vals))
        nt = nthreads(plan.math, cfg) if (cfg["BM"] % cfg.get("TM", cfg.get("WM")) == 0
                                           and cfg["BN"] % cfg.get("TN", cfg.get("WN")) == 0) else 0
        if nt < 64 or nt > 256:
            continue
        # tiles far larger than the GEMM only add idle threads
        if cfg["BN"] > max(16, 2 * _pow2_ceil(plan.n, 16, 256)) or cfg["BM"] > max(32, 2 * _pow2_ceil(plan.m, 32, 256)):
            continue
        if tile_ok(plan, cfg):
            yield cfg


def macros(plan: Plan, cfg) -> dict:
    p = plan.p
    isz, osz, fsz, pads, strides, dils = dims3(p)
    xs = strides5(p.x_shape, p.layouts[0])
    ws = strides5(p.w_shape, p.layouts[1])
    ys = strides5(p.y_shape, p.layouts[2])
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
    }
    for key in FFMA_KEYS if plan.math == 0 else MMA_KEYS:
        out[key] = cfg[key]
    return out


class IgemmBase(Solver):
    """Common applicability, configs and launch of the three implicit-GEMM solvers."""

    family = "implicit_gemm"
    tunable = True
    source = ""
    kernel_name = ""

    @property
    def kernel_files(self):
        return (self.source, CORE)

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
        plan = Plan(p)
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
        return default_tile(Plan(problem.as_conv()))

    def config_space(self, problem: ProblemDescription):
        yield from space(Plan(problem.as_conv()))

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        plan = Plan(problem.as_conv())
        if not isinstance(config, dict) or set(config) != set(config_keys(plan)):
            return False
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in config.values()):
            return False
        return tile_ok(plan, config)

    def _check(self, problem, config) -> tuple[ProblemDescription, Plan, dict]:
        p = problem.as_conv()
        plan = Plan(p)
        cfg = dict(config) if config else self.default_config(p)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        return p, plan, cfg

    # -- solution ------------------------------------------------------------------------------
    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p, plan, cfg = self._check(problem, config)
        mac = macros(plan, cfg)
        nt = nthreads(plan.math, cfg)
        smem = smem_bytes(plan, cfg)
        grid = (ceil_div(plan.m, cfg["BM"]), ceil_div(plan.n, cfg["BN"]), p.groups)
        kinfo = KernelInfo(self.source, self.kernel_name, grid, (nt, 1, 1),
                           macros=tuple((k, str(v)) for k, v in mac.items()), shared_bytes=smem)

        def factory(kernels):
            (kern,) = kernels
            if smem > SMEM_STATIC:
                kern.max_dynamic_shared_size_bytes = smem

            def invoker(a, b, out, workspace=None):
                kern(kinfo.grid, kinfo.block, (a, b, out), shared_mem=smem)
            return invoker

        return ConvSolution(self.id, [kinfo], 0, factory, cfg)
