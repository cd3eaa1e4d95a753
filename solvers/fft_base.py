"""FFT convolution, forward and backward data, 2D and 3D (shared body of ConvFFTFwd and ConvFFTBwd).

Every (n, channel) plane of the input activations (x forward, dy backward) is zero-padded to a
7-smooth grid L >= size + pad and transformed by cuFFT (batched in-place R2C); our MAC kernel sums
products with the filter spectrum over channels per frequency; cuFFT's C2R brings the result back
and the crop kernel cuts the valid region out into the output's layout and type. The filter
spectrum is a direct DFT of the taps (a few taps on a large zero grid): for filters of at most
MAX_FUSED_TAPS taps the MAC kernel generates it on the fly ("fused", when the model says the saved
traffic outweighs the regeneration per image tile), otherwise fft_wdft.cu writes it to the workspace.

All buffers live in the workspace: the A and O spectra (N x channels planes of FP complex values,
FP = 16m), the W spectrum when not fused (K x C/G planes), then ``extra``. cuFFT's work area reuses a
run of regions that is idle during each transform (everything but A during the R2C of A, everything
but O during the C2R of O; fft_wdft runs after the R2C); the regions are ordered, and ``extra`` sized,
so that such a run is at least as large as the transformed data. Should cuFFT ask for more, the plan
gets a private work area allocated once when the invoker is built (``invoker.private_work_bytes``).

Stride 1 only (a strided output would waste most of the transform); any dilation (the filter is
dilated in its spectrum for free); groups; NCHW/NHWC (NCDHW/NDHWC) per tensor, transposed inside
the pack and crop kernels; FP16/BF16 are converted to FP32 when packed and back when cropped.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from typing import NamedTuple

from miofind import env
from miofind import launch as _launch
from miofind.launch import PTR, Launch, NotTraceable, cupy_stream, mark_traceable
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES, needs_int64

from . import fft_cufft

SOURCES = ("fft_pack.cu", "fft_wdft.cu", "fft_mac.cu", "fft_crop.cu")
WORKSPACE_CAP = 2 << 30   # bytes; also keeps every buffer offset below 2^31 elements
FP_ALIGN = 16             # plane pitch in complex values: a multiple of the MAC frequency tile FT
MAX_GRID_SUM = 2048       # LD + LH + LW: the wdft kernel's twiddle tables (16 KiB of shared memory)
MAX_TAPS = 1024           # filter taps per (k, c): the wdft kernel's tap table (4 KiB)
MAX_FUSED_TAPS = 9        # the fused MAC keeps a frequency's twiddles of every tap in registers
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
    """The smallest 2^a 3^b 5^c 7^d >= m (even if asked), the sizes cuFFT transforms fastest.

    Closed form per odd part: for each 3^b 5^c 7^d below 2m the fewest factors of 2 that reach m,
    about (ln m)^3 / 21 steps on Python ints (12 ms at 2^64; a linear search took minutes at 10^12).
    m above 2^65 (twice a problem's largest size) is a ValueError, not a search that never ends."""
    if m > 1 << 65:
        raise ValueError(f"smooth_size: m={m if m < 10**30 else f'2^{m.bit_length() - 1}+'} is beyond any "
                         "FFT grid (at most 2^65)")
    m = max(m, 2 if even else 1)
    best = 1 << max(0, (m - 1).bit_length())  # the power of two, a candidate of every m
    p7 = 1
    while p7 < 2 * m:
        p5 = p7
        while p5 < 2 * m:
            odd = p5
            while odd < 2 * m:
                # the least odd * 2^a >= m (a >= 1 when even): a = bit length of ceil(m / odd) - 1
                a = max(1 if even else 0, (-(-m // odd) - 1).bit_length())
                best = min(best, odd << a)
                odd *= 3
            p5 *= 5
        p7 *= 7
    return best


class Geometry(NamedTuple):
    """Sizes, kernel parameters and workspace layout of one FFT convolution (3D view: D = 1 in 2D).

    ``a`` is the transformed input (x forward, dy backward), ``o`` the output (y, dx).
    ``regions`` are (name, offset, bytes) in workspace order, "extra" last.
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
    taps: tuple[int, int, int]
    dils: tuple[int, int, int]
    fused: bool
    regions: tuple[tuple[str, int, int], ...]

    def region(self, name: str) -> tuple[int, int]:
        for n, off, size in self.regions:
            if n == name:
                return off, size
        raise KeyError(name)

    @property
    def total_bytes(self) -> int:
        _, off, size = self.regions[-1]
        return off + size

    def idle_runs(self, busy: str) -> list[tuple[int, int]]:
        """Maximal runs (offset, bytes) of consecutive regions other than ``busy``, largest first."""
        runs, start, size = [], None, 0
        for name, off, b in self.regions:
            if name == busy:
                if start is not None:
                    runs.append((start, size))
                start, size = None, 0
            else:
                start = off if start is None else start
                size += b
        if start is not None:
            runs.append((start, size))
        return sorted(runs, key=lambda r: -r[1])

    @property
    def fft_dims(self) -> list[int]:
        """Transform sizes without leading axes of 1 (a 2D problem is a rank-2 transform)."""
        dims = list(self.L)
        while len(dims) > 1 and dims[0] == 1:
            dims.pop(0)
        return dims


def _layout(sizes: dict[str, int], needs: dict[str, int]) -> tuple[tuple[str, int, int], ...]:
    """Regions in the order that needs the least "extra": a region appended so that each transform
    has an idle run as large as its data (``needs`` maps a transform's busy region to its bytes)."""
    best_layout = None
    for order in itertools.permutations(sizes):
        regions, off = [], 0
        for name in order:
            regions.append((name, off, sizes[name]))
            off += sizes[name]
        extra = 0
        for busy, need in needs.items():
            longest = run = 0
            for name, _, b in regions:
                run = 0 if name == busy else run + b
                longest = max(longest, run)
            if longest < need:  # grow the idle run that ends the layout (``run``)
                extra = max(extra, need - run)
        layout = tuple(regions) + (("extra", off, extra),)
        if best_layout is None or off + extra < best_layout[-1][1] + best_layout[-1][2]:
            best_layout = layout
    return best_layout


def use_fused(p: ProblemDescription, taps: int) -> bool:
    """Generate the filter spectrum inside the MAC kernel? It saves writing and reading K*C/G*FP
    complex values (16 bytes each at ~3 TB/s) and costs 2*taps FMAs per value and image tile
    (~32 images) at ~20 TFMA/s: worth it while ceil(N/32) * taps stays under about 48."""
    return taps <= MAX_FUSED_TAPS and ceil_div(p.n, 32) * taps <= 48


def _grid_need(p: ProblemDescription) -> tuple[int, int, int]:
    """The least grid size per axis (D, H, W; D = 1 in 2D) that ``geometry`` explains."""
    nd = p.spatial_dims
    pad3 = (lambda t, v: (v, *t)) if nd == 2 else (lambda t, v: tuple(t))  # noqa: E731
    xs, ys = pad3(p.in_size, 1), pad3(p.out_size, 1)
    fs, pads, dils = pad3(p.filter_size, 1), pad3(p.pads, 0), pad3(p.dilations, 1)
    eff = tuple((f - 1) * d + 1 for f, d in zip(fs, dils))
    fwd = p.direction == "F"
    return tuple(max(x + q, e, 1 if fwd else y) for x, q, e, y in zip(xs, pads, eff, ys))


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
    fwd = p.direction == "F"
    L = tuple(smooth_size(m, even=(i == 2)) for i, m in enumerate(_grid_need(p)))
    lw2 = L[2] // 2 + 1
    F = L[0] * L[1] * lw2
    FP = ceil_div(F, FP_ALIGN) * FP_ALIGN
    cg, kg = p.c // p.groups, p.k // p.groups
    x_nhwc, y_nhwc = p.layouts[0] in ("NHWC", "NDHWC"), p.layouts[2] in ("NHWC", "NDHWC")
    if fwd:
        a, o, shift, sign, ni, nj = (p.c, xs, x_nhwc), (p.k, ys, y_nhwc), tuple(-q for q in pads), 1, kg, cg
    else:
        a, o, shift, sign, ni, nj = (p.k, ys, y_nhwc), (p.c, xs, x_nhwc), tuple(pads), -1, cg, kg
    a_bytes, o_bytes = p.n * a[0] * FP * 8, p.n * o[0] * FP * 8
    fused = use_fused(p, fs[0] * fs[1] * fs[2])
    sizes = {"O": o_bytes, "A": a_bytes, **({} if fused else {"W": p.k * cg * FP * 8})}
    regions = _layout(sizes, {"A": a_bytes, "O": o_bytes})
    return Geometry(nd, L, lw2, F, FP, a[0], a[1], a[2], o[0], o[1], o[2], shift, sign, ni, nj, fs, dils,
                    fused, regions)


def _pow2_at_least(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _tp(geo: Geometry) -> int:
    """Taps per filter padded to float4 (the fused MAC's shared tap tile)."""
    t = geo.taps[0] * geo.taps[1] * geo.taps[2]
    return ceil_div(t, 4) * 4


def _smem(geo: Geometry, ft, tn, ti, gn, gi, jc):
    """Shared memory bytes of MAC tiles: ints, or numpy arrays of tiles."""
    ib = gi * ti
    b = jc * (gn * tn + ib) * ft * 8
    return b + (jc * ib * _tp(geo) * 4 if geo.fused else 0)


def _valid_tiles(geo: Geometry, ft, tn, ti, gn, gi, jc, smem):
    """Which MAC tiles the kernel can run: ints (a bool), or numpy arrays of tiles (a mask)."""
    nt = ft * gn * gi
    return (64 <= nt) & (nt <= 256) & (tn * ti <= 32) & (smem <= SMEM_LIMIT) & (geo.FP % ft == 0)


def _valid(geo: Geometry, cfg) -> bool:
    tile = tuple(cfg[k] for k in ("FT", "TN", "TI", "GN", "GI", "JC"))
    return bool(_valid_tiles(geo, *tile, _smem(geo, *tile)))


class FFTBase(Solver):
    family = "fft"
    tunable = True
    kernel_files = SOURCES
    # cuFFT makes a transform size's plans in 7-16 ms in a warm process and 40-240 ms on an empty JIT cache
    # (bench/results/session-nov28h/), several times the candidate's measurement; deferred from a predicted 1.3x, no
    # held-out problem's fastest solver is left to the background that 2x would not leave
    # (bench/results/session-nov29c/defer_fft.txt)
    defer_factor = 1.3

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
        # each grid size is at least its axis' need (geometry), so a need over the cap is decided
        # before any grid is searched or any buffer sized
        need = _grid_need(p)
        if sum(need) > MAX_GRID_SUM:
            return not_applicable(f"FFT grid of at least {'x'.join(map(str, need[3 - nd:]))} too large "
                                  f"(sum of sizes over {MAX_GRID_SUM})")
        geo = geometry(p)
        grid = "x".join(map(str, geo.L[3 - nd:]))
        if sum(geo.L) > MAX_GRID_SUM:
            return not_applicable(f"FFT grid {grid} too large (sum of sizes over {MAX_GRID_SUM})")
        if geo.total_bytes > WORKSPACE_CAP:
            return not_applicable(f"needs {geo.total_bytes} bytes of workspace for the FFT grid {grid}, "
                                  f"over the {WORKSPACE_CAP} cap")
        return APPLICABLE

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        return geometry(problem.as_conv()).total_bytes

    def prefetch(self, problem: ProblemDescription) -> bool:
        """The solution's two cuFFT plans, made in a thread (``fft_cufft.prefetch_plans``; MIOFIND_FFT_PREFETCH)."""
        if not env.fft_prefetch():
            return False
        import cupy
        return fft_cufft.prefetch_plans(plan_specs(problem.as_conv()), cupy.cuda.runtime.getDevice()) is not None

    def library_versions(self) -> dict[str, str | None]:
        """cuFFT's version joins the trust key (it runs half of the solution)."""
        v = fft_cufft.version()
        return {"cufft": str(v) if v else None}

    # -- MAC tile configurations --------------------------------------------------------------------
    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        if not isinstance(config, dict) or set(config) != set(SPACE):
            return False
        if any(config[k] not in v for k, v in SPACE.items()):
            return False
        return _valid(geometry(problem.as_conv()), config)

    def config_space(self, problem: ProblemDescription):
        """The TUNE_CONFIGS tiles the MAC time model ranks best (of about a thousand valid ones)."""
        for cfg in _ranked_configs(problem.as_conv()):
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
        grid_macros = {"LD": LD, "LH": LH, "LW": LW, "LW2": geo.lw2, "FP": geo.FP}
        common = {"DATA_T": dt, "INDEX_T": index_t, "NB_": p.n, **grid_macros}
        cg = p.c // p.groups
        fz, fy, fx = geo.taps
        taps = {"FZ": fz, "FY": fy, "FX": fx, "DLZ": geo.dils[0], "DLY": geo.dils[1], "DLX": geo.dils[2],
                "SIGN": geo.sign}
        w_nhwc = p.layouts[1] in ("NHWC", "NDHWC")

        def kinfo(src, grid, macros, block=256):
            return KernelInfo(src, src[:-3], (int(grid), 1, 1), (block, 1, 1),
                              macros=tuple((k, str(v)) for k, v in macros.items()))

        kinfos = []
        # pack: A planes
        asd, ash, asw = geo.a_size
        if geo.a_nhwc:
            grid = ceil_div(2 * geo.lw2, 32) * (LD * LH + 1) * ceil_div(geo.a_ch, 32) * p.n
        else:
            grid = min(ceil_div(p.n * geo.a_ch * geo.FP, 256), 1 << 20)
        kinfos.append(kinfo("fft_pack.cu", grid,
                            {**common, "CH": geo.a_ch, "SD": asd, "SH": ash, "SW": asw, "NHWC": int(geo.a_nhwc)}))
        # wdft: filter spectrum (unless the MAC generates it)
        if not geo.fused:
            fwc = min(geo.lw2, max(1, WDFT_G_BYTES // (8 * fz * fy)))
            kinfos.append(kinfo("fft_wdft.cu", min(p.k * cg, SM_COUNT * 8),
                                {**common, "KK": p.k, "CG": cg, **taps, "W_NHWC": int(w_nhwc), "FWC": fwc}))
        # mac
        nt = cfg["FT"] * cfg["GN"] * cfg["GI"]
        n_tiles = ceil_div(p.n, cfg["GN"] * cfg["TN"])
        i_tiles = ceil_div(geo.ni, cfg["GI"] * cfg["TI"])
        mac = {"NB_": p.n, "NI": geo.ni, "NJ": geo.nj, "G_": p.groups, "A_CH": geo.a_ch, "O_CH": geo.o_ch,
               "FP": geo.FP, **cfg}
        if geo.fused:
            t = fz * fy * fx
            w_ks, w_cs, w_ts = (t * cg, 1, cg) if w_nhwc else (cg * t, t, 1)
            mac.update({"FUSE_W": 1, "DATA_T": dt, **grid_macros, **taps, "DIR_FWD": int(p.direction == "F"),
                        "W_KS": w_ks, "W_CS": w_cs, "W_TS": w_ts})
        else:
            fp = geo.FP
            b_is, b_js = (cg * fp, fp) if p.direction == "F" else (fp, cg * fp)
            mac.update({"B_IS": b_is, "B_JS": b_js, "B_GS": geo.nj * geo.ni * fp})
        kinfos.append(kinfo("fft_mac.cu", geo.FP // cfg["FT"] * p.groups * n_tiles * i_tiles, mac, block=nt))
        # crop: output
        od, oh, ow = geo.o_size
        if geo.o_nhwc:
            grid = ceil_div(ow, 32) * ceil_div(geo.o_ch, 32) * p.n * od * oh
        else:
            grid = min(ceil_div(p.n * geo.o_ch * od * oh * ow, 256), 1 << 20)
        kinfos.append(kinfo("fft_crop.cu", grid,
                            {**common, "CH": geo.o_ch, "OD": od, "OH": oh, "OW": ow, "SHD": geo.shift[0],
                             "SHH": geo.shift[1], "SHW": geo.shift[2], "NHWC": int(geo.o_nhwc)}))
        return ConvSolution(self.id, kinfos, geo.total_bytes, _factory(p, geo, kinfos), cfg)


@functools.lru_cache(maxsize=1)
def _tiles() -> dict:
    """Every SPACE tile as columns (itertools.product order), for the vectorised ranking below."""
    import numpy as np

    grid = np.array(list(itertools.product(*SPACE.values())), dtype=np.int64)
    return {k: grid[:, i] for i, k in enumerate(SPACE)}


@functools.lru_cache(maxsize=256)
def _ranked_configs(p: ProblemDescription) -> tuple:
    """The TUNE_CONFIGS best valid MAC tiles that fit the problem, best first by the time model (``_cost``), as
    dicts (about a thousand are valid: only those a find or a tuning run can ask for are made dicts)."""
    import numpy as np

    geo = geometry(p)
    t = _tiles()
    ft, tn, ti, gn, gi, jc = (t[k] for k in ("FT", "TN", "TI", "GN", "GI", "JC"))
    smem = _smem(geo, ft, tn, ti, gn, gi, jc)
    valid = _valid_tiles(geo, ft, tn, ti, gn, gi, jc, smem)
    # a tile larger than the problem only adds idle lanes (but tiny problems may need one)
    fits = valid & (gn * tn <= _pow2_at_least(p.n)) & (gi * ti <= _pow2_at_least(geo.ni))
    idx = np.flatnonzero(fits if fits.any() else valid)
    cost = _cost(p, geo, ft[idx], tn[idx], ti[idx], gn[idx], gi[idx], jc[idx], smem[idx])
    order = idx[np.argsort(cost, kind="stable")][:TUNE_CONFIGS]     # stable: ties keep the SPACE order
    names = tuple(SPACE)
    return tuple(dict(zip(names, row)) for row in np.stack([t[k][order] for k in names], axis=1).tolist())


def _cost(p: ProblemDescription, geo: Geometry, ft, tn, ti, gn, gi, jc, smem):
    """A rough time model of the MAC kernel (seconds) to pick the default tile, over numpy arrays of
    tiles (one element per tile; ``smem`` their shared memory bytes)."""
    import numpy as np

    nb, ib = gn * tn, gi * ti
    nt = ft * gn * gi
    n_pad, i_pad, j_pad = ceil_div(p.n, nb) * nb, ceil_div(geo.ni, ib) * ib, ceil_div(geo.nj, jc) * jc
    blocks = geo.FP // ft * p.groups * (n_pad // nb) * (i_pad // ib)
    taps = geo.taps[0] * geo.taps[1] * geo.taps[2]
    # Per channel and warp: TN*TI SM-cycles of FMA (4*TN*TI complex-MAC FMAs, 4 warp-FMAs per cycle)
    # against the shared-memory wavefronts of the TN + TI float2 loads. With FT = 16 a warp holds two
    # thread groups at the same 16 frequencies: the operand they share is one broadcast wavefront.
    waves = np.where(ft == 16, np.where(gi >= 2, tn + 2 * ti, 2 * tn + ti), 2 * (tn + ti))
    # plus a barrier pair (three when fused) per JC-channel chunk
    eff = tn * ti / np.maximum(tn * ti, waves) * jc / (jc + (1.0 if geo.fused else 0.5))
    fmas = 4.0 * geo.FP * p.groups * n_pad * i_pad * j_pad / eff
    l2_rows = nb + (0 if geo.fused else ib)
    if geo.fused:  # 2*taps FMAs per generated value, regenerated for every image tile
        fmas = fmas + 2.0 * taps * geo.FP * p.groups * (n_pad // nb) * i_pad * j_pad / 0.8
    compute = fmas / 25e12
    l2 = blocks * j_pad * l2_rows * ft * 8 / 7e12
    w_bytes = 0 if geo.fused else p.k * (p.c // p.groups) * geo.FP * 8
    dram = (p.n * (geo.a_ch + geo.o_ch) * geo.FP * 8 + w_bytes) / 3e12
    # registers: accumulators, operands, prefetch (and, fused, taps, twiddles and the unrolled generation)
    regs = 2 * tn * ti + 2 * (tn + ti) + ceil_div(jc * nb * ft // 2, nt) * 4 + 24
    if geo.fused:
        regs = regs + ceil_div(jc * ib * _tp(geo), nt) + 2 * taps + 4 * ceil_div(jc * ib * ft, nt)
    else:
        regs = regs + ceil_div(jc * ib * ft // 2, nt) * 4
    per_sm = np.maximum(1, np.minimum(np.minimum(np.minimum(2048 // nt, 65536 // (nt * np.minimum(255, regs))),
                                                 (228 * 1024) // (smem + 1024)), 32))
    waves_blocks = blocks / (SM_COUNT * per_sm)
    with np.errstate(divide="ignore"):
        tail = np.where(waves_blocks < 4, np.maximum(1.0, (np.floor(waves_blocks) + 1) / waves_blocks), 1.0)
    occupancy = np.minimum(1.0, per_sm * nt / 512)  # too few warps per SM cannot hide latency
    memory = l2 + dram
    spill = np.where(regs > 168, 1.5, 1.0)  # ptxas starts to spill around here
    return (np.maximum(compute, memory) + 0.25 * np.minimum(compute, memory)) * tail * spill / occupancy


_NO_LOCK = contextlib.nullcontext()


def plan_specs(p: ProblemDescription) -> list[tuple]:
    """The (dims, kind, batch, plane_complex) of the two cuFFT plans ``p``'s solution makes (``_factory``)."""
    geo = geometry(p)
    return [(geo.fft_dims, fft_cufft.CUFFT_R2C, p.n * geo.a_ch, geo.FP),
            (geo.fft_dims, fft_cufft.CUFFT_C2R, p.n * geo.o_ch, geo.FP)]


def _factory(p: ProblemDescription, geo: Geometry, kinfos):
    r2c_spec, c2r_spec = plan_specs(p)      # what FFTBase.prefetch asks fft_cufft for ahead
    off_a, off_o = geo.region("A")[0], geo.region("O")[0]
    off_w = None if geo.fused else geo.region("W")[0]

    def factory(kernels):
        import threading

        import cupy

        def work_area(plan, busy, stream, private):
            # the largest run of regions idle during the transform, else a buffer of this stream's
            off, size = geo.idle_runs(busy)[0]
            if plan.work_bytes <= size:
                return lambda base: base + off
            with cupy_stream(stream):
                buf = cupy.empty(plan.work_bytes, dtype=cupy.uint8)
            private.append(buf)
            return lambda base: buf.data.ptr

        # cuFFT plans carry a stream and a work area: each stream gets its own plans (and private
        # work buffer, if any), so streams neither share mutable state nor serialise on a lock
        states: dict[int, tuple] = {}
        lock = threading.Lock()

        def state(stream: int):
            st = states.get(stream)
            if st is None:
                with lock:
                    st = states.get(stream)
                    if st is None:
                        r2c, c2r = fft_cufft.plan(*r2c_spec), fft_cufft.plan(*c2r_spec)
                        private = []
                        st = states[stream] = (r2c, c2r, work_area(r2c, "A", stream, private),
                                               work_area(c2r, "O", stream, private), private, threading.Lock())
            return st

        if geo.fused:
            (pack, mac, crop), (kp, km, kc) = kernels, kinfos
            lmac = Launch(mac, km.grid, km.block, (PTR, PTR, PTR))
        else:
            (pack, wdft, mac, crop), (kp, kw, km, kc) = kernels, kinfos
            lwdft = Launch(wdft, kw.grid, kw.block, (PTR, PTR))
            lmac = Launch(mac, km.grid, km.block, (PTR, PTR, PTR))
        lpack = Launch(pack, kp.grid, kp.block, (PTR, PTR))
        lcrop = Launch(crop, kc.grid, kc.block, (PTR, PTR))

        def invoker(a, b, out, workspace, stream):
            if not workspace:
                raise ValueError(f"workspace of {geo.total_bytes} bytes required, got none")
            r2c, c2r, r2c_work, c2r_work, private, lock = states.get(stream) or state(stream)
            if private and _launch._tracer is not None and _launch._tracer.mine():
                raise NotTraceable("cuFFT's work area is a private buffer")
            base = workspace
            pa, po = base + off_a, base + off_o
            # a private work buffer is this stream's: threads sharing the stream take turns on it
            with lock if private else _NO_LOCK:
                lpack(stream, a, pa)
                r2c.execute(pa, r2c_work(base), stream)
                if geo.fused:
                    lmac(stream, pa, b, po)
                else:
                    pw = base + off_w
                    lwdft(stream, b, pw)
                    lmac(stream, pa, pw, po)
                c2r.execute(po, c2r_work(base), stream)
                lcrop(stream, po, out)

        first = state(cupy.cuda.get_current_stream().ptr)   # plans built with the solution
        invoker.plans = first[:2]
        # 0 unless cuFFT asked for more work area than the idle regions the workspace reserves
        invoker.private_work_bytes = sum(int(b.nbytes) for b in first[4])
        return mark_traceable(invoker)

    return factory
