"""A library call's kernel launches, read from a CUDA-graph capture, so that a recipe launches them directly.

cuBLASLt spends far more host time in ``cublasLtMatmul`` (argument checks, kernel parameter set-up) than a kernel
launch costs. For a planned matmul those launches are the same every call but for the matrices' addresses, so
``launches`` captures the call into a graph twice, on stand-in addresses with nothing run, reads each kernel
node's function, geometry and parameter buffer (``cuFuncGetParamInfo`` gives its layout), and finds each stand-in
in the buffer. The two captures use stand-ins that differ by a different amount per role: every byte that differs
between them must be one of the found addresses, so an address the library transformed (a tensor map, a pointer
difference) is refused rather than replayed wrong. Anything else a replay could not reproduce is refused too: a
node that is not a kernel, a launch attribute (clusters, cooperative launch), a parameter buffer above 4 KiB.
"""

from __future__ import annotations

import ctypes
import threading

from .launch import NotTraceable, role_of

__all__ = ["launches", "MAX_CELLS"]

MAX_CELLS = 512                 # a parameter buffer's 8-byte cells (4 KiB: CUDA's classic parameter limit)
_DELTA = 0x10000                # the second capture's stand-in of role r is the first's + (r + 1) * _DELTA

_CAPTURE_RELAXED = 2            # CU_STREAM_CAPTURE_MODE_RELAXED
_NODE_KERNEL = 0                # CU_GRAPH_NODE_TYPE_KERNEL
_ATTR_COOPERATIVE = 2           # CU_LAUNCH_ATTRIBUTE_COOPERATIVE
_ATTR_CLUSTER_DIMENSION = 4     # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
_PARAM_BUFFER_POINTER, _PARAM_BUFFER_SIZE = 1, 2


class _NodeParams(ctypes.Structure):      # CUDA_KERNEL_NODE_PARAMS_v2
    _fields_ = [("func", ctypes.c_void_p), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("smem", ctypes.c_uint), ("kernelParams", ctypes.c_void_p), ("extra", ctypes.c_void_p),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


_cuda = None
_streams: dict[int, int] = {}
_lock = threading.Lock()


def _lib():
    global _cuda
    if _cuda is None:
        _cuda = ctypes.CDLL("libcuda.so.1")
    return _cuda


def _ok(name: str, rc: int) -> None:
    if rc:
        raise NotTraceable(f"{name} returned CUresult {rc}")


def _capture_stream(dev: int) -> int:
    s = _streams.get(dev)
    if s is None:
        h = ctypes.c_void_p()
        _ok("cuStreamCreate", _lib().cuStreamCreate(ctypes.byref(h), 1))      # CU_STREAM_NON_BLOCKING
        s = _streams[dev] = h.value
    return s


def _edges(cu, graph, src, dst, n) -> int:
    # (graph, from, to, edge data, count), CUDA 12.3 on: the edge data (8 bytes each) is asked for, since a graph
    # with programmatic (PDL) edges refuses a query without it; a replay runs the nodes in order on one stream,
    # which orders them at least as strictly as any edge type
    fn = getattr(cu, "cuGraphGetEdges_v2", None)
    if fn is not None:
        return fn(graph, src, dst, (ctypes.c_uint64 * len(src))() if src is not None else None, n)
    return cu.cuGraphGetEdges(graph, src, dst, n)


def _nodes_in_order(cu, graph) -> list:
    n = ctypes.c_size_t(0)
    _ok("cuGraphGetNodes", cu.cuGraphGetNodes(graph, None, ctypes.byref(n)))
    nodes = (ctypes.c_void_p * max(1, n.value))()
    _ok("cuGraphGetNodes", cu.cuGraphGetNodes(graph, nodes, ctypes.byref(n)))
    nodes = list(nodes[:n.value])
    if len(nodes) <= 1:
        return nodes
    e = ctypes.c_size_t(0)
    _ok("cuGraphGetEdges", _edges(cu, graph, None, None, ctypes.byref(e)))
    src, dst = (ctypes.c_void_p * max(1, e.value))(), (ctypes.c_void_p * max(1, e.value))()
    _ok("cuGraphGetEdges", _edges(cu, graph, src, dst, ctypes.byref(e)))
    # a topological order: one stream runs the nodes one after another, which keeps every dependency
    indeg = {v: 0 for v in nodes}
    out: dict = {v: [] for v in nodes}
    for a, b in zip(src[:e.value], dst[:e.value]):
        out[a].append(b)
        indeg[b] += 1
    ready = [v for v in nodes if indeg[v] == 0]
    order = []
    while ready:
        v = ready.pop(0)
        order.append(v)
        for w in out[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    if len(order) != len(nodes):
        raise NotTraceable("a captured graph with a cycle")
    return order


def _node(cu, node) -> tuple:
    """(func, grid, block, smem, parameter buffer bytes) of a kernel node."""
    node = ctypes.c_void_p(node)
    t = ctypes.c_int(-1)
    _ok("cuGraphNodeGetType", cu.cuGraphNodeGetType(node, ctypes.byref(t)))
    if t.value != _NODE_KERNEL:
        raise NotTraceable(f"a captured graph node of type {t.value} (not a kernel)")
    p = _NodeParams()
    _ok("cuGraphKernelNodeGetParams_v2", cu.cuGraphKernelNodeGetParams_v2(node, ctypes.byref(p)))
    func = p.func
    if not func and p.kern:
        f = ctypes.c_void_p()
        _ok("cuKernelGetFunction", cu.cuKernelGetFunction(ctypes.byref(f), ctypes.c_void_p(p.kern)))
        func = f.value
    if not func:
        raise NotTraceable("a kernel node without a function")
    val = (ctypes.c_ubyte * 64)()
    for attr in (_ATTR_COOPERATIVE, _ATTR_CLUSTER_DIMENSION):
        ctypes.memset(val, 0, 64)
        _ok("cuGraphKernelNodeGetAttribute", cu.cuGraphKernelNodeGetAttribute(node, attr, val))
        words = [int.from_bytes(bytes(val[i:i + 4]), "little") for i in (0, 4, 8)]
        if attr == _ATTR_COOPERATIVE and words[0]:
            raise NotTraceable("a cooperative launch")
        if attr == _ATTR_CLUSTER_DIMENSION and any(w > 1 for w in words):
            raise NotTraceable(f"a cluster launch {tuple(words)}")
    if p.kernelParams:
        offs, off, size = [], ctypes.c_size_t(), ctypes.c_size_t()
        i = 0
        while cu.cuFuncGetParamInfo(ctypes.c_void_p(func), i, ctypes.byref(off), ctypes.byref(size)) == 0:
            offs.append((off.value, size.value))
            i += 1
        nbytes = max((o + s for o, s in offs), default=0)
        if nbytes > 8 * MAX_CELLS:
            raise NotTraceable(f"a parameter buffer of {nbytes} bytes")
        buf = bytearray(nbytes)
        ptrs = ctypes.cast(p.kernelParams, ctypes.POINTER(ctypes.c_void_p))
        for j, (o, s) in enumerate(offs):
            buf[o:o + s] = ctypes.string_at(ptrs[j], s)
    elif p.extra:
        ex = ctypes.cast(p.extra, ctypes.POINTER(ctypes.c_void_p))
        ptr = size = None
        j = 0
        while ex[j]:
            if ex[j] == _PARAM_BUFFER_POINTER:
                ptr = ex[j + 1]
            elif ex[j] == _PARAM_BUFFER_SIZE:
                size = ctypes.c_size_t.from_address(ex[j + 1]).value
            j += 2
        if ptr is None or size is None or size > 8 * MAX_CELLS:
            raise NotTraceable("a kernel node's extra parameters")
        buf = bytearray(ctypes.string_at(ptr, size))
    else:
        buf = bytearray()
    return func, tuple(p.grid), tuple(p.block), int(p.smem), bytes(buf)


def _capture(issue, dev: int, pointers: tuple[int, ...]) -> list[tuple]:
    cu = _lib()
    s = _capture_stream(dev)
    graph = ctypes.c_void_p()
    _ok("cuStreamBeginCapture", cu.cuStreamBeginCapture_v2(ctypes.c_void_p(s), _CAPTURE_RELAXED))
    try:
        issue(s, pointers)
    finally:
        rc = cu.cuStreamEndCapture(ctypes.c_void_p(s), ctypes.byref(graph))
    _ok("cuStreamEndCapture", rc)
    try:
        return [_node(cu, v) for v in _nodes_in_order(cu, graph)]
    finally:
        cu.cuGraphDestroy(graph)


def _moved(p: int) -> int:
    ro = role_of(p)
    return p if ro is None else p + (ro[0] + 1) * _DELTA


def launches(issue, pointers: tuple[int, ...], dev: int) -> list[tuple]:
    """The kernel launches of ``issue(stream, pointers)``, a library call on ``stream`` made during
    ``miofind.launch.trace`` (``pointers`` are its stand-in addresses, each a role plus an offset, or a real address
    that stays as it is): a list of ``(func, grid, block, shared_mem, nbytes, cells, slots)``, ``cells`` the
    parameter buffer as little-endian 8-byte ints, ``slots`` (cell, role, byte offset) of each address to write per
    call. NotTraceable where a replay could not reproduce the call."""
    with _lock:
        first = _capture(issue, dev, tuple(pointers))
        second = _capture(issue, dev, tuple(_moved(p) for p in pointers))
    if not first:
        raise NotTraceable("the call captured no kernel")
    if [k[:4] + (len(k[4]),) for k in first] != [k[:4] + (len(k[4]),) for k in second]:
        raise NotTraceable("the call's launches depend on its addresses")
    out = []
    for (func, grid, block, smem, b1), (_, _, _, _, b2) in zip(first, second):
        c1 = [int.from_bytes(b1[i:i + 8], "little") for i in range(0, len(b1), 8)]
        c2 = [int.from_bytes(b2[i:i + 8], "little") for i in range(0, len(b2), 8)]
        slots = []
        for i, (v1, v2) in enumerate(zip(c1, c2)):
            ro = role_of(v1)
            if ro is not None:
                r, off = ro
                if v2 != v1 + (r + 1) * _DELTA:
                    raise NotTraceable("an address the library transformed")
                slots.append((i, r, off))
            elif v1 != v2:
                raise NotTraceable("a parameter that depends on the addresses in another way")
        out.append((func, grid, block, smem, len(b1), c1, slots))
    return out
