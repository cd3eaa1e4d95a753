"""Tensor maps for the Hopper copy engine (TMA): ``cuTensorMapEncodeTiled`` and ``cuTensorMapEncodeIm2col``
of the driver API, called through ctypes, and a per-pointer cache of the encoded maps.

A tensor map describes one global tensor (its address, sizes, strides) and the box a
``cp.async.bulk.tensor`` instruction copies into shared memory; kernels take it by value as a
``__grid_constant__`` parameter of 128 bytes (``MAP_BYTES``). The map holds the tensor's address, so an
invoker needs one map per data pointer: ``MapCache`` encodes a map the first time it sees a pointer and
keeps it (a training loop's caching allocator hands the same addresses back step after step).

Elements outside the tensor read as zeros (``oobFill`` NONE), which is the convolution's zero padding in
im2col mode. Shared-memory boxes use the 128-byte swizzle of kernels_src/implicit_gemm_hopper.cuh (16-byte
chunk c of 128-byte row r at chunk c ^ (r % 8)), so a box's inner extent is 128 bytes; or, for the 32-deep 16-bit K
tiles and backward data's 32-wide filter boxes, the 64-byte swizzle (chunk c of 64-byte row r at chunk c ^ ((r / 2) %
4)) of 64-byte inner extents.
"""

from __future__ import annotations

import ctypes
import threading

MAP_BYTES = 128
# CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion (cuda.h)
DATA_TYPES = {"FP16": 6, "BF16": 9, "FP32": 7}
SWIZZLE_64B = 2
SWIZZLE_128B = 3
L2_PROMOTION_128B = 2
CORNER_RANGE_4D = (-128, 127)      # im2col bounding-box corners of a 4-D tensor (16-bit fields, PTX ISA 5.5.4.1)
OFFSET_RANGE_4D = (0, 255)         # im2col offsets of a 4-D tensor


# a spec's ``fields``: what cuTensorMapEncodeTiled (kind 0) or cuTensorMapEncodeIm2col (kind 1) takes besides the
# address, for a caller that encodes maps itself (miofind.torch's C++ path, with the same swizzle and promotion)
FIELDS = ("kind", "dtype", "rank", "dims", "strides", "box", "lower", "upper", "channels", "pixels",
          "element_strides", "swizzle", "l2_promotion")


class TensorMap(ctypes.Structure):
    """CUtensorMap: 128 opaque bytes, 64-byte aligned in the kernel's parameter space."""
    _fields_ = [("opaque", ctypes.c_uint64 * 16)]


_lib = None
_lib_lock = threading.Lock()


def _driver():
    """libcuda's two encode functions, typed (loaded on first use: CPU-only tools never need them)."""
    global _lib
    if _lib is None:
        with _lib_lock:
            if _lib is None:
                try:
                    lib = ctypes.CDLL("libcuda.so.1")
                except OSError as e:
                    raise RuntimeError(f"tensor maps need the NVIDIA driver (libcuda.so.1): {e}") from None
                u32, u64p, u32p, ip = ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64), \
                    ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_int)
                tiled = lib.cuTensorMapEncodeTiled
                tiled.restype = ctypes.c_int
                tiled.argtypes = [ctypes.POINTER(TensorMap), ctypes.c_int, u32, ctypes.c_void_p, u64p, u64p, u32p,
                                  u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
                im2col = lib.cuTensorMapEncodeIm2col
                im2col.restype = ctypes.c_int
                im2col.argtypes = [ctypes.POINTER(TensorMap), ctypes.c_int, u32, ctypes.c_void_p, u64p, u64p, ip, ip,
                                   u32, u32, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
                _lib = (tiled, im2col)
    return _lib


def _arr(ct, vals):
    return (ct * len(vals))(*vals)


class TiledSpec:
    """A tiled-mode map without its address: ``dims`` (innermost first, elements), ``strides`` (bytes of
    dims 1.., each a multiple of 16), ``box`` (elements per dim; the innermost box * element size is the
    swizzle's 128 bytes, or 64 with ``swizzle`` SWIZZLE_64B)."""

    def __init__(self, dtype: str, dims, strides, box, swizzle: int = SWIZZLE_128B) -> None:
        self.dtype = DATA_TYPES[dtype]
        self.rank = len(dims)
        self.args = (_arr(ctypes.c_uint64, dims), _arr(ctypes.c_uint64, strides), _arr(ctypes.c_uint32, box),
                     _arr(ctypes.c_uint32, [1] * len(dims)))
        self.swizzle = swizzle
        self.desc = f"tiled dims={list(dims)} strides={list(strides)} box={list(box)}" + \
            ("" if swizzle == SWIZZLE_128B else f" swizzle={swizzle}")
        # what a C++ caller passes to the same encode call (miofind.torch._fast): ``FIELDS``' order
        self.fields = (0, self.dtype, self.rank, [int(d) for d in dims], [int(s) for s in strides],
                       [int(b) for b in box], [], [], 0, 0, [1] * len(dims), swizzle, L2_PROMOTION_128B)

    def encode(self, ptr: int) -> TensorMap:
        m = TensorMap()
        dims, strides, box, estr = self.args
        rc = _driver()[0](ctypes.byref(m), self.dtype, self.rank, ptr, dims, strides, box, estr, 0, self.swizzle,
                          L2_PROMOTION_128B, 0)
        if rc:
            raise ValueError(f"cuTensorMapEncodeTiled failed (CUresult {rc}) for {self.desc} at {ptr:#x}")
        return m


class Im2colSpec:
    """An im2col-mode map of a channels-last 4-D tensor (C, W, H, N) without its address: the bounding box
    of filter-base positions ``lower``/``upper`` ([W, H] corners, relative to the tensor's edges),
    ``channels`` per pixel and ``pixels`` per copy, traversal ``steps`` (the convolution strides, [W, H]); the
    channels' bytes are the ``swizzle``'s width."""

    def __init__(self, dtype: str, dims, strides, lower, upper, channels: int, pixels: int, steps,
                 swizzle: int = SWIZZLE_128B) -> None:
        self.dtype = DATA_TYPES[dtype]
        self.args = (_arr(ctypes.c_uint64, dims), _arr(ctypes.c_uint64, strides), _arr(ctypes.c_int, lower),
                     _arr(ctypes.c_int, upper), _arr(ctypes.c_uint32, [1, *steps, 1]))
        self.channels, self.pixels, self.swizzle = channels, pixels, swizzle
        self.fields = (1, self.dtype, 4, [int(d) for d in dims], [int(s) for s in strides], [],
                       [int(v) for v in lower], [int(v) for v in upper], int(channels), int(pixels), [1, *steps, 1],
                       swizzle, L2_PROMOTION_128B)
        self.desc = (f"im2col dims={list(dims)} strides={list(strides)} corners={list(lower)}/{list(upper)} "
                     f"channels={channels} pixels={pixels} steps={list(steps)}" +
                     ("" if swizzle == SWIZZLE_128B else f" swizzle={swizzle}"))

    def encode(self, ptr: int) -> TensorMap:
        m = TensorMap()
        dims, strides, lower, upper, estr = self.args
        rc = _driver()[1](ctypes.byref(m), self.dtype, 4, ptr, dims, strides, lower, upper, self.channels,
                          self.pixels, estr, 0, self.swizzle, L2_PROMOTION_128B, 0)
        if rc:
            raise ValueError(f"cuTensorMapEncodeIm2col failed (CUresult {rc}) for {self.desc} at {ptr:#x}")
        return m


def im2col_corners(in_size, out_size, pads, strides) -> tuple[list[int], list[int]]:
    """([W, H] lower, [W, H] upper) corners of the filter-base positions of a 2-D convolution: bases run
    from -pad to (out - 1) * stride - pad, and the upper corner is that last base minus (in - 1)."""
    lower = [-pads[1], -pads[0]]
    upper = [(out_size[1] - 1) * strides[1] - pads[1] - (in_size[1] - 1),
             (out_size[0] - 1) * strides[0] - pads[0] - (in_size[0] - 1)]
    return lower, upper


def im2col_fits(in_size, out_size, pads, strides, filter_size, dilations) -> bool:
    """Whether a 2-D convolution's corners and filter offsets fit the 4-D im2col fields."""
    lower, upper = im2col_corners(in_size, out_size, pads, strides)
    lo, hi = CORNER_RANGE_4D
    offs = [(filter_size[1] - 1) * dilations[1], (filter_size[0] - 1) * dilations[0]]
    return all(lo <= v <= hi for v in lower + upper) and all(o <= OFFSET_RANGE_4D[1] for o in offs)


class MapCache:
    """Encoded maps of one spec by data pointer (at most ``limit``; emptied when full): ``cache(ptr)`` is
    (host address of the map, the map), ``Launch.with_maps``' argument; holding it keeps the map alive."""

    __slots__ = ("spec", "limit", "maps")

    def __init__(self, spec, limit: int = 64) -> None:
        # ``maps``: pointer -> entry, the same dict for the cache's life (``Launch.bind_maps`` reads it)
        self.spec, self.limit, self.maps = spec, limit, {}

    def __call__(self, ptr: int) -> tuple[int, TensorMap]:
        e = self.maps.get(ptr)
        if e is None:
            if len(self.maps) >= self.limit:
                self.maps.clear()
            m = self.spec.encode(ptr)
            e = self.maps[ptr] = (ctypes.addressof(m), m)
        return e
