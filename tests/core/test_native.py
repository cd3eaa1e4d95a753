"""The native hot path (miofind._native) without a GPU: fake cuLaunchKernel and library functions made
with ctypes receive what the launcher and the caller pass, and must receive what the pure-Python path
(ctypes block + CuPy's launchKernel) passes. CPU only; the GPU tests run every solver through it."""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np
import pytest

from miofind import launch as L

try:
    from miofind import _native
except ImportError:             # not built (no C compiler at install)
    _native = None

needs_native = pytest.mark.skipif(_native is None, reason="miofind._native is not built here (no C compiler at "
                                                          "install time); the Python path runs instead")

LAUNCH_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                            ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p))


def test_native_is_built_where_ci_installs():
    """CI installs with gcc present: the extension must be there (else every figure of the hot path is the
    Python one). Elsewhere a missing build is allowed and this says so."""
    if os.environ.get("CI") != "true":
        pytest.skip("outside CI a machine without a C compiler installs the pure-Python path")
    assert _native is not None, "miofind._native was not built by the install: is a C compiler missing?"
    assert _native.MAX_PARAMS >= 64


class _FakeKernel:
    """What Launch reads of a cupy.RawKernel: ``.kernel.ptr``, the CUfunction."""

    class kernel:           # noqa: N801
        ptr = 0xF00D


def _spec():
    """Every argument kind a solver passes: pointers between scalars of each width and a tensor map."""
    return (L.PTR, np.int32(-7), L.PTR, np.float32(1.5), np.int64(-(1 << 40)), np.uint64((1 << 63) + 5),
            np.float64(-2.25), L.MAP, np.uint32(0xFFFFFFFF), L.PTR)


def _read(params, spec, maps_seen):
    """The values the driver would read from ``params`` for ``spec``."""
    out = []
    for i, a in enumerate(spec):
        addr = params[i]
        if a is L.MAP:
            maps_seen.append(addr)
            out.append(("map", bytes((ctypes.c_ubyte * 16).from_address(addr))))
        elif a is L.PTR:
            out.append(ctypes.c_uint64.from_address(addr).value)
        else:
            ct = L._CTYPES[np.asarray(a).dtype]
            out.append(ct.from_address(addr).value)
    return out


class _Recorder:
    def __init__(self, spec, rc=0):
        self.spec, self.rc, self.calls, self.maps = spec, rc, [], []

        def fake(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            self.calls.append(((f, gx, gy, gz, bx, by, bz, smem, stream or 0, bool(extra)),
                               _read(params, self.spec, self.maps)))
            return self.rc
        self.fn = LAUNCH_T(fake)
        self.addr = ctypes.cast(self.fn, ctypes.c_void_p).value


@pytest.fixture
def paths(monkeypatch):
    """Run a Launch through the native launcher ('native') or the Python block ('python'), both into a
    recording fake driver."""
    def make(kind, spec, rc=0):
        rec = _Recorder(spec, rc)
        if kind == "native":
            monkeypatch.setattr(L, "_native", _native)
            monkeypatch.setattr(L, "_cu_launch", rec.addr)
        else:
            monkeypatch.setattr(L, "_native", False)

            def launch_kernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
                p = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
                rc = rec.fn(f, gx, gy, gz, bx, by, bz, smem, stream, p, None)
                if rc:
                    raise RuntimeError(f"driver {rc}")
            monkeypatch.setattr(L, "_launch_kernel", lambda: launch_kernel)
        return rec
    return make


@needs_native
def test_native_launch_passes_what_the_python_block_passes(paths):
    spec = _spec()
    maps = [(ctypes.create_string_buffer(bytes(range(i, i + 16)) * 8, 128)) for i in range(3)]
    got = {}
    for kind in ("native", "python"):
        rec = paths(kind, spec)
        lk = L.Launch(_FakeKernel, (5, 6, 7), (128, 2, 1), spec, shared_mem=4096)
        for j, m in enumerate(maps):
            lk.with_maps(0xABC + j, [(ctypes.addressof(m), m)], 0x1000 + j, 0x2000 + j, 0x3000 + j)
        got[kind] = rec.calls
        assert rec.maps == [ctypes.addressof(m) for m in maps]      # by address, not copied
    assert got["native"] == got["python"]
    (head, vals), = got["native"][:1]
    assert head == (0xF00D, 5, 6, 7, 128, 2, 1, 4096, 0xABC, False)
    assert vals[0] == 0x1000 and vals[2] == 0x2000 and vals[9] == 0x3000
    assert vals[1] == -7 and vals[3] == 1.5 and vals[4] == -(1 << 40) and vals[5] == (1 << 63) + 5
    assert vals[6] == -2.25 and vals[8] == 0xFFFFFFFF and vals[7][0] == "map"


@needs_native
def test_native_launch_plain_and_bound_maps(paths):
    spec = (L.PTR, L.MAP, L.PTR, np.int32(3))
    rec = paths("native", spec)
    lk = L.Launch(_FakeKernel, (1, 1, 1), (32, 1, 1), spec)
    bufs = {p: ctypes.create_string_buffer(128) for p in (0x10, 0x20)}

    class Cache:
        def __call__(self, p):
            return (ctypes.addressof(bufs[p]), bufs[p])
    run = lk.bind_maps([Cache()])
    run(9, 0x10, 0x99)
    run(9, 0x20, 0x98)
    assert [c[1][0] for c in rec.calls] == [0x10, 0x20] and [c[1][2] for c in rec.calls] == [0x99, 0x98]
    assert rec.maps == [ctypes.addressof(bufs[0x10]), ctypes.addressof(bufs[0x20])]


@needs_native
def test_native_launch_errors(paths, monkeypatch):
    rec = paths("native", (L.PTR,), rc=700)
    failed = []
    monkeypatch.setattr(L, "_launch_failed", failed.append)
    lk = L.Launch(_FakeKernel, (1, 1, 1), (32, 1, 1), (L.PTR,))
    lk(0, 0x40)
    assert failed == [700] and len(rec.calls) == 1
    fast = lk._fast
    with pytest.raises(TypeError, match="1 pointer"):
        fast(0, 1, 2)
    with pytest.raises(TypeError, match="expected an int"):
        fast(0, 1.5)
    with pytest.raises(TypeError, match="expected an int"):
        fast(None, 1)
    with pytest.raises(ValueError, match="grid and block"):
        _native.launcher(rec.addr, 1, (0, 1, 1), (1, 1, 1), 0, [0], [0], [])
    with pytest.raises(ValueError, match="out of range"):
        _native.launcher(rec.addr, 1, (1, 1, 1), (1, 1, 1), 0, [0], [1], [])
    with pytest.raises(ValueError, match="at most"):
        _native.launcher(rec.addr, 1, (1, 1, 1), (1, 1, 1), 0, [0] * (_native.MAX_PARAMS + 1), [], [])


@needs_native
def test_native_launch_from_many_threads(paths):
    """Each call copies the block: concurrent calls (the GIL released in the driver call) never see
    another call's pointers."""
    spec = (L.PTR, np.int32(1), L.PTR)
    rec = paths("native", spec)
    lk = L.Launch(_FakeKernel, (1, 1, 1), (32, 1, 1), spec)

    def worker(t):
        for i in range(300):
            v = (t << 20) | i
            lk(v, v + 1, v + 2)
    ts = [threading.Thread(target=worker, args=(t,)) for t in range(1, 9)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(rec.calls) == 8 * 300
    for head, vals in rec.calls:
        s = head[8]
        assert vals == [s + 1, 1, s + 2]


CALL16_T = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_uint64] * 16)
CALL3_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


@needs_native
def test_native_caller_arities_and_slots():
    seen = []
    f16 = CALL16_T(lambda *a: seen.append(a) or 0)
    call = _native.caller(ctypes.cast(f16, ctypes.c_void_p).value, list(range(100, 116)), (3, 5, 8, 10))
    assert call(1, 2, 3, 4) == 0
    exp = list(range(100, 116))
    exp[3], exp[5], exp[8], exp[10] = 1, 2, 3, 4
    assert list(seen[-1]) == exp
    # a function of 3 arguments, the first a 32-bit int (cufftExecR2C(handle, in, out))
    seen3 = []
    f3 = CALL3_T(lambda h, a, b: seen3.append((h, a, b)) or 7)
    call3 = _native.caller(ctypes.cast(f3, ctypes.c_void_p).value, [42, 0, 0], (1, 2))
    assert call3(0xDEAD0000, 0xBEEF0000) == 7
    assert seen3 == [(42, 0xDEAD0000, 0xBEEF0000)]
    with pytest.raises(TypeError, match="2 argument"):
        call3(1)
    with pytest.raises(ValueError):
        _native.caller(0, [1], ())
    # more slots than a call has arguments is refused, not written past the caller's slot table
    with pytest.raises(ValueError, match="at most"):
        _native.caller(ctypes.cast(f16, ctypes.c_void_p).value, list(range(16)), [0] * (_native.MAX_CALL_ARGS + 1))


def test_python_path_when_turned_off(monkeypatch):
    """MIOFIND_NATIVE=0 keeps the ctypes/CuPy path (the comparison the benchmark makes)."""
    monkeypatch.setenv("MIOFIND_NATIVE", "0")
    monkeypatch.setattr(L, "_native", None)
    assert L.native() is None
    monkeypatch.setenv("MIOFIND_NATIVE", "2")
    monkeypatch.setattr(L, "_native", None)
    with pytest.raises(ValueError, match="MIOFIND_NATIVE"):
        L.native()


# -- whole-solution replays (miofind._native.recipe) -------------------------------------------------------------

CALL4_T = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_uint64] * 4)


def _solution(lib_addr):
    """A traceable invoker of three launches and one library call between them (as an im2col GEMM or a Winograd
    solution is): pointers at offsets into its workspace, a scalar that depends on nothing, a pointer that is none
    of its arguments (a library's own buffer)."""
    l1 = L.Launch(_FakeKernel, (4, 1, 1), (128, 1, 1), (L.PTR, np.int32(5), L.PTR))
    l2 = L.Launch(_FakeKernel, (2, 3, 1), (64, 1, 1), (L.PTR, L.PTR, np.float32(0.5), L.PTR), shared_mem=512)
    l3 = L.Launch(_FakeKernel, (1, 1, 1), (32, 1, 1), (L.PTR,))
    own = 0x7000_0000

    def invoker(a, b, out, ws, stream):
        l1(stream, a, ws + 64)
        if not L.trace_call(lib_addr, [11, ws + 64, b, stream], [(1, ws + 64), (2, b)]):
            _LIB_CALLS.append((11, ws + 64, b, stream))
        l2(stream, ws + 64, b + 32, out)
        l3(stream, own)
    return L.mark_traceable(invoker)


_LIB_CALLS: list = []
_CELLS = {128: 3, 64: 4, 32: 1}     # each of _solution's launches, told apart by its block: its parameter count


class _CellRecorder:
    """A fake cuLaunchKernel recording each launch's head and its parameters' 8-byte cells (the float32 one as
    its bits)."""

    def __init__(self):
        self.calls, self.rc = [], 0

        def fake(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            cells = [ctypes.c_uint64.from_address(params[i]).value & (0xFFFFFFFF if (bx, i) == (64, 2) else ~0)
                     for i in range(_CELLS[bx])]
            self.calls.append(((f, gx, gy, gz, bx, by, bz, smem, stream or 0), cells))
            return self.rc
        self.fn = LAUNCH_T(fake)
        self.addr = ctypes.cast(self.fn, ctypes.c_void_p).value


@pytest.fixture
def cells(monkeypatch):
    rec = _CellRecorder()
    monkeypatch.setattr(L, "_native", _native)
    monkeypatch.setattr(L, "_cu_launch", rec.addr)
    return rec


@needs_native
def test_native_replay_runs_what_the_invoker_runs(cells):
    """A traced solution replayed by one native call passes the driver and the library exactly what the invoker's
    own calls pass, on new pointers; a misaligned address runs nothing (-1)."""
    replayed = []
    lib = CALL4_T(lambda *a: replayed.append(a) or 0)
    lib_addr = ctypes.cast(lib, ctypes.c_void_p).value
    rec = cells
    inv = _solution(lib_addr)
    run, kinds = L.replayer(inv, True, 0x55)
    assert kinds == (0, 1, 0, 0)
    a, b, out, ws = 0x1_0000_0000, 0x2_0000_0100, 0x3_0000_0000, 0x4_0000_0000
    _LIB_CALLS.clear()
    inv(a, b, out, ws, 0x55)
    direct = list(rec.calls)
    rec.calls.clear()
    assert run(0x55, a, b, out, ws) == 0
    assert rec.calls == direct
    # the cells each launch's parameters hold: pointers plus offsets, scalars as packed
    heads = [h for h, _ in rec.calls]
    assert heads[0][:8] == (0xF00D, 4, 1, 1, 128, 1, 1, 0) and heads[1][7] == 512
    got = [v for _, v in rec.calls]
    assert got[0] == [a, 5, ws + 64]
    assert got[1] == [ws + 64, b + 32, int.from_bytes(np.float32(0.5).tobytes(), "little"), out]
    assert got[2][0] == 0x7000_0000
    assert replayed == [(11, ws + 64, b, 0x55)] and _LIB_CALLS == [(11, ws + 64, b, 0x55)]
    # -1 for an address off the trace's alignment: nothing launched, nothing called
    rec.calls.clear()
    assert run(0x55, a + 4, b, out, ws) == -1 and not rec.calls and len(replayed) == 1


@needs_native
def test_native_replay_reports_the_failed_step(cells, monkeypatch):
    lib = CALL4_T(lambda *a: 13)
    rec = cells
    run, kinds = L.replayer(_solution(ctypes.cast(lib, ctypes.c_void_p).value), True, 0)
    assert run(0, 0, 0, 0, 0) == (1, 13) and len(rec.calls) == 1      # the launch before it ran, none after
    with pytest.raises(RuntimeError, match="step 1 .*library call.*13"):
        L.replay_failed((1, 13), kinds)
    failed = []
    monkeypatch.setattr(L, "_launch_failed", failed.append)
    rec.rc = 700
    assert run(0, 0, 0, 0, 0) == (0, 700)
    L.replay_failed((0, 700), kinds)
    assert failed == [700]


@needs_native
def test_native_replay_of_a_declared_recipe_and_refusals(paths):
    rec = paths("native", (L.PTR, L.PTR, L.PTR))
    lk = L.Launch(_FakeKernel, (1, 1, 1), (32, 1, 1), (L.PTR, np.int32(3), L.PTR, L.PTR))

    def invoker(a, b, out, ws, stream):
        lk(stream, a, b + 8, out)
    L.with_recipe(invoker, [(lk, ((L.A, 0), (L.B, 8), (L.OUT, 0)))], (16, 16, 16, 1))
    run, kinds = L.replayer(invoker, False, 0)
    assert kinds == (0,)
    assert run(3, 0x100, 0x200, 0x300, 0) == 0
    assert rec.calls[-1][1] == [0x100, 3, 0x208]
    assert run(3, 0x108, 0x200, 0x300, 0) == -1
    # not replayable: a plain invoker, a recipe needing a workspace it is not given, too few arguments
    assert L.replayer(lambda *a: None, False, 0) is None
    L.with_recipe(invoker, [(lk, ((L.A, 0), (L.B, 8), (L.OUT, 0)))], (1, 1, 1, 1), workspace=True)
    assert L.replayer(invoker, False, 0) is None
    with pytest.raises(TypeError, match="4 addresses"):
        run(0, 1, 2)
    with pytest.raises(ValueError, match="steps"):
        _native.recipe(rec.addr, [], (1, 1, 1, 1))
    with pytest.raises(ValueError, match="slot"):
        _native.recipe(rec.addr, [(0, 1, (1, 1, 1), (1, 1, 1), 0, [0], [(0, 4, 0)])], (1, 1, 1, 1))
    with pytest.raises(ValueError, match="alignment"):
        _native.recipe(rec.addr, [(0, 1, (1, 1, 1), (1, 1, 1), 0, [0], [])], (1, 0, 1, 1))


def test_no_replay_without_the_extension(monkeypatch):
    monkeypatch.setattr(L, "_native", False)
    assert L.replayer(L.mark_traceable(lambda *a: None), False, 0) is None


@needs_native
def test_native_replay_of_a_library_kernel_from_its_parameter_buffer(monkeypatch):
    """A kind-2 step (a library's kernel read from a graph capture, ``miofind.capture``) passes its parameters as one
    buffer (cuLaunchKernel's ``extra``: the buffer and its exact size), the role addresses written into their
    cells."""
    seen = []

    def fake(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        assert not params
        ptr, size_p = extra[1], extra[3]
        assert extra[0] == 1 and extra[2] == 2 and not extra[4]
        size = ctypes.c_size_t.from_address(size_p).value
        seen.append((f, gx, bx, smem, stream, size, ctypes.string_at(ptr, size)))
        return 0
    fn = LAUNCH_T(fake)
    cells = [0x1111, 0, 0x2222, 7]
    run = _native.recipe(ctypes.cast(fn, ctypes.c_void_p).value,
                         [(2, 0xBEEF, (3, 1, 1), (96, 1, 1), 1024, cells, [(1, L.B, 0x40), (3, L.OUT, 0)], 28)],
                         (1, 1, 1, 1))
    assert run(9, 0xA000, 0xB000, 0xC000, 0) == 0
    (f, gx, bx, smem, stream, size, buf), = seen
    assert (f, gx, bx, smem, stream, size) == (0xBEEF, 3, 96, 1024, 9, 28)
    want = b"".join(v.to_bytes(8, "little") for v in (0x1111, 0xB040, 0x2222, 0xC000))[:28]
    assert buf == want
    with pytest.raises(ValueError, match="bytes in"):
        _native.recipe(1, [(2, 1, (1, 1, 1), (1, 1, 1), 0, [0, 0], [], 3)], (1, 1, 1, 1))
    with pytest.raises(ValueError, match="nbytes"):
        _native.recipe(1, [(2, 1, (1, 1, 1), (1, 1, 1), 0, [0], [])], (1, 1, 1, 1))


def test_capture_finds_the_addresses_and_refuses_transformed_ones(monkeypatch):
    """``miofind.capture.launches`` on fake captures: the stand-in addresses are found in the parameter buffers and
    become slots; a buffer byte that changes between the two captures other than at a found address (an address
    the library transformed, e.g. into a tensor map) refuses the replay, as does a launch that changes."""
    from miofind import capture

    a, w = L._stand_in(L.A) + 0x80, L._stand_in(L.WS) + 0x1000

    def fake_capture(mode):
        def cap(issue, dev, ptrs):
            pa, pw = ptrs
            buf = (5).to_bytes(4, "little") + b"\0" * 4 + pa.to_bytes(8, "little") + (0x7777).to_bytes(8, "little")
            buf += pw.to_bytes(8, "little") + (9).to_bytes(4, "little")
            if mode == "transformed":
                buf += ((pa >> 4) & 0xFFFFFFFF).to_bytes(4, "little")
            grid = (pa & 0xFFFF0 if mode == "geometry" else 2, 1, 1)
            return [(0xF00, grid, (128, 1, 1), 0, buf)]
        return cap
    monkeypatch.setattr(capture, "_capture", fake_capture("plain"))
    (func, grid, block, smem, nbytes, cells, slots), = capture.launches(None, (a, w), 0)
    assert (func, grid, nbytes) == (0xF00, (2, 1, 1), 36)
    assert slots == [(1, L.A, 0x80), (3, L.WS, 0x1000)] and cells[0] == 5 and cells[2] == 0x7777 and cells[4] == 9
    for mode in ("transformed", "geometry"):
        monkeypatch.setattr(capture, "_capture", fake_capture(mode))
        with pytest.raises(L.NotTraceable):
            capture.launches(None, (a, w), 0)


# -- programmatic dependent launches (Launch(pdl=True)) ---------------------------------------------------------------

LAUNCH_EX_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class _ExRecorder:
    """A fake cuLaunchKernelEx: records the launch config (grid, block, shared memory, stream, attributes) and the
    parameters the driver would read."""

    def __init__(self, spec):
        self.spec, self.calls, self.maps = spec, [], []

        def fake(cfg, f, params, extra):
            c = L._LaunchConfig.from_address(cfg)
            params = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
            attrs = [(c.attrs[i].id, c.attrs[i].value) for i in range(c.nattrs)]
            self.calls.append(((f, *c.grid, *c.block, c.smem, c.stream or 0, bool(extra)), attrs,
                               _read(params, self.spec, self.maps)))
            return 0
        self.fn = LAUNCH_EX_T(fake)
        self.addr = ctypes.cast(self.fn, ctypes.c_void_p).value


@pytest.fixture
def pdl_paths(monkeypatch, paths):
    """A Launch's path as in ``paths``, with a recording fake cuLaunchKernelEx beside the fake cuLaunchKernel."""
    def make(kind, spec):
        rec = paths(kind, spec)
        ex = _ExRecorder(spec)
        monkeypatch.setattr(L, "_launch_ex", ex.fn)
        monkeypatch.setattr(L, "_pdl_fn", None)
        return rec, ex
    return make


@pytest.mark.parametrize("kind", ["native", "python"])
def test_pdl_launch_goes_through_launch_ex_with_the_attribute(pdl_paths, kind, monkeypatch):
    if kind == "native" and _native is None:
        pytest.skip("miofind._native is not built here")
    monkeypatch.delenv("MIOFIND_PDL", raising=False)
    spec = _spec()
    rec, ex = pdl_paths(kind, spec)
    m = ctypes.create_string_buffer(bytes(range(16)) * 8, 128)
    plain = L.Launch(_FakeKernel, (5, 6, 7), (128, 2, 1), spec, shared_mem=4096)
    dep = L.Launch(_FakeKernel, (5, 6, 7), (128, 2, 1), spec, shared_mem=4096, pdl=True)
    plain.with_maps(0xABC, [(ctypes.addressof(m), m)], 0x1000, 0x2000, 0x3000)
    dep.with_maps(0xABC, [(ctypes.addressof(m), m)], 0x1000, 0x2000, 0x3000)
    assert len(rec.calls) == 1 and len(ex.calls) == 1       # the plain launch through cuLaunchKernel, the other not
    (head, vals), (xhead, attrs, xvals) = rec.calls[0], ex.calls[0]
    assert xhead == head == (0xF00D, 5, 6, 7, 128, 2, 1, 4096, 0xABC, False)
    assert attrs == [(L.PROGRAMMATIC_STREAM_SERIALIZATION, 1)] and L.PROGRAMMATIC_STREAM_SERIALIZATION == 6
    assert xvals == vals and ex.maps == rec.maps == [ctypes.addressof(m)]


@pytest.mark.parametrize("kind", ["native", "python"])
def test_pdl_off_launches_plainly(pdl_paths, kind, monkeypatch):
    if kind == "native" and _native is None:
        pytest.skip("miofind._native is not built here")
    monkeypatch.setenv("MIOFIND_PDL", "0")
    rec, ex = pdl_paths(kind, (L.PTR,))
    lk = L.Launch(_FakeKernel, (1, 1, 1), (32, 1, 1), (L.PTR,), pdl=True)
    assert not lk.dependent()
    lk(7, 0x40)
    assert len(rec.calls) == 1 and ex.calls == []


def test_pdl_without_the_driver_call_launches_plainly(paths, monkeypatch):
    """A driver without cuLaunchKernelEx (before CUDA 12): the launch goes as a plain one, correct and ordered."""
    monkeypatch.delenv("MIOFIND_PDL", raising=False)
    rec = paths("python", (L.PTR,))
    monkeypatch.setattr(L, "_launch_ex", False)
    monkeypatch.setattr(L, "_pdl_fn", None)
    L.Launch(_FakeKernel, (1, 1, 1), (32, 1, 1), (L.PTR,), pdl=True)(7, 0x40)
    assert len(rec.calls) == 1 and rec.calls[0][1] == [0x40]


@needs_native
def test_native_replay_of_a_dependent_launch(pdl_paths, monkeypatch):
    """A declared recipe's pdl launch replays as step kind 3, through cuLaunchKernelEx; the first one plainly."""
    monkeypatch.delenv("MIOFIND_PDL", raising=False)
    rec, ex = pdl_paths("native", (L.PTR, L.PTR))
    first = L.Launch(_FakeKernel, (2, 1, 1), (64, 1, 1), (L.PTR, L.PTR))
    second = L.Launch(_FakeKernel, (3, 1, 1), (64, 1, 1), (L.PTR, L.PTR), pdl=True)

    def inv(a, b, out, workspace, stream):
        first(stream, a, workspace)
        second(stream, workspace, out)
    inv = L.with_recipe(inv, [(first, ((L.A, 0), (L.WS, 0))), (second, ((L.WS, 0), (L.OUT, 16)))], workspace=True)
    run, kinds = L.replayer(inv, True, 5)
    assert kinds == (0, 3)
    assert run(5, 0x1000, 0x2000, 0x3000, 0x4000) == 0
    assert [c[1] for c in rec.calls] == [[0x1000, 0x4000]]
    assert [(c[1], c[2]) for c in ex.calls] == [([(6, 1)], [0x4000, 0x3010])]
    assert ex.calls[0][0][:4] == (0xF00D, 3, 1, 1)
