"""Generic builds: one cubin per (kernel, config, data type, layout, index width) for every problem size.

A specialised build (what ``Solver.get_solution`` describes) bakes the problem's sizes and strides
into the kernel as macros, so every new shape compiles new kernels (0.3-1 s each with NVRTC). A
generic build compiles the *same source* with those macros defined as ``MIOFIND_GP(i)``, a read of
slot ``i`` of a ``__constant__`` parameter block declared in ``kernels_src/generic_prelude.cuh``
(pre-included by NVRTC). The other macros (data type, tile config, layout flags, vector widths,
index type) stay compile-time, so a generic build is shared by every problem with the same ones.
Each problem loads its own module instance from that cubin (``cuModuleLoadData``, no compilation)
and writes its sizes into that instance's parameter block once, so launches cost what they cost
today and different problems never share a block.

Dividing by a run-time value is a full integer division where the specialised build multiplies by
a compile-time magic number; the divisors that split indices (``FASTDIV``: implicit GEMM's inner
loops, Winograd's and FFT's thread decoding, im2col's element decoding, the depthwise kernels'
block and work-item decoding) are therefore read as a small struct with their magic numbers, whose ``/`` and ``%``
operators (generic_prelude.cuh) multiply and shift, and which converts to ``int`` everywhere else:
the source text stays the same. A divisor the source derives from its sizes (``DERIVED``: im2col's
``P_ / VEC``, the depthwise tile counts) is a ``#ifndef``-guarded macro there, which a generic
build defines as its precomputed value. Other divisions in generic builds stay plain.

Which macros are read at run time is per kernel source (``RUNTIME``): a size used in ``#if``, in a
template argument, a ``constexpr`` or an array dimension stays compile-time (implicit GEMM backward
data's strides and output sizes, ``out_pos<P_SH, P_HO>``: one build per spatial geometry), except a
size an ``#if`` tests only modulo a compile-time value (``RESIDUE``). A compile-time use of a
run-time macro is a compile error, never a silent change. The solver's trust key and its specialised builds are untouched: this module only
rewrites a ConvSolution's KernelInfos.
"""

from __future__ import annotations

import ctypes
import dataclasses
import sys
import threading
from collections.abc import Callable

from .solver import ConvSolution, KernelInfo

__all__ = ["PRELUDE", "RUNTIME", "FASTDIV", "DERIVED", "GenericKernel", "generic_kernel", "generic_kernels", "has_generic",
           "load_generic", "build_generic_invoker", "generic_config"]

PRELUDE = "generic_prelude.cuh"
SLOTS = 64
INT32_MAX = 2**31 - 1

_IGEMM = ("P_N", "P_C", "P_K", "P_G", "P_DI", "P_HI", "P_WI", "P_DO", "P_HO", "P_WO", "P_Z", "P_Y", "P_X",
          "P_PD", "P_PH", "P_PW", "P_SD", "P_SH", "P_SW", "P_DD", "P_DH", "P_DW",
          "XS_N", "XS_C", "XS_D", "XS_H", "XS_W", "WS_K", "WS_C", "WS_Z", "WS_Y", "WS_X",
          "YS_N", "YS_C", "YS_D", "YS_H", "YS_W", "KCHUNK")

# Kernel source -> the macros its generic build reads at run time (slot i = position i). Sources
# not listed have no generic build; kernels whose macros include none of these (the naive
# reference, the implicit-GEMM transposes) are shape-free already and need none.
#
# implicit_gemm_bwd.cu keeps the strides and output sizes compile-time (template arguments of
# out_pos<P_SH, P_HO>): one build serves the problems of a spatial geometry at every batch size,
# channel count, group count and filter (a partial generic build).
# gemm_im2col.cu keeps the depth axis compile-time (DI, DO, Z_, PD, SD, DD): every 2D problem
# (depth 1) shares its builds, which fold that axis away as the specialised ones do; a 3D problem's
# build serves its depth geometry. The depthwise kernels keep the stencil (filter, pads, strides,
# dilations: Axis<> template arguments), the channels per group and the tile shape (array
# dimensions) compile-time; image sizes, groups, batch and chunk count are read at run time.
# Not listed: the FFT sizes (array dimensions) stay compile-time.
_FFT_PACK = ("NB_", "CH")
_IM2COL = ("C_", "K_", "G_", "HI", "WI", "HO", "WO", "Y_", "X_", "PH", "PW", "SH", "SW", "DH", "DW")
_DW = ("G_", "SRC_H", "SRC_W", "DST_H", "DST_W", "NB")
RUNTIME: dict[str, tuple[str, ...]] = {
    "implicit_gemm_fwd.cu": _IGEMM,
    "implicit_gemm_wrw.cu": _IGEMM,
    "implicit_gemm_bwd.cu": tuple(n for n in _IGEMM if n not in ("P_SD", "P_SH", "P_SW", "P_DO", "P_HO", "P_WO")),
    "direct_tiled_fwd.cu": ("C_", "K_", "G_", "HI", "WI", "HO", "WO", "PH", "PW"),
    "winograd_transforms.cu": ("N_", "CI", "CO", "G_", "HI", "WI", "HO", "PH", "PW", "TH", "TW", "P_"),
    "fft_pack.cu": _FFT_PACK,
    "fft_crop.cu": _FFT_PACK,
    "fft_mac.cu": ("NB_", "NI", "NJ", "G_", "A_CH", "O_CH", "W_KS", "W_CS", "W_TS"),
    "fft_wdft.cu": ("NB_", "G_", "W_KS", "W_CS", "W_TS", "KPG", "CPG"),
    "gemm_im2col.cu": _IM2COL,
    "depthwise_nchw.cu": _DW,
    "depthwise_nhwc.cu": _DW,
    "depthwise_wrw_nchw.cu": _DW + ("NCHUNK",),
    "depthwise_wrw_nhwc.cu": _DW + ("NCHUNK",),
    "depthwise_wrw_reduce.cu": ("WTOT", "NCHUNK"),
}

# Divisors of a source's 32-bit-index generic builds read with their fast-division magic numbers
# (MIOFIND_FD(i) in generic_prelude.cuh): those that split thread and GEMM indices (implicit GEMM's
# in its inner loops). Every dividend is a non-negative 32-bit index there (each source read for
# it; the depthwise backward-weights loop counter is 64-bit but below the item count, itself below
# a tensor's size); 64-bit-index builds divide plainly. Names of DERIVED are divisors the source
# derives from its sizes.
_IGEMM_DIVS = ("P_WO", "P_HO", "P_DO", "P_X", "P_Y", "P_G")
FASTDIV: dict[str, tuple[str, ...]] = {
    "implicit_gemm_fwd.cu": _IGEMM_DIVS,
    "implicit_gemm_wrw.cu": _IGEMM_DIVS,
    "implicit_gemm_bwd.cu": ("P_WI", "P_HI", "P_DI", "P_X", "P_Y", "P_G"),
    "winograd_transforms.cu": ("CI", "CO", "TW", "G_"),
    "fft_mac.cu": ("G_",),
    "gemm_im2col.cu": ("C_", "G_", "HI", "WI", "HO", "WO", "Y_", "X_", "SH", "SW",
                       "CPG", "T_", "Q_", "P_", "PV_", "CV_", "CT_", "XY_", "HWO_", "HWI_"),
    "depthwise_nchw.cu": ("TILES_X", "TILES_Y", "GB"),
    "depthwise_nhwc.cu": ("TILES_X", "TILES_Y", "CBLK"),
    "depthwise_wrw_nchw.cu": ("TILES_X", "TILES_Y", "TILES_XY", "GB"),
    "depthwise_wrw_nhwc.cu": ("TILES_X", "TILES_Y", "TILES_XY", "CBLK"),
}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _im2col_derived(m: dict[str, int]) -> dict[str, int]:
    cpg, taps, pixels = m["C_"] // m["G_"], m["Z_"] * m["Y_"] * m["X_"], m["DO"] * m["HO"] * m["WO"]
    out = {"CPG": cpg, "T_": taps, "Q_": m["DI"] * m["HI"] * m["WI"], "P_": pixels, "CT_": m["C_"] * taps,
           "XY_": m["X_"] * m["Y_"], "HWO_": m["HO"] * m["WO"], "HWI_": m["HI"] * m["WI"]}
    if m["CHANNELS_LAST"]:      # VEC divides the channels per group (NHWC) or the pixels (NCHW)
        out["CV_"] = cpg // m["VEC"]
    else:
        out["PV_"] = pixels // m["VEC"]
    return out


def _tiles(m: dict[str, int], tw: int, th: int, xy: bool) -> dict[str, int]:
    tx, ty = _cdiv(m["DST_W"], tw), _cdiv(m["DST_H"], th)
    return {"TILES_X": tx, "TILES_Y": ty, **({"TILES_XY": tx * ty} if xy else {})}


def _dw_nchw(m: dict[str, int], wrw: bool = False) -> dict[str, int]:
    unit = m["SW"] if m.get("BWD") else 1       # backward data: a column unit of SW phases
    return {**_tiles(m, m["NCX"] * m["VPT"] * unit, m["NRY"] * m["RPT"], wrw), "GB": _cdiv(m["G_"], m["PPB"])}


def _dw_nhwc(m: dict[str, int], wrw: bool = False) -> dict[str, int]:
    return {**_tiles(m, m["NPX"] * m["VC"], m["NPY"] * m["RPT"], wrw), "CBLK": _cdiv(m["G_"] // m["GPT"], m["NCS"])}


# Source -> its derived divisors' values from the kernel's integer macros: the #ifndef-guarded
# #defines of those names in the source, computed here (tests/core/test_generic.py compiles the
# source with each value static_assert-ed equal to its definition there).
DERIVED: dict[str, Callable[[dict[str, int]], dict[str, int]]] = {
    "gemm_im2col.cu": _im2col_derived,
    "depthwise_nchw.cu": _dw_nchw,
    "depthwise_nhwc.cu": _dw_nhwc,
    "depthwise_wrw_nchw.cu": lambda m: _dw_nchw(m, wrw=True),
    "depthwise_wrw_nhwc.cu": lambda m: _dw_nhwc(m, wrw=True),
}

# A size that an #if tests only as ``size % modulus`` (modulus a compile-time macro): read at run
# time as (residue + miofind_rv), so the #if sees the residue (generic_prelude.cuh) and one build
# serves every size of that residue. tests/core/test_generic.py pins that the source's #if lines
# use the size in no other way.
RESIDUE: dict[str, tuple[str, str]] = {"winograd_transforms.cu": ("WO", "WM")}

# Backward weights with split-K: SPLITK selects the kernel's epilogue in #if, so it stays
# compile-time; the generic build rounds the default split down to one of these, and takes its reduce's
# thread groups (the Hopper solver's RG, derived from the split) at 4, so that the rounded split alone names
# the binary.
GENERIC_SPLITS = (1, 4, 16, 64)


@dataclasses.dataclass(frozen=True)
class GenericKernel:
    """A generic build (``kinfo``: runtime macros replaced by parameter-block reads) and one
    problem's values for its parameter block, in slot order."""

    kinfo: KernelInfo
    values: tuple[int, ...]
    wide: bool
    divisors: tuple[int, ...] = ()     # the FASTDIV divisors' values, in slot order
    residue_rest: int | None = None    # RESIDUE: the size less its residue, for miofind_rv


def magic(d: int) -> tuple[int, int, int]:
    """(d, multiplier, shift) of the fast division by ``d`` (CUTLASS's FastDivmod):
    n // d == (n * multiplier >> 32) >> shift for 0 <= n < 2^31; multiplier 0 means d == 1."""
    if not 1 <= d < 2**31:
        raise ValueError(f"divisor {d}: expected 1 <= d < 2^31")
    if d == 1:
        return 1, 0, 0
    p = 31 + (d - 1).bit_length()          # 31 + ceil(log2 d)
    return d, -(-(1 << p) // d), p - 32


def _wide(k: KernelInfo) -> bool:
    return dict(k.macros).get("INDEX_T", "int") != "int"


def generic_kernel(k: KernelInfo) -> GenericKernel | None:
    """The generic build of a specialised KernelInfo with this problem's parameter values, or None
    when its source has no generic build (or it has no run-time macro: it is shape-free already)."""
    names = RUNTIME.get(k.source)
    if not names:
        return None
    wide = _wide(k)
    divs = () if wide else FASTDIV.get(k.source, ())
    slot = {n: i for i, n in enumerate(names)}
    dslot = {n: i for i, n in enumerate(divs)}
    values, dvalues = [0] * len(names), [1] * len(divs)
    macros, hit, rest = [], False, None
    res_name, res_mod = RESIDUE.get(k.source, (None, None))
    given = dict(k.macros)
    derived = ()
    if k.source in DERIVED:
        ints = {n: int(v) for n, v in k.macros if v.lstrip("-").isdigit()}
        derived = tuple((n, str(v)) for n, v in DERIVED[k.source](ints).items()
                        if n not in given and (n in dslot or n in slot))
    for name, v in k.macros + derived:
        if name == res_name and res_mod in given:
            r = int(v) % int(given[res_mod])
            rest = int(v) - r
            macros.append((name, f"({r}+miofind_rv)"))
            continue
        if name in dslot:
            dvalues[dslot[name]] = int(v)
            macros.append((name, f"MIOFIND_FD({dslot[name]})"))
        if name in slot:
            values[slot[name]] = int(v)
            hit = True
            if name not in dslot:
                macros.append((name, f"MIOFIND_GP({slot[name]})"))
        elif name not in dslot:
            macros.append((name, v))
    if not hit:
        return None
    if not wide and any(abs(v) > INT32_MAX for v in values):
        raise ValueError(f"{k.source}: a size exceeds the 32-bit parameter block of a 32-bit-index build")
    if any(not 1 <= d < 2**31 for d in dvalues):
        raise ValueError(f"{k.source}: a divisor outside [1, 2^31)")
    opts = tuple(k.options) + (f"--pre-include={PRELUDE}", f"-DMIOFIND_GP_SLOTS={len(names)}") \
        + ((f"-DMIOFIND_FD_SLOTS={len(divs)}",) if divs else ()) + (("-DMIOFIND_RV",) if rest is not None else ())
    return GenericKernel(dataclasses.replace(k, macros=tuple(macros), options=opts), tuple(values), wide,
                         tuple(dvalues), rest)


def generic_kernels(sol: ConvSolution) -> list[GenericKernel | None] | None:
    """Per kernel of ``sol`` its GenericKernel, or None for a shape-free kernel (compiled as is);
    None overall when some kernel is shape-specific and has no generic build (or none has one)."""
    out = []
    for k in sol.kernels:
        try:
            g = generic_kernel(k)
        except ValueError:      # a size too large for a 32-bit parameter block
            return None
        if g is None and k.source in RUNTIME:
            out.append(None)     # a kernel of a generic source that reads no size: as it is
        elif g is None and not _shape_free(k):
            return None
        else:
            out.append(g)
    return out if any(g is not None for g in out) else None


# Macros that never encode a problem's size: a kernel with only these is shared by every shape.
_SHAPE_FREE = {"DATA_T", "ACC_T", "INDEX_T", "WRW_BLOCK"}


def _shape_free(k: KernelInfo) -> bool:
    return all(name in _SHAPE_FREE for name, _ in k.macros)


def generic_config(solver, problem, config):
    """The config a generic build of ``solver`` runs for ``problem``: a given ``config`` as it is
    (a tuned config is measured as tuned); else the solver's default, with backward weights'
    split-K rounded down to a GENERIC_SPLITS value (and RG at 4) so that few binaries serve every shape."""
    if config is not None or not solver.tunable:
        return config
    config = solver.default_config(problem)
    if isinstance(config, dict) and "SPLITK" in config:
        config = dict(config, SPLITK=max(s for s in GENERIC_SPLITS if s <= max(1, config["SPLITK"])))
        if "RG" in config:
            config["RG"] = 4
    return config


def has_generic(solver, problem, config=None) -> bool:
    """Whether the solution of ``solver`` for ``problem`` has a generic build (CPU only, launches nothing)."""
    if not any(f in RUNTIME for f in getattr(solver, "kernel_files", ())):
        return False
    try:
        return generic_kernels(solver.get_solution(problem, generic_config(solver, problem, config))) is not None
    except Exception:
        return False


# -- loading: one module instance per (build, values) ------------------------------------------

class GenericFunction:
    """One kernel of a module instance, standing where a ``cupy.RawKernel`` stands for the
    invoker factories and ``launch.Launch`` (``.kernel.ptr``, ``max_dynamic_shared_size_bytes``,
    a ``(grid, block, args)`` call)."""

    def __init__(self, module, function) -> None:
        self.module = module          # keeps the module instance loaded
        self.kernel = function

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        from .cumodule import MAX_DYNAMIC_SHARED_SIZE_BYTES, get_attribute
        return get_attribute(self.kernel.ptr, MAX_DYNAMIC_SHARED_SIZE_BYTES)

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, nbytes: int) -> None:
        from .cumodule import MAX_DYNAMIC_SHARED_SIZE_BYTES, set_attribute
        set_attribute(self.kernel.ptr, MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)

    def __call__(self, grid, block, args, *, shared_mem: int = 0, stream=None):
        self.kernel(tuple(grid), tuple(block), args, shared_mem, stream)


_instances: dict[tuple, object] = {}
_lock = threading.Lock()


_copy_streams = threading.local()


def _copy_stream() -> int:
    """This thread's non-blocking stream on the current device (a raw handle, kept), for ``_write_global``."""
    from .device import runtime

    rt = runtime()
    dev = rt.getDevice()
    streams = getattr(_copy_streams, "by_device", None)
    if streams is None:
        streams = _copy_streams.by_device = {}
    s = streams.get(dev)
    if s is None:
        s = streams[dev] = rt.streamCreateWithFlags(rt.streamNonBlocking)
    return s


def _write_global(mod, name: str, value) -> None:
    """Copy the ctypes object ``value`` into the module's ``__constant__`` variable ``name``
    (``cuModuleGetGlobal`` gives its device address) and wait for that copy alone: on a non-blocking
    stream, so that it does not wait for the GPU work queued before it (a find's float64 reference,
    which the candidates' preparation overlaps) as a copy on the legacy default stream would."""
    from .device import runtime

    rt = runtime()
    dst = mod.get_global_var(name)
    dst = dst if isinstance(dst, int) else dst.ptr
    s = _copy_stream()
    rt.memcpyAsync(dst, ctypes.addressof(value), ctypes.sizeof(value), rt.memcpyHostToDevice, s)
    rt.streamSynchronize(s)


def _instance(gk: GenericKernel):
    """The module instance of ``gk``'s build holding ``gk.values``, loaded and written once per
    process and device."""
    from .compile import binary_key, cubin_for
    from .device import current_device, runtime

    arch = current_device().arch
    rt = runtime()
    dev = rt.getDevice()
    key = (binary_key(gk.kinfo, arch), gk.values, gk.divisors, gk.residue_rest, dev)
    mod = _instances.get(key)
    if mod is None:
        with _lock:
            mod = _instances.get(key)
            if mod is None:
                rt.setDevice(dev)       # cudaSetDevice: the primary context current in this thread
                if "cupy" in sys.modules:
                    from cupy.cuda import function

                    mod = function.Module()
                    mod.load(cubin_for(gk.kinfo, arch))
                else:                   # a PyTorch process that has not imported CuPy: the driver's module load
                    from .cumodule import DriverModule

                    mod = DriverModule(data=cubin_for(gk.kinfo, arch))
                ctype = ctypes.c_int64 if gk.wide else ctypes.c_int32
                block = (ctype * len(gk.values))(*gk.values)
                _write_global(mod, "miofind_gp", block)
                if gk.divisors:     # miofind_div {int d; unsigned mul, shr;} per divisor
                    fd = (ctypes.c_uint32 * (3 * len(gk.divisors)))(*(x for d in gk.divisors for x in magic(d)))
                    _write_global(mod, "miofind_fd", fd)
                if gk.residue_rest is not None:
                    rv = ctype(gk.residue_rest)
                    _write_global(mod, "miofind_rv", rv)
                _instances[key] = mod
    return mod


def load_generic(gk: GenericKernel) -> GenericFunction:
    """The kernel ``gk.kinfo.name`` of this problem's module instance (compiling the generic build
    into the binary cache only if it is not there yet)."""
    mod = _instance(gk)
    return GenericFunction(mod, mod.get_function(gk.kinfo.name))


def build_generic_invoker(sol: ConvSolution):
    """The invoker of ``sol`` running its generic builds (shape-free kernels compiled as they are);
    ValueError when ``sol`` has no generic build."""
    from .compile import compile_kernel

    gks = generic_kernels(sol)
    if gks is None:
        raise ValueError(f"{sol.solver_id}: no generic build")
    kernels = [load_generic(g) if g is not None else compile_kernel(k) for g, k in zip(gks, sol.kernels)]
    return sol.invoker_factory(kernels)


def clear() -> None:
    """Forget the loaded module instances (tests)."""
    with _lock:
        _instances.clear()
