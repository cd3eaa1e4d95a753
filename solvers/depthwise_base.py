"""Shared body of the depthwise and small-group direct solvers (kernels_src/depthwise_*.cu).

Both families run the same kernels: a stencil pass dst <- src with G groups of IPG src and OPG dst
channels (forward: x -> y; backward data, in gather form: dy -> dx; backward weights: the forward
footprint, reduced over (n, oh, ow) in two deterministic stages through the workspace). Problem
sizes and the thread/tile shape are compile-time macros, so every tap pattern is unrolled.
NCHW stages each tile's src footprint in shared memory; NHWC loads channel vectors straight
into registers. This module holds the index algebra mirrored from the kernels, the tile
configurations (space, validity, a cost model for the default) and the solver base class.
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

from miofind.launch import A, B, OUT, PTR, WS, Launch, with_recipe
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, KernelInfo, Solver, ceil_div, not_applicable
from miofind.tensors import CUDA_TYPES, needs_int64

SRC_NCHW = "depthwise_nchw.cu"
SRC_NHWC = "depthwise_nhwc.cu"
SRC_WRW_NCHW = "depthwise_wrw_nchw.cu"
SRC_WRW_NHWC = "depthwise_wrw_nhwc.cu"
SRC_REDUCE = "depthwise_wrw_reduce.cu"
KERNEL_FILES = (SRC_NCHW, SRC_NHWC, SRC_WRW_NCHW, SRC_WRW_NHWC, SRC_REDUCE, "depthwise_common.cuh")

SMEM_LIMIT = 48 * 1024
NUM_SM = 132
MAX_FILTER = 7
MAX_STRIDE = 2
MAX_DILATION = 2
MAX_MULTIPLIER = 16          # depthwise K/C
MAX_GROUP_CHANNELS = 8       # grouped C/G and K/G
MAX_TUNE = 48
ELEM_BYTES = {"FP32": 4, "FP16": 2, "BF16": 2}


# -- index algebra (mirrors Axis in depthwise_common.cuh) --------------------------------

class Axis(NamedTuple):
    bwd: int
    p: int
    s: int
    d: int
    f: int

    @property
    def emin(self) -> int:
        return (self.p - (self.f - 1) * self.d) // self.s if self.bwd else 0

    @property
    def unit(self) -> int:
        return self.s if self.bwd else 1

    @property
    def step(self) -> int:
        return 1 if self.bwd else self.s

    def hit(self, j: int, t: int) -> bool:
        return not self.bwd or (j + self.p - t * self.d) % self.s == 0

    def off(self, j: int, t: int) -> int:
        if self.bwd:
            return (j + self.p - t * self.d) // self.s - self.emin
        return j * self.s + t * self.d

    def origin(self, o0: int) -> int:
        return o0 // self.s + self.emin if self.bwd else o0 * self.s - self.p

    def span(self, T: int) -> int:
        return _span(self.bwd, self.p, self.s, self.d, self.f, T)


@functools.lru_cache(maxsize=None)
def _span(bwd, p, s, d, f, T) -> int:
    a = Axis(bwd, p, s, d, f)
    return max((a.off(j, t) + 1 for j in range(T) for t in range(f) if a.hit(j, t)), default=1)


class Pass(NamedTuple):
    """The stencil pass of a problem: dst <- src, in the forward view for W."""

    direction: str
    bwd: int
    n: int
    g: int
    ipg: int
    opg: int
    src_hw: tuple[int, int]
    dst_hw: tuple[int, int]
    filt: tuple[int, int]
    w_cl: int
    nhwc: bool
    dtype: str
    ay: Axis
    ax: Axis

    @property
    def taps(self) -> int:
        return self.filt[0] * self.filt[1]

    @property
    def es(self) -> int:
        return ELEM_BYTES[self.dtype]


def make_pass(p: ProblemDescription) -> Pass:
    (hi, wi), (ho, wo) = p.in_size, p.out_size
    cpg, kpg = p.c // p.groups, p.k // p.groups
    bwd = int(p.direction == "B")
    if bwd:
        ipg, opg, src, dst = kpg, cpg, (ho, wo), (hi, wi)
    else:  # F, and W in the forward view (src = x, dst = dy)
        ipg, opg, src, dst = cpg, kpg, (hi, wi), (ho, wo)
    (fy, fx), (ph, pw), (sh, sw), (dh, dw) = p.filter_size, p.pads, p.strides, p.dilations
    return Pass(p.direction, bwd, p.n, p.groups, ipg, opg, src, dst, (fy, fx), int(p.layouts[1] == "NHWC"),
                p.layouts[0] == "NHWC", p.dtype, Axis(bwd, ph, sh, dh, fy), Axis(bwd, pw, sw, dw, fx))


def _vec_width(ps: Pass) -> int:
    """Elements per global load when staging NCHW rows: 16 bytes where the row width allows."""
    v = 16 // ps.es
    while v > 1 and ps.src_hw[1] % v:
        v //= 2
    return v


def _keys_ok(cfg, keys) -> bool:
    return isinstance(cfg, dict) and set(cfg) == set(keys) and all(
        isinstance(cfg[k], int) and not isinstance(cfg[k], bool) and cfg[k] > 0 for k in keys)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _blocks_per_sm(threads: int, regs: int, smem: int) -> int:
    warps = ceil_div(threads, 32)
    regs = max(32, ceil_div(regs, 8) * 8)
    by_regs = 65536 // (warps * 32 * regs)
    by_smem = (228 * 1024) // (smem + 1024)
    return max(0, min(32, 64 // warps, by_regs, by_smem))


def _overlap(*times: float) -> float:
    """Concurrent pipes: the slowest, plus a fifth of the others."""
    return max(times) + 0.2 * (sum(times) - max(times))


def _tail(blocks: int, resident: int) -> float:
    """Cost factor of the last partial wave."""
    if resident <= 0:
        return float("inf")
    waves = blocks / resident
    return ceil_div(blocks, resident) / waves if waves > 0 else 1.0


# -- NCHW forward / backward data / weights: shared-memory tiles ----------------------------------

NCHW_KEYS = ("VPT", "RPT", "NCX", "NRY", "PPB", "OPT")
NCHW_WRW_KEYS = NCHW_KEYS + ("IPT", "CIB")


class NchwGeom(NamedTuple):
    th: int
    tw: int
    rows: int         # src rows one thread reads
    cols: int         # src columns one column unit reads
    tsr: int
    vec: int
    nchk: int
    width: int        # staged floats per row before padding (the pitch is at least this)
    threads: int
    regs: int         # estimate
    wsmem: int        # bytes of shared memory besides the staged tile
    blocks: int       # F/B: the grid; W: (image, tile) work items per group block
    batch: int


def nchw_geom(ps: Pass, cfg, wrw: bool = False) -> NchwGeom:
    V, RPT, NCX, NRY, PPB, OPT = (cfg[k] for k in NCHW_KEYS)
    ay, ax = ps.ay, ps.ax
    ux = ax.unit
    th, tw = NRY * RPT, NCX * V * ux
    rb = RPT // ay.unit * ay.step
    rows, cols = ay.span(RPT), ax.span(ux)
    tsr = (NRY - 1) * rb + rows
    tsc = (NCX * V - 1) * ax.step + cols
    vec = _vec_width(ps)
    nchk = (tsc + 2 * vec - 2) // vec
    tiles = ceil_div(ps.dst_hw[0], th) * ceil_div(ps.dst_hw[1], tw)
    if wrw:
        ipt = cfg["IPT"]
        threads = NCX * NRY * cfg["CIB"] * PPB
        acc = OPT * ipt * ps.taps
        wsmem = 4 * (threads // 32) * acc
        regs = acc + OPT * RPT * V + 2 * V * cols + 10
        blocks = ps.n * tiles
    else:
        threads = NCX * NRY * (ps.opg // OPT) * PPB
        wsmem = 4 * PPB * ps.ipg * ps.opg * ps.taps
        regs = OPT * RPT * V * ux + OPT * ps.taps + V * cols
        blocks = ps.n * ceil_div(ps.g, PPB) * tiles
    stage_n = PPB * ps.ipg * tsr * nchk
    batch = min(ceil_div(stage_n, threads), max(1, 32 // vec))
    regs = 20 + max(regs, batch * vec + 8)      # staging and computing registers do not coexist
    return NchwGeom(th, tw, rows, cols, tsr, vec, nchk, nchk * vec, threads, regs, wsmem, blocks, batch)


def _pitch_range(width: int) -> range:
    lo = ceil_div(width, 4) * 4
    return range(lo, lo + 29, 4)


def nchw_smem(ps: Pass, cfg, ge: NchwGeom, pitch: int) -> int:
    return 4 * cfg["PPB"] * ps.ipg * ge.tsr * pitch + ge.wsmem


def nchw_pitch(ps: Pass, cfg, wrw: bool = False) -> int:
    """Row pitch (floats, a multiple of 4, fitting the shared-memory limit) with the fewest bank
    conflicts when a warp reads one footprint row: lane (cx, ry, plane) reads
    plane*TSR*pitch + ry*RB*pitch + cx*STEP."""
    ge = nchw_geom(ps, cfg, wrw)
    rb = cfg["RPT"] // ps.ay.unit * ps.ay.step
    ncx, nry = cfg["NCX"], cfg["NRY"]
    best = None
    for pitch in _pitch_range(ge.width):
        if nchw_smem(ps, cfg, ge, pitch) > SMEM_LIMIT:
            break
        cost = 0
        for w0 in range(0, ge.threads, 32):
            banks: dict[int, set[int]] = {}
            for tid in range(w0, min(w0 + 32, ge.threads)):
                cx, ry = tid % ncx, (tid // ncx) % nry
                plane = (tid // (ncx * nry * (cfg["CIB"] if wrw else ps.opg // cfg["OPT"]))) * ps.ipg
                addr = plane * ge.tsr * pitch + ry * rb * pitch + cx * ps.ax.step
                banks.setdefault(addr % 32, set()).add(addr)
            cost += max(len(a) for a in banks.values())
        if best is None or cost < best[0]:
            best = (cost, pitch)
    return best[1] if best else 0


def nchw_valid(ps: Pass, cfg, wrw: bool = False) -> bool:
    return _keys_ok(cfg, NCHW_WRW_KEYS if wrw else NCHW_KEYS) and _nchw_check(ps, cfg, wrw) is not None


def _nchw_check(ps: Pass, cfg, wrw: bool) -> NchwGeom | None:
    """The geometry of a config whose keys are right when it is valid, else None."""
    V, RPT, NCX, NRY, PPB, OPT = (cfg[k] for k in NCHW_KEYS)
    if ps.opg % OPT or RPT % ps.ay.unit or V > 8 or RPT > 16 or NCX > 64 or NRY > 64 or PPB > 16:
        return None
    if wrw and (ps.ipg % cfg["IPT"] or ((ps.opg // OPT) * (ps.ipg // cfg["IPT"])) % cfg["CIB"] or (NCX * NRY) % 32
                or OPT * cfg["IPT"] * ps.taps > 96 or OPT * RPT * V > 32):
        return None
    if not wrw and (OPT * RPT * V * ps.ax.unit > 64 or OPT * ps.taps > 64):
        return None
    ge = nchw_geom(ps, cfg, wrw)
    if not 32 <= ge.threads <= 512 or ge.regs > min(168, 65536 // ge.threads) or V * ge.cols > 64:
        return None
    if nchw_smem(ps, cfg, ge, ceil_div(ge.width, 4) * 4) > SMEM_LIMIT:
        return None
    # no tile more than twice as wide or tall as the image needs
    ok = ge.tw <= 2 * max(ps.dst_hw[1], 8) and ge.th <= 2 * max(ps.dst_hw[0], 4) and ge.blocks * ps.g < 2**31
    return ge if ok else None


def nchw_candidates(ps: Pass, wrw: bool = False):
    """The configuration space: per VPT, column-thread counts that cover the width in one tile or
    are powers of two; row and group-per-block counts for 32 to 512 threads; for W, the channel
    slices per thread (OPT x IPT) and how many of them a block takes (CIB)."""
    return (cfg for cfg, _ in _nchw_scan(ps, wrw))


def _nchw_scan(ps: Pass, wrw: bool):
    """(config, geometry) of every valid config, in ``nchw_candidates``' order."""
    units = ceil_div(ps.dst_hw[1], ps.ax.unit)
    splits = []
    for OPT in (d for d in _divisors(ps.opg) if d <= 8):
        if not wrw:
            splits.append((OPT, 0, 0))
            continue
        for IPT in (d for d in _divisors(ps.ipg) if d <= 8):
            splits += [(OPT, IPT, c) for c in _divisors(ps.opg // OPT * (ps.ipg // IPT))]
    for V in (1, 2, 4):
        for NCX in sorted({8, 16, 32} | ({ceil_div(units, V)} if ceil_div(units, V) <= 64 else set())):
            for RPT, NRY, PPB, (OPT, IPT, CIB) in itertools.product((1, 2, 4, 8), (1, 2, 4, 8, 16, 32), (1, 2, 4, 8),
                                                                    splits):
                if not 32 <= NCX * NRY * PPB * (CIB if wrw else ps.opg // OPT) <= 512:
                    continue
                cfg = {"VPT": V, "RPT": RPT, "NCX": NCX, "NRY": NRY, "PPB": PPB, "OPT": OPT}
                if wrw:
                    cfg.update(IPT=IPT, CIB=CIB)
                ge = _nchw_check(ps, cfg, wrw)
                if ge is not None:
                    yield cfg, ge


def nchw_cost(ps: Pass, cfg, wrw: bool = False, ge: NchwGeom | None = None) -> float:
    """Estimated seconds: DRAM and L2 traffic (DRAM efficiency from the bytes in flight per SM)
    against instruction issue, with the tail of the last wave (``ge``: the config's geometry, if known)."""
    ge = ge or nchw_geom(ps, cfg, wrw)
    V, RPT, NCX, NRY, PPB, OPT = (cfg[k] for k in NCHW_KEYS)
    es = ps.es
    pitch = ceil_div(ge.width, 4) * 4 + 4
    smem = nchw_smem(ps, cfg, ge, pitch)
    useful_src = ps.n * ps.g * ps.ipg * ps.src_hw[0] * ps.src_hw[1] * es
    useful_dst = ps.n * ps.g * ps.opg * ps.dst_hw[0] * ps.dst_hw[1] * es
    tile_bytes = PPB * ps.ipg * ge.tsr * ge.nchk * ge.vec * es
    gblocks = ceil_div(ps.g, PPB)
    ncb = (ps.opg // OPT) * (ps.ipg // cfg["IPT"]) // cfg["CIB"] if wrw else 1
    nitems = ge.blocks * gblocks * ncb if wrw else ge.blocks   # staged tiles in total
    staged = nitems * tile_bytes
    warps = ceil_div(ge.threads, 32)
    ipt = cfg["IPT"] if wrw else ps.ipg
    phases = ps.ay.unit * ps.ax.unit if ps.bwd else 1
    per_item = warps * (ipt * ge.rows * V * ge.cols                       # shared loads
                        + OPT * RPT * V * ps.ax.unit * ps.taps * ipt / phases  # FMAs
                        + OPT * RPT * V * ps.ax.unit)                     # global stores / dy loads
    per_item += ceil_div(PPB * ps.ipg * ge.tsr * ge.nchk, 32) * 8          # staging
    issue = nitems * per_item / (NUM_SM * 2.5 * 1.6e9)
    bps = _blocks_per_sm(ge.threads, ge.regs, smem)
    if bps == 0:
        return float("inf")
    blocks = gblocks * ncb * wrw_nchunk(ps) if wrw else ge.blocks
    occ = min(bps, blocks / NUM_SM)                     # blocks resident per SM
    inflight = 0.5 * occ * min(tile_bytes, ge.threads * ge.batch * ge.vec * es)
    eff = min(1.0, inflight / 32e3)
    mem = _overlap((useful_src + useful_dst) / (2.9e12 * eff), (staged + useful_dst) / 7e12)
    t = _overlap(mem, issue)
    resident = bps * NUM_SM
    t *= _tail(blocks, resident) if blocks < 8 * resident else 1.0
    if wrw:
        nchunk = wrw_nchunk(ps)
        t *= ceil_div(ge.blocks, nchunk) * nchunk / ge.blocks   # items per chunk: the fullest chunk
        t += 2e-6 * ceil_div(blocks, resident)                 # the blocks' reductions
    return t


# -- NHWC forward / backward data / weights: channel vectors in registers ------------------------

NHWC_KEYS = ("GPT", "NCS", "RPT", "VC", "NPX", "NPY")
NHWC_WRW_KEYS = NHWC_KEYS + ("OPT", "IPT")


class NhwcGeom(NamedTuple):
    si: int
    so: int
    rows: int
    cols: int
    used: int         # footprint pixels a thread loads
    threads: int
    wreg: int
    acc: int
    regs: int
    smem: int
    cblk: int
    th: int
    tw: int
    tiles: int
    ngs: int


def nhwc_geom(ps: Pass, cfg, wrw: bool = False) -> NhwcGeom:
    GPT, NCS, RPT, VC, NPX, NPY = (cfg[k] for k in NHWC_KEYS)
    opt, ipt = (cfg["OPT"], cfg["IPT"]) if wrw else (ps.opg, ps.ipg)
    si, so = GPT * ipt, GPT * opt
    rows, cols = ps.ay.span(RPT), ps.ax.span(VC)
    used = _used_count(ps.ay, RPT) * _used_count(ps.ax, VC)
    threads = NCS * NPX * NPY
    wpt = GPT * ps.opg * ps.ipg * ps.taps
    wreg = int(wpt <= 64) if not wrw else 0
    if wrw:
        acc = ps.taps * GPT * opt * ipt
        regs = 30 + acc + RPT * VC * so + cols * si
        lu = min(NCS, 32)
        red = max(1, min(acc, 4096 // max(1, (threads // 32) * lu)))
        smem = 4 * max(1, threads // 32) * lu * red
    else:
        acc = RPT * VC * so
        # 16-bit data: the packed words of a footprint row stay live next to their floats
        regs = 26 + acc + int(cols * si * (1.25 if ps.es == 2 else 1.0)) + (wpt if wreg else 0)
        smem = 4 * ps.taps * ps.opg * ps.ipg * NCS * GPT
    ngs = ps.g // GPT if ps.g % GPT == 0 else 0
    th, tw = NPY * RPT, NPX * VC
    tiles = ceil_div(ps.dst_hw[0], th) * ceil_div(ps.dst_hw[1], tw)
    return NhwcGeom(si, so, rows, cols, used, threads, wreg, acc, regs, smem, ceil_div(ngs, NCS), th, tw, tiles, ngs)


@functools.lru_cache(maxsize=None)
def _used_count(a: Axis, T: int) -> int:
    """Distinct footprint positions a run of T dst positions reads."""
    return len({a.off(j, t) for j in range(T) for t in range(a.f) if a.hit(j, t)})


def nhwc_valid(ps: Pass, cfg, wrw: bool = False) -> bool:
    return _keys_ok(cfg, NHWC_WRW_KEYS if wrw else NHWC_KEYS) and _nhwc_check(ps, cfg, wrw) is not None


def _nhwc_check(ps: Pass, cfg, wrw: bool) -> NhwcGeom | None:
    """The geometry of a config whose keys are right when it is valid, else None."""
    GPT, NCS, RPT, VC, NPX, NPY = (cfg[k] for k in NHWC_KEYS)
    if ps.g % GPT or RPT % ps.ay.unit or VC % ps.ax.unit or RPT > 8 or VC > 8 or GPT > 16 or NCS > 256:
        return None
    if wrw:
        opt, ipt = cfg["OPT"], cfg["IPT"]
        if ps.opg % opt or ps.ipg % ipt or (GPT > 1 and (opt != ps.opg or ipt != ps.ipg)):
            return None
    ge = nhwc_geom(ps, cfg, wrw)
    if max(ge.si, ge.so) * ps.es > 64 or not 32 <= ge.threads <= 512 or ge.smem > SMEM_LIMIT \
            or ge.regs > min(168, 65536 // ge.threads):
        return None
    if NCS > 1 and NCS >= 2 * ge.ngs:          # half of the block's slots or more would idle
        return None
    if wrw:
        if ge.threads % 32 or (NCS % 32 and 32 % NCS) or ge.acc > 96:
            return None
    elif ge.acc > 64 or ge.cols * ge.si > 96:
        return None
    blocks = ps.n * ge.cblk * ge.tiles
    ok = ge.tw <= 2 * max(ps.dst_hw[1], 4) and ge.th <= 2 * max(ps.dst_hw[0], 4) and blocks < 2**31
    return ge if ok else None


def nhwc_candidates(ps: Pass, wrw: bool = False):
    """The configuration space: group vectors of 16 bytes at most, the three largest useful slot
    counts, patches up to 4 x 8 and blocks of 64, 128 or 256 threads (32 where a single warp is all
    the channels give)."""
    return (cfg for cfg, _ in _nhwc_scan(ps, wrw))


def _nhwc_scan(ps: Pass, wrw: bool):
    """(config, geometry) of every valid config, in ``nhwc_candidates``' order."""
    gpts = [d for d in (1, 2, 4, 8, 16) if ps.g % d == 0 and d * max(ps.ipg, ps.opg) * ps.es <= 16] or [1]
    splits = [(o, i) for o in _divisors(ps.opg) for i in _divisors(ps.ipg)] if wrw else [(0, 0)]
    for GPT in gpts:
        ngs = ps.g // GPT
        ncss = [c for c in (1, 2, 4, 8, 16, 32, 64, 128) if c == 1 or c < 2 * ngs][-3:]
        for NCS, RPT, VC, (o, i) in itertools.product(ncss, (1, 2, 4), (1, 2, 4, 8), splits):
            for nt in (32, 64, 128, 256):
                if nt < NCS or (nt == 32 and NCS * 2 < 32 and ngs * 2 > NCS):
                    continue
                for NPX in (1, 2, 4, 8, 16):
                    NPY = nt // (NCS * NPX)
                    if NPY < 1 or NCS * NPX * NPY != nt:
                        continue
                    cfg = {"GPT": GPT, "NCS": NCS, "RPT": RPT, "VC": VC, "NPX": NPX, "NPY": NPY}
                    if wrw:
                        cfg.update(OPT=o, IPT=i)
                    ge = _nhwc_check(ps, cfg, wrw)
                    if ge is not None:
                        yield cfg, ge


def nhwc_cost(ps: Pass, cfg, wrw: bool = False, ge: NhwcGeom | None = None) -> float:
    ge = ge or nhwc_geom(ps, cfg, wrw)
    GPT, NCS, RPT, VC, NPX, NPY = (cfg[k] for k in NHWC_KEYS)
    es = ps.es
    useful_src = ps.n * ps.g * ps.ipg * ps.src_hw[0] * ps.src_hw[1] * es
    useful_dst = ps.n * ps.g * ps.opg * ps.dst_hw[0] * ps.dst_hw[1] * es
    nsplit = (ps.opg // cfg["OPT"]) * (ps.ipg // cfg["IPT"]) if wrw else 1
    items = ps.n * ge.tiles * ge.cblk * nsplit                # (image, tile, channel block) units
    threads_total = items * ge.threads
    # footprint of a tile, re-read from L2 where neighbouring tiles overlap
    tile_px = ps.ay.span(ge.th) * ps.ax.span(ge.tw)
    l2 = items * tile_px * NCS * ge.si * es + useful_dst
    l1 = threads_total * ge.used * ge.si * es
    phases = ps.ay.unit * ps.ax.unit if ps.bwd else 1
    fma = threads_total * RPT * VC * ps.taps * ge.so * (ge.si // GPT) / phases
    ldg = threads_total * (ge.used * ceil_div(ge.si * es, 16) + RPT * VC * ceil_div(ge.so * es, 16))
    issue = (fma + 2 * ldg) / 32 / (NUM_SM * 2.5 * 1.6e9)
    bps = _blocks_per_sm(ge.threads, ge.regs, ge.smem)
    if bps == 0:
        return float("inf")
    blocks = ge.cblk * nsplit * wrw_nchunk(ps) if wrw else ps.n * ge.tiles * ge.cblk
    warps = min(bps, blocks / NUM_SM) * ceil_div(ge.threads, 32)
    inflight = warps * 32 * ge.cols * ge.si * es         # about one footprint row per thread
    eff = min(1.0, inflight / 32e3)
    run = NCS * ge.si * es                               # contiguous bytes of one pixel in a warp
    sector = 1.0 if run >= 32 else 32 / run
    mem = _overlap((useful_src + useful_dst) * sector / (2.9e12 * eff), l2 / 7e12, l1 / (NUM_SM * 100 * 1.6e9))
    t = _overlap(mem, issue)
    resident = bps * NUM_SM
    t *= _tail(blocks, resident) if blocks < 8 * resident else 1.0
    if wrw:
        nchunk, per_chunk = wrw_nchunk(ps), ps.n * ge.tiles
        t *= ceil_div(per_chunk, nchunk) * nchunk / per_chunk
        t += 2e-6 * ceil_div(blocks, resident)
    return t


# -- backward weights: the chunk count (a function of the problem alone, so the workspace is) -----

def wrw_nchunk(ps: Pass) -> int:
    """Chunks of (image, tile) work items per channel block: about 16 blocks per SM for NCHW
    (one block per group and chunk), 4 for NHWC (a block spans many groups), and at most about
    four images per chunk."""
    ho, wo = ps.dst_hw
    if ps.nhwc:
        cunits = ceil_div(ps.g * max(ps.ipg, ps.opg) * ps.es, 512)
        target, cap = 4 * NUM_SM, ps.n * ceil_div(ho, 4) * ceil_div(wo, 8)
    else:
        cunits = ps.g
        target, cap = 16 * NUM_SM, ps.n * ceil_div(ho, 8) * ceil_div(wo, 32)
    return max(1, min(cap, 4096, max(target // cunits, ceil_div(ps.n, 4))))


def wrw_workspace(ps: Pass) -> int:
    return wrw_nchunk(ps) * ps.g * ps.opg * ps.ipg * ps.taps * 4


@functools.lru_cache(maxsize=512)
def ranked_configs(ps: Pass) -> tuple:
    """Valid configurations, best predicted first. Near-ties (the model is coarse) go to blocks of
    128 to 256 threads, then to tiles spanning the whole width, then to more work per thread."""
    wrw = ps.direction == "W"
    scan = _nhwc_scan if ps.nhwc else _nchw_scan
    cost = nhwc_cost if ps.nhwc else nchw_cost

    def key(i, c, ge):
        nt = ge.threads
        pref = (2 if nt < 128 else 1 if nt > 256 else 0) + (1 if ge.tw < ps.dst_hw[1] else 0)
        return (cost(ps, c, wrw, ge) * (1 + 0.01 * pref), -_work(c), i)

    scored = sorted((key(i, c, ge), c) for i, (c, ge) in enumerate(scan(ps, wrw)))
    return tuple(c for _, c in scored)


def _work(cfg) -> int:
    w = 1
    for k in ("VPT", "RPT", "VC", "GPT", "OPT", "IPT"):
        w *= cfg.get(k, 1)
    return w


# -- the solvers ---------------------------------------------------------------------------------

class DepthwiseBase(Solver):
    """Common applicability, configuration and solution building; subclasses set id, algorithm,
    directions and ``kind`` ("depthwise": groups == C; "grouped": small C/G and K/G)."""

    family = "depthwise"
    tunable = True
    kernel_files = KERNEL_FILES
    kind = "depthwise"

    def applicability(self, problem: ProblemDescription):
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        if p.spatial_dims != 2:
            return not_applicable("3D not supported (2D only)")
        if p.layouts[0] != p.layouts[2] or p.layouts[0] not in ("NCHW", "NHWC"):
            return not_applicable(f"layouts {'-'.join(p.layouts)} not supported (x and y both NCHW or both NHWC)")
        if p.layouts[1] not in ("NCHW", "NHWC"):
            return not_applicable(f"weights layout {p.layouts[1]} not supported")
        cpg, kpg = p.c // p.groups, p.k // p.groups
        if self.kind == "depthwise":
            if p.groups != p.c:
                return not_applicable(f"groups={p.groups} != C={p.c}: not depthwise")
            if kpg > MAX_MULTIPLIER:
                return not_applicable(f"channel multiplier K/C={kpg} exceeds {MAX_MULTIPLIER}")
        else:
            if p.groups == p.c:
                return not_applicable(f"groups=C={p.c}: depthwise, served by the ConvDepthwise solvers")
            if cpg > MAX_GROUP_CHANNELS or kpg > MAX_GROUP_CHANNELS:
                return not_applicable(f"channels per group C/G={cpg}, K/G={kpg}: more than {MAX_GROUP_CHANNELS}")
        if max(p.filter_size) > MAX_FILTER:
            return not_applicable(f"filter {'x'.join(map(str, p.filter_size))} larger than {MAX_FILTER}x{MAX_FILTER}")
        if max(p.strides) > MAX_STRIDE:
            return not_applicable(f"strides {'x'.join(map(str, p.strides))}: at most {MAX_STRIDE}")
        if max(p.dilations) > MAX_DILATION:
            return not_applicable(f"dilations {'x'.join(map(str, p.dilations))}: at most {MAX_DILATION}")
        ps = make_pass(p)
        if max(ps.src_hw + ps.dst_hw) >= 2**15:
            return not_applicable("spatial size of 32768 or more")
        if not any(True for _ in (nhwc_candidates if ps.nhwc else nchw_candidates)(ps, p.direction == "W")):
            return not_applicable("no tile configuration fits the shared-memory and register limits")
        return APPLICABLE

    # -- configurations ----------------------------------------------------------------------

    def default_config(self, problem: ProblemDescription):
        ranked = ranked_configs(make_pass(problem.as_conv()))
        return dict(ranked[0]) if ranked else None

    def config_space(self, problem: ProblemDescription):
        """The valid configurations, best predicted first, at most MAX_TUNE of them."""
        for cfg in ranked_configs(make_pass(problem.as_conv()))[:MAX_TUNE]:
            yield dict(cfg)

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        ps = make_pass(problem.as_conv())
        wrw = ps.direction == "W"
        return nhwc_valid(ps, config, wrw) if ps.nhwc else nchw_valid(ps, config, wrw)

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        p = problem.as_conv()
        return wrw_workspace(make_pass(p)) if p.direction == "W" else 0

    # -- solution ------------------------------------------------------------------------------

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        p = problem.as_conv()
        ps = make_pass(p)
        cfg = dict(config) if config else self.default_config(p)
        if cfg is None or not self.is_valid_config(p, cfg):
            raise ValueError(f"config={cfg}: not valid for {self.id} on {p.key()}")
        common = {
            "DATA_T": CUDA_TYPES[p.dtype], "INDEX_T": "long long" if needs_int64(p) else "int",
            "BWD": ps.bwd, "G_": ps.g, "IPG": ps.ipg, "OPG": ps.opg,
            "SRC_H": ps.src_hw[0], "SRC_W": ps.src_hw[1], "DST_H": ps.dst_hw[0], "DST_W": ps.dst_hw[1],
            "FY": ps.filt[0], "FX": ps.filt[1], "PH": ps.ay.p, "PW": ps.ax.p, "SH": ps.ay.s, "SW": ps.ax.s,
            "DH": ps.ay.d, "DW": ps.ax.d, "W_CL": ps.w_cl, "NB": ps.n,
        }
        if ps.direction == "W":
            return self._wrw_solution(ps, cfg, common)
        if ps.nhwc:
            ge = nhwc_geom(ps, cfg)
            grid = ps.n * ge.cblk * ge.tiles
            kinfo = KernelInfo(SRC_NHWC, "dw_nhwc", (grid, 1, 1), (ge.threads, 1, 1),
                               _m({**common, **cfg, "WREG": ge.wreg}))
        else:
            ge = nchw_geom(ps, cfg)
            kinfo = KernelInfo(SRC_NCHW, "dw_nchw", (ge.blocks, 1, 1), (ge.threads, 1, 1),
                               _m({**common, **cfg, "VEC": ge.vec, "PITCH": nchw_pitch(ps, cfg)}))

        def factory(kernels):
            launch = Launch(kernels[0], kinfo.grid, kinfo.block, (PTR, PTR, PTR))

            def invoker(a, b, out, workspace, stream):
                if (a | b | out) & 15:
                    _check_aligned(a, b, out)
                launch(stream, a, b, out)
            return with_recipe(invoker, [(launch, ((A, 0), (B, 0), (OUT, 0)))], (16, 16, 16, 1))

        return ConvSolution(self.id, [kinfo], 0, factory, cfg)

    def _wrw_solution(self, ps: Pass, cfg, common) -> ConvSolution:
        nchunk = wrw_nchunk(ps)
        if ps.nhwc:
            ge = nhwc_geom(ps, cfg, wrw=True)
            nsplit = (ps.opg // cfg["OPT"]) * (ps.ipg // cfg["IPT"])
            k1 = KernelInfo(SRC_WRW_NHWC, "dw_nhwc_wrw", (ge.cblk * nsplit * nchunk, 1, 1), (ge.threads, 1, 1),
                            _m({**common, **cfg, "NCHUNK": nchunk}))
        else:
            ge = nchw_geom(ps, cfg, wrw=True)
            ncb = (ps.opg // cfg["OPT"]) * (ps.ipg // cfg["IPT"]) // cfg["CIB"]
            k1 = KernelInfo(SRC_WRW_NCHW, "dw_nchw_wrw", (ceil_div(ps.g, cfg["PPB"]) * ncb * nchunk, 1, 1),
                            (ge.threads, 1, 1),
                            _m({**common, **cfg, "NCHUNK": nchunk, "VEC": ge.vec, "PITCH": nchw_pitch(ps, cfg, True)}))
        wtot = ps.g * ps.opg * ps.ipg * ps.taps
        k2 = KernelInfo(SRC_REDUCE, "dw_wrw_reduce", (ceil_div(wtot, 32), 1, 1), (32, 8, 1),
                        _m({"DATA_T": common["DATA_T"], "INDEX_T": common["INDEX_T"], "WTOT": wtot,
                            "NCHUNK": nchunk, "TAPS": ps.taps, "IPG": ps.ipg, "W_CL": ps.w_cl}))
        ws_bytes = wrw_workspace(ps)

        def factory(kernels):
            stage1 = Launch(kernels[0], k1.grid, k1.block, (PTR, PTR, PTR))
            stage2 = Launch(kernels[1], k2.grid, k2.block, (PTR, PTR))

            def invoker(a, b, out, workspace, stream):
                if (a | b | out | workspace) & 15 or not workspace:
                    _check_aligned(a, b, out, workspace)
                stage1(stream, a, b, workspace)
                stage2(stream, workspace, out)
            return with_recipe(invoker, [(stage1, ((A, 0), (B, 0), (WS, 0))), (stage2, ((WS, 0), (OUT, 0)))],
                               (16, 16, 16, 16), True)

        return ConvSolution(self.id, [k1, k2], ws_bytes, factory, cfg)


def _check_aligned(*pointers: int) -> None:
    """The kernels load and store up to 16 bytes at a time from each tensor's base."""
    for name, p in zip(("first input", "second input", "output", "workspace"), pointers):
        if not p:
            raise ValueError(f"{name}: no buffer given")
        if p % 16:
            raise ValueError(f"{name}: address {p:#x} is not 16-byte aligned (needed by the vector loads)")


def _m(d: dict) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in d.items())
