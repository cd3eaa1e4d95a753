"""FFT convolution, forward and backward data, 2D and 3D (shared body of ConvFFTFwd and ConvFFTBwd).

Every (n, channel) plane of the input activations (x forward, dy backward) is zero-padded to a
7-smooth grid L >= size + pad and transformed by cuFFT (batched in-place R2C); the filters are
transformed by our own direct-DFT kernel (a few taps on a large zero grid); our MAC kernel sums
products over channels per frequency; cuFFT's C2R brings the result back and the crop kernel cuts the
valid region out into the output's layout and type. All buffers live in the workspace:

    [ O spectrum | A spectrum | W spectrum | extra ]   (planes of FP complex values, FP = 16m)

cuFFT's work area reuses whichever region is idle during each transform (the W region during the
R2C, the A and W regions during the C2R); ``extra`` pads the workspace so that an idle region at
least as large as the transformed data exists. Should cuFFT ask for more than that, the plan gets a
private work area allocated once when the invoker is built (see ``invoker.private_work_bytes``).

Stride 1 only (stride 2 would waste 3/4 of the transform); any dilation (the filter is dilated in
its spectrum for free); groups; NCHW/NHWC (NCDHW/NDHWC) per tensor, transposed inside the pack and
crop kernels; FP16/BF16 are converted to FP32 when packed and back when cropped.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES, needs_int64

from . import fft_cufft

SOURCES = ("fft_pack.cu", "fft_wdft.cu", "fft_mac.cu", "fft_crop.cu")
WORKSPACE_CAP = 2 << 30   # bytes; also keeps every buffer offset below 2^31 elements
FP_ALIGN = 16             # plane pitch in complex values: a multiple of the MAC frequency tile FT
MAX_GRID_SUM = 2048       # LD + LH + LW: the wdft kernel's twiddle tables (16 KiB of shared memory)
MAX_TAPS = 1024           # filter taps per (k, c): the wdft kernel's tap table (4 KiB)
WDFT_G_BYTES = 24 * 1024  # the wdft kernel's G chunk
SMEM_LIMIT = 48 * 1024
SM_COUNT = 132
TUNE_CONFIGS = 48
SPACE = {
    "FT": (16, 32, 64),
    "TN": (1, 2, 4, 8),
    "TI": (1, 2, 4, 8),
    "GN": (1, 2, 4, 8, 16),
    "GI": (1, 2, 4, 8, 16),
    "JC": (2, 4, 8),
}


def smooth_size(m: int, even: bool = False) -> int:
    """The smallest 2^a 3^b 5^c 7^d >= m (even if asked), the sizes cuFFT transforms fastest."""
    n = max(m, 2 if even else 1)
    while True:
        if not (even and n % 2):
            r = n
            for f in (2, 3, 5, 7):
                while r % f == 0:
                    r //= f
            if r == 1:
                return n
        n += 1


@dataclass(frozen=True)
class Geometry:
    """Sizes, kernel macros and workspace layout of one FFT convolution (3D view: D = 1 for 2D).

    ``a`` is the transformed input (x forward, dy backward), ``o`` the output (y, dx).
    """

    nd: int
    L: tuple[int, int, int]
    lw2: int
    F: int
    FP: int
    a_ch: int
    a_size: tuple[int, int, int]
    a_nhwc: bool
    o_ch: int
    o_size: tuple[int, int, int]
    o_nhwc: bool
    shift: tuple[int, int, int]
    sign: int
    ni: int
    nj: int
    b_is: int
    b_js: int
    b_gs: int
    taps: tuple[int, int, int]
    dils: tuple[int, int, int]
    a_bytes: int
    o_bytes: int
    w_bytes: int
    extra_bytes: int

    @property
    def off_o(self) -> int:
        return 0

    @property
    def off_a(self) -> int:
        return self.o_bytes

    @property
    def off_w(self) -> int:
        return self.o_bytes + self.a_bytes

    @property
    def total_bytes(self) -> int:
        return self.o_bytes + self.a_bytes + self.w_bytes + self.extra_bytes

    @property
    def fft_dims(self) -> list[int]:
        """Transform sizes without leading axes of 1 (a 2D problem is a rank-2 transform)."""
        dims = list(self.L)
        while len(dims) > 1 and dims[0] == 1:
            dims.pop(0)
        return dims


@functools.lru_cache(maxsize=1024)
def geometry(p: ProblemDescription) -> Geometry:
    """The FFT grid and buffers for ``p`` (an ordinary, non-transposed F or B problem).

    Per axis with input size S, pad q, effective filter E = (f-1)*dil + 1 and output size O:
    forward, y[o] = z[(o - q) mod L] of the circular correlation z of x (at offset 0) with the filter;
    the terms that wrap come from x's zero tail when L >= S + q, and the filter fits when L >= E.
    Backward data, dx[i] = z[(i + q) mod L] of the circular convolution z of dy with the filter; the
    same bound plus L >= O (dy must fit) keeps the wrapped terms zero.
    """
    nd = p.spatial_dims
    pad3 = (lambda t, v: (v, *t)) if nd == 2 else (lambda t, v: tuple(t))  # noqa: E731
    xs, ys = pad3(p.in_size, 1), pad3(p.out_size, 1)
    fs, pads, dils = pad3(p.filter_size, 1), pad3(p.pads, 0), pad3(p.dilations, 1)
    eff = tuple((f - 1) * d + 1 for f, d in zip(fs, dils))
    fwd = p.direction == "F"
    need = [max(x + q, e, 1 if fwd else y) for x, q, e, y in zip(xs, pads, eff, ys)]
    L = tuple(smooth_size(m, even=(i == 2)) for i, m in enumerate(need))
    lw2 = L[2] // 2 + 1
    F = L[0] * L[1] * lw2
    FP = ceil_div(F, FP_ALIGN) * FP_ALIGN
    g, cg, kg = p.groups, p.c // p.groups, p.k // p.groups
    x_nhwc, y_nhwc = p.layouts[0] in ("NHWC", "NDHWC"), p.layouts[2] in ("NHWC", "NDHWC")
    if fwd:
        a = (p.c, xs, x_nhwc)
        o = (p.k, ys, y_nhwc)
        shift, sign, ni, nj, b_is, b_js = tuple(-q for q in pads), 1, kg, cg, cg * FP, FP
    else:
        a = (p.k, ys, y_nhwc)
        o = (p.c, xs, x_nhwc)
        shift, sign, ni, nj, b_is, b_js = tuple(pads), -1, cg, kg, FP, cg * FP
    a_bytes, o_bytes, w_bytes = p.n * a[0] * FP * 8, p.n * o[0] * FP * 8, p.k * cg * FP * 8
    # cuFFT's work area for the R2C of A goes in [W | extra] or in O, for the C2R of O in [A | W | extra];
    # reserve enough for a work area as large as the transformed data
    extra = max(0, o_bytes - a_bytes - w_bytes, 0 if o_bytes >= a_bytes else a_bytes - w_bytes)
    return Geometry(nd, L, lw2, F, FP, a[0], a[1], a[2], o[0], o[1], o[2], shift, sign, ni, nj, b_is, b_js,
                    kg * cg * FP, fs, dils, a_bytes, o_bytes, w_bytes, extra)


def _pow2_at_least(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _smem(cfg) -> int:
    return cfg["JC"] * (cfg["GN"] * cfg["TN"] + cfg["GI"] * cfg["TI"]) * cfg["FT"] * 8


class FFTBase(Solver):
    family = "fft"
    tunable = True
    kernel_files = SOURCES

    # -- applicability ----------------------------------------------------------------------------
    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        nd = p.spatial_dims
        for name, lay in zip(("x", "w", "y"), p.layouts):
            if lay not in (("NCHW", "NHWC") if nd == 2 else ("NCDHW", "NDHWC")):
                return not_applicable(f"{name} layout {lay} not supported")
        if any(s != 1 for s in p.strides):
            return not_applicable(f"strides {p.strides} not supported (FFT needs stride 1)")
        if all(f == 1 for f in p.filter_size):
            return not_applicable(f"filter {p.filter_size}: a 1x1 filter gains nothing from FFT (use GEMM)")
        taps = 1
        for f in p.filter_size:
            taps *= f
        if taps > MAX_TAPS:
            return not_applicable(f"filter {p.filter_size} has {taps} taps, more than {MAX_TAPS}")
        geo = geometry(p)
        if sum(geo.L) > MAX_GRID_SUM:
            return not_applicable(f"FFT grid {'x'.join(map(str, geo.L[3 - nd:]))} too large "
                                  f"(sum of sizes over {MAX_GRID_SUM})")
        if geo.total_bytes > WORKSPACE_CAP:
            return not_applicable(f"needs {geo.total_bytes} bytes of workspace for the FFT grid "
                                  f"{'x'.join(map(str, geo.L[3 - nd:]))}, over the {WORKSPACE_CAP} cap")
        return APPLICABLE

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        return geometry(problem.as_conv()).total_bytes

    # -- MAC tile configurations --------------------------------------------------------------------
    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        if not isinstance(config, dict) or set(config) != set(SPACE):
            return False
        if any(config[k] not in v for k, v in SPACE.items()):
            return False
        return _valid_tile(config) and geometry(problem.as_conv()).FP % config["FT"] == 0

    def config_space(self, problem: ProblemDescription):
        """The TUNE_CONFIGS tiles the MAC time model ranks best (of about a thousand valid ones)."""
        for cfg in _ranked_configs(problem.as_conv())[:TUNE_CONFIGS]:
            yield dict(cfg)

    def default_config(self, problem: ProblemDescription) -> dict:
        return dict(_ranked_configs(problem.as_conv())[0])

    # -- solution -----------------------------------------------------------------------------------
    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        cfg = dict(config) if config else self.default_config(p)
        if not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        geo = geometry(p)
        LD, LH, LW = geo.L
        dt = CUDA_TYPES[p.dtype]
        index_t = "long long" if needs_int64(p) else "int"
        common = {"DATA_T": dt, "INDEX_T": index_t, "NB_": p.n, "LD": LD, "LH": LH, "LW": LW, "LW2": geo.lw2,
                  "FP": geo.FP}
        cg = p.c // p.groups

        def kinfo(src, grid, macros, block=256):
            return KernelInfo(src, src[:-3], (int(grid), 1, 1), (block, 1, 1),
                              macros=tuple((k, str(v)) for k, v in macros.items()))

        # pack: A planes
        asd, ash, asw = geo.a_size
        if geo.a_nhwc:
            rows = LD * LH + 1
            grid = ceil_div(2 * geo.lw2, 32) * rows * ceil_div(geo.a_ch, 32) * p.n
        else:
            grid = min(ceil_div(p.n * geo.a_ch * geo.FP, 256), 1 << 20)
        pack = kinfo("fft_pack.cu", grid, {**common, "CH": geo.a_ch, "SD": asd, "SH": ash, "SW": asw,
                                                       "NHWC": int(geo.a_nhwc)})
        # wdft: filter spectrum
        fz, fy, fx = geo.taps
        fwc = min(geo.lw2, max(1, WDFT_G_BYTES // (8 * fz * fy)))
        wdft = kinfo("fft_wdft.cu", min(p.k * cg, SM_COUNT * 8),
                     {**common, "KK": p.k, "CG": cg, "FZ": fz, "FY": fy, "FX": fx, "DLZ": geo.dils[0],
                      "DLY": geo.dils[1], "DLX": geo.dils[2], "SIGN": geo.sign,
                      "W_NHWC": int(p.layouts[1] in ("NHWC", "NDHWC")), "FWC": fwc})
        # mac
        nt = cfg["FT"] * cfg["GN"] * cfg["GI"]
        n_tiles = ceil_div(p.n, cfg["GN"] * cfg["TN"])
        i_tiles = ceil_div(geo.ni, cfg["GI"] * cfg["TI"])
        mac = kinfo("fft_mac.cu", geo.FP // cfg["FT"] * p.groups * n_tiles * i_tiles,
                    {"NB_": p.n, "NI": geo.ni, "NJ": geo.nj, "G_": p.groups, "A_CH": geo.a_ch, "O_CH": geo.o_ch,
                     "FP": geo.FP, "B_IS": geo.b_is, "B_JS": geo.b_js, "B_GS": geo.b_gs, **cfg}, block=nt)
        # crop: output
        od, oh, ow = geo.o_size
        if geo.o_nhwc:
            grid = ceil_div(ow, 32) * ceil_div(geo.o_ch, 32) * p.n * od * oh
        else:
            grid = min(ceil_div(p.n * geo.o_ch * od * oh * ow, 256), 1 << 20)
        crop = kinfo("fft_crop.cu", grid,
                     {**common, "CH": geo.o_ch, "OD": od, "OH": oh, "OW": ow, "SHD": geo.shift[0],
                      "SHH": geo.shift[1], "SHW": geo.shift[2], "NHWC": int(geo.o_nhwc)})
        kinfos = [pack, wdft, mac, crop]
        return ConvSolution(self.id, kinfos, geo.total_bytes, _factory(p, geo, kinfos), cfg)


def _valid_tile(cfg) -> bool:
    nt = cfg["FT"] * cfg["GN"] * cfg["GI"]
    return 64 <= nt <= 256 and cfg["TN"] * cfg["TI"] <= 32 and _smem(cfg) <= SMEM_LIMIT


@functools.lru_cache(maxsize=256)
def _ranked_configs(p: ProblemDescription) -> tuple:
    """Every valid MAC tile that fits the problem, best first by the time model (read-only dicts)."""
    geo = geometry(p)
    nb_max, ib_max = _pow2_at_least(p.n), _pow2_at_least(geo.ni)
    valid = [cfg for cfg in (dict(zip(SPACE, vals)) for vals in itertools.product(*SPACE.values()))
             if geo.FP % cfg["FT"] == 0 and _valid_tile(cfg)]
    # a tile larger than the problem only adds idle lanes (but tiny problems may need one)
    out = [cfg for cfg in valid if cfg["GN"] * cfg["TN"] <= nb_max and cfg["GI"] * cfg["TI"] <= ib_max] or valid
    out.sort(key=lambda cfg: _cost(p, geo, cfg))  # stable: ties keep the SPACE order
    return tuple(out)


def _cost(p: ProblemDescription, geo: Geometry, cfg) -> float:
    """A rough time model of the MAC kernel (seconds) to pick the default tile."""
    nb, ib = cfg["GN"] * cfg["TN"], cfg["GI"] * cfg["TI"]
    nt = cfg["FT"] * cfg["GN"] * cfg["GI"]
    tn, ti, jc = cfg["TN"], cfg["TI"], cfg["JC"]
    n_pad, i_pad, j_pad = ceil_div(p.n, nb) * nb, ceil_div(geo.ni, ib) * ib, ceil_div(geo.nj, jc) * jc
    blocks = geo.FP // cfg["FT"] * p.groups * (n_pad // nb) * (i_pad // ib)
    # Per channel and warp: TN*TI SM-cycles of FMA (4*TN*TI complex-MAC FMAs, 4 warp-FMAs per cycle)
    # against the shared-memory wavefronts of the TN + TI float2 loads. With FT = 16 a warp holds two
    # thread groups at the same 16 frequencies: the operand they share is one broadcast wavefront.
    if cfg["FT"] == 16:
        waves = tn + 2 * ti if cfg["GI"] >= 2 else 2 * tn + ti
    else:
        waves = 2 * (tn + ti)
    # plus a barrier pair per JC-channel chunk
    eff = tn * ti / max(tn * ti, waves) * jc / (jc + 0.5)
    compute = 4.0 * geo.FP * p.groups * n_pad * i_pad * j_pad / (25e12 * eff)
    l2 = blocks * j_pad * (nb + ib) * cfg["FT"] * 8 / 7e12
    dram = (geo.a_bytes + geo.w_bytes + geo.o_bytes) / 3e12
    regs = 2 * tn * ti + 2 * (tn + ti) + 4 * (ceil_div(jc * (nb + ib) * cfg["FT"] // 2, nt) + 2) + 24
    per_sm = max(1, min(2048 // nt, 65536 // (nt * min(255, regs)), (228 * 1024) // (_smem(cfg) + 1024), 32))
    waves = blocks / (SM_COUNT * per_sm)
    tail = max(1.0, (int(waves) + 1) / waves) if waves < 4 else 1.0
    occupancy = min(1.0, per_sm * nt / 512)  # too few warps per SM cannot hide latency
    memory = l2 + dram
    return (max(compute, memory) + 0.25 * min(compute, memory)) * tail / occupancy  # partial overlap


def _factory(p: ProblemDescription, geo: Geometry, kinfos):
    batch_a, batch_o = p.n * geo.a_ch, p.n * geo.o_ch

    def factory(kernels):
        import cupy
        import numpy as np

        pack, wdft, mac, crop = kernels
        kp, kw, km, kc = kinfos
        r2c = fft_cufft.InPlacePlan(geo.fft_dims, fft_cufft.CUFFT_R2C, batch_a, geo.FP)
        c2r = fft_cufft.InPlacePlan(geo.fft_dims, fft_cufft.CUFFT_C2R, batch_o, geo.FP)
        # work areas: idle workspace regions when large enough, else a private buffer
        private = []

        def place(need, regions):
            for off, size in regions:
                if need <= size:
                    return off
            private.append(cupy.empty(need, dtype=cupy.uint8))
            return None

        r2c_off = place(r2c.work_bytes, [(geo.off_w, geo.w_bytes + geo.extra_bytes), (geo.off_o, geo.o_bytes)])
        c2r_off = place(c2r.work_bytes, [(geo.off_a, geo.a_bytes + geo.w_bytes + geo.extra_bytes)])
        r2c_private = private[0] if r2c_off is None else None
        c2r_private = private[-1] if c2r_off is None else None
        u64 = np.uint64

        def invoker(a, b, out, workspace):
            base = workspace.data.ptr
            stream = cupy.cuda.get_current_stream().ptr
            pa, pw, po = base + geo.off_a, base + geo.off_w, base + geo.off_o
            pack(kp.grid, kp.block, (a, u64(pa)))
            r2c.execute(pa, r2c_private.data.ptr if r2c_private is not None else base + r2c_off, stream)
            wdft(kw.grid, kw.block, (b, u64(pw)))
            km_args = (u64(pa), u64(pw), u64(po))
            mac(km.grid, km.block, km_args)
            c2r.execute(po, c2r_private.data.ptr if c2r_private is not None else base + c2r_off, stream)
            crop(kc.grid, kc.block, (u64(po), out))

        invoker.plans = (r2c, c2r)
        invoker.private_work_bytes = sum(int(b.nbytes) for b in private)
        return invoker

    return factory
