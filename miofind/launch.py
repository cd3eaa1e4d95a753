"""Kernel launches with their arguments packed once.

An invoker runs thousands of times with the same sizes and only new data pointers, so a ``Launch``
packs the kernel's argument block once and per call only writes the pointer slots and calls the
driver. Where the native extension is built (``miofind._native``, and ``MIOFIND_NATIVE`` is not 0), a
call is one C function that copies the block, writes the pointers and calls ``cuLaunchKernel``; else
ctypes values in the layout ``cuLaunchKernel`` reads, written under a lock and launched through
CuPy's ``launchKernel``. Either is far cheaper than CuPy's ``RawKernel.__call__``, which re-inspects
every argument.

Arguments are given in kernel order: ``PTR`` for a device pointer passed at call time, ``MAP`` for a
by-value tensor map (``miofind.tma``) whose host address is passed at call time (``Launch.with_maps``),
or a numpy scalar (``np.int32``, ``np.int64``, ``np.uint64``, ``np.float32``, ``np.float64``) fixed for
every launch. Invokers use the protocol ``invoker(a, b, out, workspace, stream)`` with integer device
pointers (``workspace`` 0 when there is none) and a raw ``cudaStream_t`` handle (0: the legacy
default stream).
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading

import numpy as np

__all__ = ["PTR", "MAP", "Launch", "Launcher", "ptr", "cupy_stream", "native", "native_function", "cu_launch_kernel", "with_recipe", "A", "B",
           "trace", "trace_call", "mark_traceable", "NotTraceable", "NotYet", "TRACE_ALIGN",
           "OUT", "WS", "replayer", "replay_failed", "role_of", "trace_raw", "traced_steps"]

log = logging.getLogger(__name__)

def _launch_kernel():
    """libcuda's ``cuLaunchKernel`` as a ctypes function returning its CUresult (the Python path; CuPy's driver
    binding would import CuPy at its first call)."""
    from .cumodule import libcuda
    return libcuda().cuLaunchKernel


_native = None          # miofind._native, or False where it is not built or turned off
_cu_launch = None       # the address of libcuda's cuLaunchKernel
_pdl_fn = None          # the native PDL launch function's address, or 0 where there is none
_launch_ex = None       # libcuda's cuLaunchKernelEx through ctypes (the Python path), or False


def native():
    """The native extension ``miofind._native``, or None where it is not built or ``MIOFIND_NATIVE=0``
    (read once per process)."""
    global _native
    if _native is None:
        from . import env
        mod = False
        if env.native():
            try:
                from . import _native as mod
            except ImportError:
                mod = False
        _native = mod
    return _native or None


def native_function(fn) -> int:
    """The address of a ctypes foreign function (``native().caller``'s first argument)."""
    return ctypes.cast(fn, ctypes.c_void_p).value


def cu_launch_kernel() -> int:
    """The address of ``cuLaunchKernel`` in the driver (``libcuda.so.1``, which CuPy has loaded)."""
    global _cu_launch
    if _cu_launch is None:
        from .cumodule import libcuda
        _cu_launch = native_function(libcuda().cuLaunchKernel)
    return _cu_launch


def _driver_launch_ex():
    """libcuda's ``cuLaunchKernelEx`` as a ctypes function, or None where the driver lacks it."""
    global _launch_ex
    if _launch_ex is None:
        try:
            from .cumodule import libcuda
            f = libcuda().cuLaunchKernelEx         # absent from older drivers: not among libcuda()'s prototypes
            f.restype = ctypes.c_int
            f.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
            _launch_ex = f
        except (OSError, AttributeError):
            _launch_ex = False
    return _launch_ex or None


def pdl_launch_kernel() -> int:
    """The address of the native launch function of ``cuLaunchKernel``'s signature that launches through
    ``cuLaunchKernelEx`` as a programmatic dependent (``_native.pdl_launcher``), or 0 where the extension (or
    the driver) has none."""
    global _pdl_fn
    if _pdl_fn is None:
        nat, ex = native(), _driver_launch_ex()
        fn = 0
        if nat is not None and ex is not None and hasattr(nat, "pdl_launcher"):
            fn = nat.pdl_launcher(native_function(ex))
        _pdl_fn = fn
    return _pdl_fn


class _LaunchAttribute(ctypes.Structure):       # CUlaunchAttribute: an id, then a 64-byte union at offset 8
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int), ("rest", ctypes.c_char * 60)]


class _LaunchConfig(ctypes.Structure):          # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttribute)), ("nattrs", ctypes.c_uint)]


PROGRAMMATIC_STREAM_SERIALIZATION = 6           # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION


def _launch_failed(rc: int) -> None:
    """Raise CuPy's CUDADriverError for a launch's CUresult, as CuPy's own launch does."""
    from cupy_backends.cuda.api.driver import check_status
    check_status(rc)
    raise RuntimeError(f"cuLaunchKernel failed with CUresult {rc}")


class _Ptr:
    def __repr__(self) -> str:
        return "PTR"


PTR = _Ptr()


class _Map:
    def __repr__(self) -> str:
        return "MAP"


MAP = _Map()

_CTYPES = {np.dtype(np.int32): ctypes.c_int32, np.dtype(np.int64): ctypes.c_int64,
           np.dtype(np.uint32): ctypes.c_uint32, np.dtype(np.uint64): ctypes.c_uint64,
           np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double}


def ptr(a) -> int:
    """The device address of a CuPy array (``a.data.ptr``), a torch tensor (``data_ptr()``), an
    object with ``__cuda_array_interface__``, or an int; 0 for None."""
    if a is None:
        return 0
    if isinstance(a, int):
        return a
    data = getattr(a, "data", None)
    p = getattr(data, "ptr", None)
    if isinstance(p, int):
        return p
    dp = getattr(a, "data_ptr", None)
    if dp is not None:
        return dp()
    return a.__cuda_array_interface__["data"][0]


class Launch:
    """One kernel (a ``cupy.RawKernel``) with grid, block, dynamic shared memory and its argument
    block packed. ``launch(stream, *pointers)`` fills the ``PTR`` slots in order and launches on
    ``stream``; a failed launch raises CuPy's CUDADriverError.

    ``pdl``: launch it as the programmatic dependent of the stream's work before it (``cuLaunchKernelEx`` with
    programmatic stream serialization; ``MIOFIND_PDL=0`` turns it off): it may start once every block of the
    grid before has issued ``griddepcontrol.launch_dependents``. Only for a launch within a solution whose
    kernel either waits (``griddepcontrol.wait``) before it reads what the grid before wrote, or reads nothing
    of it and waits before it exits, and whose grid before is that solution's own (never its first launch)."""

    __slots__ = ("kernel", "grid", "block", "shared_mem", "pdl", "_fn", "_vals", "_slots", "_params", "_addr",
                 "_lock", "_launch", "_g", "_maps", "_fast", "_cfg")

    def __init__(self, kernel, grid, block, args, shared_mem: int = 0, pdl: bool = False) -> None:
        self.kernel = kernel
        self.grid = tuple(int(g) for g in grid)
        self.block = tuple(int(b) for b in block)
        self.shared_mem = int(shared_mem)
        self.pdl = bool(pdl)
        self._cfg = None
        self._fn = None
        vals, slots, maps = [], [], []
        for a in args:
            if a is MAP:                        # the parameter's address entry is set per call
                maps.append(len(vals))
                v = ctypes.c_uint64(0)          # placeholder until the first call
            elif a is PTR:
                v = ctypes.c_uint64(0)
                slots.append(v)
            else:
                try:
                    ct = _CTYPES[np.asarray(a).dtype]
                except KeyError:
                    raise TypeError(f"kernel argument {a!r}: expected PTR or a numpy scalar of "
                                    f"{', '.join(str(d) for d in _CTYPES)}") from None
                v = ct(a.item() if hasattr(a, "item") else a)
            vals.append(v)
        self._vals = vals
        self._slots = tuple(slots)
        self._maps = tuple(maps)
        self._params = (ctypes.c_void_p * max(1, len(vals)))(*[ctypes.addressof(v) for v in vals])
        self._addr = ctypes.addressof(self._params)
        # the driver copies the argument block at launch; the lock keeps another thread's pointers
        # out of it between the writes and the launch (the Python path only: the native one copies
        # the block per call)
        self._lock = threading.Lock()
        self._launch = None
        self._g = (*self.grid, *self.block)
        self._fast = None

    def function(self) -> int:
        """The CUfunction of the kernel for the current device (loaded on first use)."""
        fn = self._fn
        if fn is None:
            fn = self._fn = self.kernel.kernel.ptr
        return fn

    def packed(self) -> tuple[list[int], list[int], list[int]]:
        """(each parameter's bytes as a little-endian int, the PTR parameters' indices, the MAP
        parameters' indices): the block ``miofind._native.launcher`` packs."""
        slot_ids = {id(v) for v in self._slots}
        values = [int.from_bytes(bytes(v), "little") for v in self._vals]
        return (values, [i for i, v in enumerate(self._vals) if id(v) in slot_ids], list(self._maps))

    def dependent(self) -> bool:
        """Whether this launch goes as a programmatic dependent: ``pdl`` and ``MIOFIND_PDL`` on."""
        from . import env
        return self.pdl and env.pdl()

    def _bind(self):
        """The launch callable ``(stream, *map_addresses, *pointers) -> CUresult``: the native launcher
        where the extension is available, else the ctypes block and CuPy's launchKernel (``cuLaunchKernelEx``
        through ctypes for a programmatic dependent; a plain launch where the driver has no such call)."""
        nat = native()
        fn = self.function()
        dep = self.dependent()
        via = (pdl_launch_kernel() if dep else cu_launch_kernel()) if nat is not None else 0
        if via:
            values, slots, maps = self.packed()
            fast = nat.launcher(via, fn, self.grid, self.block, self.shared_mem, values, slots, maps)
        elif dep and _driver_launch_ex() is not None:
            attr = _LaunchAttribute(id=PROGRAMMATIC_STREAM_SERIALIZATION, value=1)
            cfg = _LaunchConfig((ctypes.c_uint * 3)(*self.grid), (ctypes.c_uint * 3)(*self.block), self.shared_mem,
                                None, ctypes.pointer(attr), 1)
            self._cfg = (cfg, attr)
            fast = self._python_launch_ex
        else:
            fast = self._python_launch
        self._fast = fast
        return fast

    def _write(self, args) -> None:
        """The call's map addresses and pointers into the ctypes block (under ``_lock``)."""
        nm = len(self._maps)
        params = self._params
        for i, a in zip(self._maps, args):
            params[i] = a
        for slot, p in zip(self._slots, args[nm:]):
            slot.value = p

    def _python_launch_ex(self, stream: int, *args: int) -> int:
        cfg = self._cfg[0]
        with self._lock:
            self._write(args)
            cfg.stream = stream or None
            return _launch_ex(ctypes.byref(cfg), self._fn, self._addr, None)

    def _python_launch(self, stream: int, *args: int) -> int:
        launch = self._launch
        if launch is None:
            launch = self._launch = _launch_kernel()
        g = self._g
        with self._lock:
            self._write(args)
            return launch(self._fn, g[0], g[1], g[2], g[3], g[4], g[5], self.shared_mem, stream or None, self._addr,
                          None)

    def __call__(self, stream: int, *pointers: int) -> None:
        if _tracer is not None and _tracer.mine():
            _tracer.steps.append(("launch", self, pointers))
            return
        rc = (self._fast or self._bind())(stream, *pointers)
        if rc:
            _launch_failed(rc)

    def with_maps(self, stream: int, maps, *pointers: int) -> None:
        """``__call__`` for a kernel with ``MAP`` arguments: ``maps`` are their 128-byte tensor maps in
        order, each as (host address, the object) (``tma.MapCache``'s entries); the driver copies them
        into the argument block at the launch (``maps`` holds the objects until then: a cache may drop
        an entry meanwhile)."""
        if _tracer is not None and _tracer.mine():
            raise NotTraceable("a launch with tensor maps")
        rc = (self._fast or self._bind())(stream, *[a[0] for a in maps], *pointers)
        if rc:
            _launch_failed(rc)

    def bind_maps(self, caches):
        """A launcher ``(stream, *pointers)`` for a kernel with ``MAP`` arguments whose i-th map is that of
        the i-th pointer: ``caches[i](pointer)`` (``tma.MapCache``)."""
        if len(caches) != 2:
            def run(stream: int, *pointers: int) -> None:
                self.with_maps(stream, [c(p) for c, p in zip(caches, pointers)], *pointers)
            return run
        # two maps (the Hopper kernels' x and w, or dy and x): their caches' dicts read in place, one call
        c0, c1 = caches
        m0, m1 = c0.maps, c1.maps

        def run2(stream: int, a: int, b: int, *rest: int) -> None:
            if _tracer is not None and _tracer.mine():
                raise NotTraceable("a launch with tensor maps")
            e0 = m0.get(a) or c0(a)
            e1 = m1.get(b) or c1(b)     # e0 and e1 hold the maps until the driver has copied them
            rc = (self._fast or self._bind())(stream, e0[0], e1[0], a, b, *rest)
            if rc:
                _launch_failed(rc)
        return run2


A, B, OUT, WS = 0, 1, 2, 3      # the roles of an invoker's pointers: invoker(a, b, out, workspace, stream)
BIAS = 4                        # and a fused forward's bias: invoker(a, b, out, workspace, stream, bias)


def with_recipe(invoker, steps, align=(1, 1, 1, 1), workspace: bool = False):
    """Mark ``invoker`` as exactly ``steps`` and return it: ``[(launch, ((role, byte offset), ...)[, maps]), ...]``
    in launch order, each ``PTR`` argument of each ``Launch`` named as a role of the invoker protocol (``A``,
    ``B``, ``OUT``, ``WS``, and ``BIAS`` for a fused forward's bias) plus an offset, and each ``MAP`` argument, in
    order, as ``(role, byte offset, spec)``: the tensor map (``miofind.tma`` ``TiledSpec``/``Im2colSpec``) of that
    role's address; ``align``: what the addresses of A, B, OUT and WS must be a multiple of (the invoker's own check
    raises otherwise; the bias is read by element); ``workspace``: whether it
    needs one. A caller that launches the packed blocks itself (miofind.torch's C++ path, ``miofind.torch._fast``)
    then runs the same launches, encoding the maps of its own pointers."""
    out = []
    for step in steps:
        launch, roles, maps = (*step, ())[:3]
        if len(maps) != len(launch._maps):
            raise ValueError(f"with_recipe: a launch with {len(launch._maps)} tensor-map argument(s) given "
                             f"{len(maps)} map role(s)")
        out.append((launch, tuple(roles), tuple(maps)))
    invoker.recipe = (tuple(out), tuple(int(a) for a in align), bool(workspace))
    return invoker


# -- traced recipes -------------------------------------------------------------------------------------------------
# An invoker marked ``traceable`` (``mark_traceable``) is one whose every call is the same sequence of ``Launch``
# calls (no tensor maps) and ``miofind.cublas.LtGemm`` calls, whose pointers are its own arguments plus offsets fixed
# by the problem, and whose scalars depend on those pointers only through their alignment. ``trace`` runs it once on
# stand-in addresses (far outside any real address space: role r at (0xA + r) << 52) with nothing launched, and
# reads each pointer back as (role, offset): the recipe a caller that launches by itself (miofind.torch's C++ path)
# replays on its own pointers, each of them 256-byte aligned as the stand-ins are.

_ROLE_SHIFT = 52
_ROLE_TAG = 0xA
TRACE_ALIGN = 256


def _stand_in(role: int) -> int:
    return (_ROLE_TAG + role) << _ROLE_SHIFT


def role_of(p: int):
    """(role, offset) of a traced pointer, or None for a pointer that is none of the invoker's arguments."""
    r = (p >> _ROLE_SHIFT) - _ROLE_TAG
    return (r, p & ((1 << _ROLE_SHIFT) - 1)) if 0 <= r < 4 else None


class NotTraceable(Exception):
    """An invoker's call did something a recipe cannot replay (a tensor-map launch, a cuBLAS call without a
    cuBLASLt plan)."""


class NotYet(NotTraceable):
    """Not traceable for now: a cuBLASLt matmul while the library sets itself up (``miofind.lt_bridge``); a trace
    after the set-up succeeds."""


class _Tracer:
    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.steps: list = []

    def mine(self) -> bool:
        return threading.get_ident() == self.thread


_tracer: _Tracer | None = None
_trace_lock = threading.Lock()


def mark_traceable(invoker):
    """Mark ``invoker`` as traceable (see above) and return it."""
    invoker.traceable = True
    return invoker


def trace(invoker, workspace: bool, stream: int) -> list[tuple]:
    """The calls of traceable ``invoker`` on ``stream``, nothing launched: a list of ``("launch", func, grid, block,
    shared_mem, values, slots)``, ``("call", func, values, slots)`` (a C function of 64-bit arguments, returning 0
    on success) and ``("raw", func, grid, block, shared_mem, nbytes, cells, slots)`` (a library's kernel launch, its
    parameters one buffer: ``trace_raw``), each ``slots`` a list of (parameter or cell index, role, byte offset) for
    the pointers the replay writes (pointers that are none of the invoker's arguments stay in ``values``).
    NotTraceable where it cannot be replayed."""
    global _tracer
    with _trace_lock:
        t = _Tracer()
        _tracer = t
        try:
            invoker(_stand_in(A), _stand_in(B), _stand_in(OUT), _stand_in(WS) if workspace else 0, stream)
        finally:
            _tracer = None
    out = []
    for step in t.steps:
        if step[0] == "launch":
            launch, pointers = step[1], step[2]
            values, slot_ids, maps = launch.packed()
            if maps:
                raise NotTraceable("a launch with tensor maps")
            if len(slot_ids) != len(pointers):
                raise NotTraceable("a launch given the wrong number of pointers")
            slots = _slots(values, zip(slot_ids, pointers))
            out.append(("launch", launch.function(), launch.grid, launch.block, launch.shared_mem, values, slots))
        elif step[0] == "raw":
            out.append(step)
        else:
            _, func, values, ptr_params = step
            values = list(values)
            out.append(("call", func, values, _slots(values, ptr_params)))
    return out


def _slots(values: list, ptr_params) -> list[tuple]:
    """(parameter index, role, offset) of each traced pointer ``ptr_params`` (index, pointer) that is one of the
    invoker's arguments; a pointer that is none of them is written into ``values`` as it is."""
    slots = []
    for i, p in ptr_params:
        ro = role_of(int(p))
        if ro is None:
            values[i] = int(p)
        else:
            slots.append((i, *ro))
    return slots


def trace_raw(func: int, grid, block, shared_mem: int, nbytes: int, cells, slots) -> None:
    """For a library's kernel launch read during ``trace`` on this thread (``miofind.capture.launches``): record it,
    its parameters one buffer of ``nbytes`` bytes as 8-byte ``cells``, ``slots`` (cell, role, offset) of the
    invoker's addresses in it."""
    _tracer.steps.append(("raw", func, tuple(grid), tuple(block), int(shared_mem), int(nbytes), list(cells),
                          list(slots)))


def tracing() -> bool:
    """Whether ``trace`` runs on this thread (an invoker then records its calls rather than making them)."""
    t = _tracer
    return t is not None and t.mine()


def trace_call(func: int, values, ptr_params) -> bool:
    """For a library call made during ``trace`` on this thread: record it (``func`` the C function's address,
    ``values`` its 64-bit arguments, ``ptr_params`` (index, pointer) of the pointers written per call) and return
    True; False when no trace runs here (the caller makes the call)."""
    t = _tracer
    if t is None or not t.mine():
        return False
    t.steps.append(("call", func, values, ptr_params))
    return True


def traced_steps(invoker, workspace: bool, stream: int) -> list[tuple]:
    """``trace``'s calls as ``(kind, func, grid, block, shared_mem, values, slots, nbytes)`` each, the form both
    replayers take (``miofind._native.recipe``, miofind.torch's ``_fast``): kind 0 a kernel launch, 1 a library
    call (grid and block 1, no shared memory), 2 a library's kernel from its parameter buffer of ``nbytes`` bytes
    (``values`` its 8-byte cells; ``nbytes`` 0 for the other kinds)."""
    out = []
    for st in trace(invoker, workspace, stream):
        if st[0] == "launch":
            _, func, grid, block, smem, values, slots = st
            out.append((0, func, grid, block, smem, values, slots, 0))
        elif st[0] == "raw":
            _, func, grid, block, smem, nbytes, cells, slots = st
            out.append((2, func, grid, block, smem, cells, slots, nbytes))
        else:
            _, func, values, slots = st
            out.append((1, func, (1, 1, 1), (1, 1, 1), 0, values, slots, 0))
    return out


def _native_steps(invoker, workspace: bool, stream: int):
    """(steps, align) of ``invoker`` as ``miofind._native.recipe`` takes them: its declared recipe (``with_recipe``)
    where it has one without tensor maps, else its trace on ``stream`` where it is traceable; None otherwise."""
    spec = getattr(invoker, "recipe", None)
    if spec is not None:
        steps, align, ws_needed = spec
        if ws_needed and not workspace:
            return None
        out = []
        for launch, roles, maps in steps:
            if maps or any(r == BIAS for r, _ in roles):     # a fused forward's: the native replay takes no bias
                return None
            values, slot_ids, _ = launch.packed()
            if len(slot_ids) != len(roles):
                return None
            kind = 3 if launch.dependent() and pdl_launch_kernel() else 0
            out.append((kind, launch.function(), launch.grid, launch.block, launch.shared_mem, values,
                        [(i, r, o) for i, (r, o) in zip(slot_ids, roles)], 0))
        return out, list(align)
    if not getattr(invoker, "traceable", False):
        return None
    return traced_steps(invoker, workspace, stream), [TRACE_ALIGN] * 4


def replayer(invoker, workspace: bool, stream: int):
    """(run, kinds): one native call that runs ``invoker``'s whole sequence of launches and library calls on
    ``stream``, ``run(stream, a, b, out, workspace) -> 0 | -1 | (step, status)`` (``miofind._native.recipe``; -1: an
    address misaligned for the recipe, nothing ran, call the invoker), and each step's kind (0 a launch, 1 a
    library call, 2 a library's kernel launched from its parameter buffer, 3 a launch as a programmatic dependent)
    for ``replay_failed``; or None where the
    native extension is absent or the invoker is neither a declared recipe without tensor maps nor traceable. A traced recipe's library calls
    carry ``stream`` (and its cuBLASLt workspace), so the run serves that stream alone. False (not None) while a
    cuBLASLt matmul of the invoker cannot be traced yet (``NotYet``): ask again later."""
    nat = native()
    if nat is None or not hasattr(nat, "recipe"):
        return None
    try:
        got = _native_steps(invoker, workspace, stream)
    except NotYet:
        return False
    except NotTraceable as e:
        log.info("launch: an invoker is not replayed natively (%s)", e)
        return None
    if not got or len(got[0]) > nat.MAX_STEPS:
        return None
    steps, align = got
    return nat.recipe(cu_launch_kernel(), steps, align), tuple(st[0] for st in steps)


def replay_failed(result, kinds) -> None:
    """Raise for a failed native replay: ``result`` is (step, status) of its first failed step (the steps before it
    ran), ``kinds`` the steps' kinds (``replayer``): a launch's CUresult as CuPy's CUDADriverError."""
    step, rc = result
    if kinds[step] != 1:
        _launch_failed(rc)
    else:
        raise RuntimeError(f"step {step} of a replayed solution, a library call, failed with status {rc}")


class Launcher:
    """Launches of one kernel whose arguments are device pointers followed by int32 scalars, and
    whose grid and scalars take few distinct values (e.g. the last batch chunk's): a packed
    ``Launch`` per (work size, scalars), made on first use. ``grid_of(work)`` gives the grid of a
    work size; the block is ``block``."""

    def __init__(self, kernel, grid_of, block=(256, 1, 1)) -> None:
        self.kernel = kernel
        self.grid_of = grid_of
        self.block = block
        self._cache: dict[tuple, Launch] = {}

    def __call__(self, stream: int, work: int, ptrs: tuple, scalars: tuple = ()) -> None:
        key = (work, scalars)
        hit = self._cache.get(key)
        if hit is None:
            spec = (*(PTR for _ in ptrs), *(np.int32(v) for v in scalars))
            hit = self._cache[key] = Launch(self.kernel, self.grid_of(work), self.block, spec)
        hit(stream, *ptrs)


_streams: dict[tuple[int, int], object] = {}


def cupy_stream(stream: int):
    """A context making the raw stream handle CuPy's current stream (for CuPy's kernel launches and
    its cuBLAS binding, which sets the current stream on every call). Cached per device and handle."""
    import cupy

    dev = cupy.cuda.runtime.getDevice()
    s = _streams.get((dev, stream))
    if s is None:
        s = _streams[(dev, stream)] = cupy.cuda.ExternalStream(stream, dev)
    return s


def scratch(nbytes: int, stream: int):
    """(owner, device address) of a new buffer of ``nbytes`` bytes made on the raw stream ``stream`` of the current
    device, kept alive by ``owner``: from CuPy's memory pool where CuPy is imported (or PyTorch is not), else
    from PyTorch's caching allocator, as a PyTorch process that has not imported CuPy has it (no second pool, and
    no CuPy import for a workspace)."""
    if "cupy" not in sys.modules and "torch" in sys.modules:
        import torch

        from .device import runtime

        dev = runtime().getDevice()
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=dev)):
            buf = torch.empty(nbytes, dtype=torch.uint8, device=dev)
        return buf, buf.data_ptr()
    import cupy

    with cupy_stream(stream):
        buf = cupy.empty(nbytes, dtype=cupy.uint8)
    return buf, buf.data.ptr
