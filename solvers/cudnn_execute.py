"""A cuDNN plan run through cuDNN's backend C API (``cudnn_graph.h``), so that native code can run it.

The frontend's execute is a Python call. A caller that replays a solution natively (miofind.torch's C++ path, a
prepared solution's recipe: ``miofind.launch.trace``) would have to come back to Python for every convolution that
a cuDNN plan serves, which a host-bound PyTorch step pays each time. Here the plan is built once more from what its
name says (engine id and knobs) on a backend graph of the same single convolution, the same tensors and the same
convolution descriptor, so it runs the same kernels. ``NativeRun`` fills, for one stream, the context of
``miofind._native``'s ``cudnn_run``, a C function that sets that stream on the device's handle of native runs, makes
the variant pack of the three pointers and the workspace and executes the plan: a library call a recipe replays with
no Python. A plan (``BackendPlan``) built on that handle serves the NativeRuns of every stream, so it compiles once
(cuDNN's runtime-compiled engines compile when a plan is built, 100-300 ms). Its engine's numerical notes are read
before it compiles (a problem's contract excludes some), and its behaviour notes (a caller may defer the engines
that compile).

``BackendPlan`` and ``NativeRun`` raise ``BackendPlanError`` where any step is refused (the caller keeps the
frontend's path). ``BackendPlan`` can also be called from Python (through ctypes; the tests compare it with the
frontend's execute).

``heuristic_configs`` asks cuDNN's heuristics through the same API (the plans a graph offers, with each engine's notes),
so that a find lists its cuDNN plans without the frontend's graph. Where ``miofind._native`` is built, the listing and
each plan build are one C call that releases the GIL (``cudnn_heuristics``, ``cudnn_plan_build``): a thread can list
and build a find's plans while the find's Python work runs (through ctypes, each of the ~50-100 calls would wait for
the GIL again, up to the 5 ms switch interval: ~1 s a listing in session-nov27f's call 2).
"""

from __future__ import annotations

import ctypes
import threading

from miofind import launch
from miofind.problem import ProblemDescription

# cudnnBackendDescriptorType_t
_TENSOR, _CONVOLUTION, _ENGINE, _ENGINECFG, _PLAN, _KNOB_CHOICE = 17, 1, 2, 3, 5, 7
_OPGRAPH, _VARIANT_PACK, _ENGINEHEUR = 15, 16, 4
_OP = {"F": 10, "W": 11, "B": 12}       # CONVOLUTION_FORWARD, _BACKWARD_FILTER, _BACKWARD_DATA
# cudnnBackendAttributeType_t
_T_HANDLE, _T_DATA_TYPE, _T_INT64, _T_FLOAT, _T_VOID_PTR, _T_CONV_MODE, _T_KNOB, _T_DESC = 0, 1, 3, 4, 6, 7, 9, 15
_T_HEUR_MODE = 8
# cudnnBackendHeurMode_t by the names cudnn_base.HEURISTIC_MODES uses
HEUR_MODES = {"INSTANT": 0, "B": 1, "FALLBACK": 2, "A": 3}
_KNOBS_MAX = 64         # more than cudnnBackendKnobType_t has members (CUDNN_KNOB_TYPE_COUNTS)
# cudnnDataType_t
DATA_TYPES = {"FP32": 0, "FP16": 2, "BF16": 9}
# cudnnBackendNumericalNote_t by the frontend's cudnn.numerical_note names (cudnn_base.excluded_notes)
NOTES = {"TENSOR_CORE": 0, "DOWN_CONVERT_INPUTS": 1, "REDUCED_PRECISION_REDUCTION": 2}
_ENGINE_NUMERICAL_NOTE, _T_NUMERICAL_NOTE, _NOTE_COUNT = 1303, 11, 32
# CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION
_ENGINE_BEHAVIOR_NOTE, _T_BEHAVIOR_NOTE, RUNTIME_COMPILATION = 1305, 19, 0
_CROSS_CORRELATION = 1
# operation attributes, in the invoker's argument order (a, b, out) and then alpha, beta, the conv descriptor:
# F (x, w) -> y, B (dy, w) -> dx, W (dy, x) -> dw
_OP_ATTRS = {"F": (704, 703, 705, 700, 701, 702), "B": (711, 709, 710, 706, 707, 708),
             "W": (717, 716, 715, 712, 713, 714)}
_ROLE_SPECS = {"F": ("x", "w", "y"), "B": ("y", "w", "x"), "W": ("y", "x", "w")}
ALIGNMENT = 16          # bytes every pointer must be aligned to (the tensors' CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT)

_lib = None
_lib_lock = threading.Lock()
# () -> the ctypes CDLL of the libcudnn the frontend loads, or None: set by cudnn_base (its search order)
loader = None


class BackendPlanError(RuntimeError):
    """The backend API refused a step (or is not there): the plan stays on the frontend's path."""


class ExcludedPlan(BackendPlanError):
    """The plan's engine carries a numerical note the problem's contract excludes (found before the plan is
    finalized, so nothing was compiled)."""


class RuntimeCompiled(BackendPlanError):
    """The plan's engine compiles its kernels when the plan is finalized, and the caller asked to leave such plans
    for later (found before the plan is finalized, so nothing was compiled)."""


def library():
    """The libcudnn the frontend loaded, with the backend entry points typed (BackendPlanError if none)."""
    global _lib
    if _lib is None:
        with _lib_lock:
            if _lib is None:
                lib = loader() if loader is not None else None
                if lib is None:
                    raise BackendPlanError("no libcudnn to load")
                vp, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
                try:
                    for name, args in (("cudnnBackendCreateDescriptor", (i32, ctypes.POINTER(vp))),
                                       ("cudnnBackendDestroyDescriptor", (vp,)),
                                       ("cudnnBackendFinalize", (vp,)),
                                       ("cudnnBackendSetAttribute", (vp, i32, i32, i64, vp)),
                                       ("cudnnBackendGetAttribute", (vp, i32, i32, i64, ctypes.POINTER(i64), vp)),
                                       ("cudnnBackendExecute", (vp, vp, vp)),
                                       ("cudnnSetStream", (vp, vp)),
                                       ("cudnnCreate", (ctypes.POINTER(vp),))):
                        f = getattr(lib, name)
                        f.argtypes, f.restype = args, i32
                    lib.cudnnGetLastErrorString.argtypes = (ctypes.c_char_p, ctypes.c_size_t)
                    lib.cudnnGetLastErrorString.restype = None
                except AttributeError as e:
                    raise BackendPlanError(f"libcudnn lacks the backend API ({e})") from e
                _lib = lib
    return _lib


def address(name: str) -> int:
    """The address of a libcudnn entry point (for the C++ path)."""
    return ctypes.cast(getattr(library(), name), ctypes.c_void_p).value or 0


def _last_error() -> str:
    """cuDNN's message for its last failing call ("" where it gives none)."""
    buf = ctypes.create_string_buffer(512)
    try:
        _lib.cudnnGetLastErrorString(buf, 512)
    except Exception:       # noqa: BLE001 - the status alone then
        pass
    return buf.value.decode(errors="replace").strip()


def _check(status: int, what: str) -> None:
    if status:
        raise BackendPlanError(f"{what}: cudnnStatus {status} {_last_error()}")


def unsupported(problem: ProblemDescription) -> str | None:
    """Why the backend path cannot build ``problem``'s plans (not a plain F, B or W convolution, or a data type
    not mapped), or None where it can. Launches nothing."""
    p = problem.as_conv()
    if p.fused or p.direction not in _OP:
        return f"{p.key()}: only a plain convolution's F, B or W plan runs here"
    if DATA_TYPES.get(p.dtype) is None:
        return f"{p.key()}: data type {p.dtype} not mapped"
    return None


def _i64(values) -> ctypes.Array:
    return (ctypes.c_int64 * len(values))(*values)


class _Backend:
    """Backend descriptors made on one raw ``cudnnHandle_t``, destroyed together (``close``)."""

    def __init__(self, handle: int):
        self._lib = library()
        self.handle = ctypes.c_void_p(handle)
        self._descs: list[ctypes.c_void_p] = []

    def _new(self, kind: int) -> ctypes.c_void_p:
        d = ctypes.c_void_p()
        _check(self._lib.cudnnBackendCreateDescriptor(kind, ctypes.byref(d)), f"create descriptor {kind}")
        self._descs.append(d)
        return d

    def _attr(self, d, name: int, kind: int, values, what: str) -> None:
        _check(self._lib.cudnnBackendSetAttribute(d, name, kind, len(values), ctypes.cast(values, ctypes.c_void_p)),
               f"set attribute {name} of {what}")

    def _get(self, d, name: int, kind: int, count: int, out, what: str) -> int:
        """Read ``count`` values of attribute ``name`` into ``out`` (a ctypes object or array; None: only how many
        there are); how many it gave."""
        got = ctypes.c_int64(0)
        _check(self._lib.cudnnBackendGetAttribute(d, name, kind, count, ctypes.byref(got),
                                                  None if out is None else ctypes.c_void_p(ctypes.addressof(out))),
               f"get attribute {name} of {what}")
        return int(got.value)

    def _finalize(self, d, what: str) -> None:
        _check(self._lib.cudnnBackendFinalize(d), f"finalize {what}")

    def _descs_array(self, *ds) -> ctypes.Array:
        return (ctypes.c_void_p * len(ds))(*[d.value for d in ds])

    def _engine_notes(self, eng, attr: int, kind: int) -> tuple[int, ...] | None:
        """The engine's notes of attribute ``attr`` (numerical or behaviour note values of type ``kind``), or None
        where cuDNN will not give them."""
        notes, count = (ctypes.c_int * _NOTE_COUNT)(), ctypes.c_int64(0)
        if self._lib.cudnnBackendGetAttribute(eng, attr, kind, _NOTE_COUNT, ctypes.byref(count), notes):
            return None
        return tuple(notes[:count.value])

    def _graph(self, p, specs, pre, post, dtype: int) -> ctypes.c_void_p:
        """The finalized operation graph of ``p``'s single convolution: tensors uid 1-3 in the invoker's order."""
        tensors = []
        for uid, role in enumerate(_ROLE_SPECS[p.direction], 1):
            s = specs[role]
            t = self._new(_TENSOR)
            self._attr(t, 901, _T_DATA_TYPE, (ctypes.c_int * 1)(dtype), role)
            self._attr(t, 902, _T_INT64, _i64(s.dim), role)
            self._attr(t, 903, _T_INT64, _i64(s.stride), role)
            self._attr(t, 906, _T_INT64, _i64([uid]), role)
            self._attr(t, 900, _T_INT64, _i64([ALIGNMENT]), role)
            self._finalize(t, f"tensor {role}")
            tensors.append(t)
        nsp = len(specs["x"].dim) - 2
        if not (len(p.strides) == len(p.dilations) == len(pre) == len(post) == nsp):
            raise BackendPlanError(f"{p.key()}: {nsp} spatial dims against strides {p.strides}")
        conv = self._new(_CONVOLUTION)
        self._attr(conv, 100, _T_DATA_TYPE, (ctypes.c_int * 1)(0), "conv")          # FP32 compute
        self._attr(conv, 101, _T_CONV_MODE, (ctypes.c_int * 1)(_CROSS_CORRELATION), "conv")
        self._attr(conv, 106, _T_INT64, _i64([nsp]), "conv")
        self._attr(conv, 102, _T_INT64, _i64(p.dilations), "conv")
        self._attr(conv, 103, _T_INT64, _i64(p.strides), "conv")
        self._attr(conv, 105, _T_INT64, _i64(pre), "conv")
        self._attr(conv, 104, _T_INT64, _i64(post), "conv")
        self._finalize(conv, "conv")
        a, b, out, alpha, beta, cdesc = _OP_ATTRS[p.direction]
        op = self._new(_OP[p.direction])
        for attr, t in zip((a, b, out), tensors):
            self._attr(op, attr, _T_DESC, self._descs_array(t), "operation")
        self._attr(op, cdesc, _T_DESC, self._descs_array(conv), "operation")
        self._attr(op, alpha, _T_FLOAT, (ctypes.c_float * 1)(1.0), "operation")
        self._attr(op, beta, _T_FLOAT, (ctypes.c_float * 1)(0.0), "operation")
        self._finalize(op, "operation")
        graph = self._new(_OPGRAPH)
        self._attr(graph, 800, _T_HANDLE, (ctypes.c_void_p * 1)(self.handle.value), "operation graph")
        self._attr(graph, 801, _T_DESC, self._descs_array(op), "operation graph")
        self._finalize(graph, "operation graph")
        return graph

    def close(self) -> None:
        for d in reversed(self._descs):
            if d.value:
                self._lib.cudnnBackendDestroyDescriptor(d)
        self._descs = []

    def __del__(self):
        try:
            self.close()
        except Exception:       # noqa: BLE001 - at interpreter exit the library may be gone
            pass


def heuristic_plans(problem: ProblemDescription, specs: dict, pre, post, handle: int,
                    modes: tuple[str, ...] = ("A", "FALLBACK")) -> list[str]:
    """The plan names (``engN_kK=V...``, as the frontend names them) of the engine configs cuDNN's heuristics
    offer for a plain convolution, mode after mode (``HEUR_MODES`` names) in each mode's order, as the frontend's
    ``create_execution_plans`` lists them (duplicates kept; a mode that fails is passed over): ``heuristic_configs``'
    names."""
    return [name for name, _, _ in heuristic_configs(problem, specs, pre, post, handle, modes)]


def heuristic_configs(problem: ProblemDescription, specs: dict, pre, post, handle: int,
                      modes: tuple[str, ...] = ("A", "FALLBACK")) -> list[tuple[str, tuple | None, tuple | None]]:
    """(plan name, the engine's numerical notes, its behaviour notes) of each engine config cuDNN's heuristics offer
    (``heuristic_plans``' order; a notes tuple None where cuDNN would not give it), through the backend API on
    ``handle``: in one C call that releases the GIL (``miofind._native.cudnn_heuristics``) where it is built, else
    through ctypes (each call then waits for the GIL again where other threads run Python). Nothing is built or
    compiled; BackendPlanError where every mode fails or a step is refused."""
    p = problem.as_conv()
    why = unsupported(p)
    if why is not None:
        raise BackendPlanError(why)
    nat = native_call("cudnn_heuristics")
    if nat is not None:
        return _native_heuristics(nat, p, specs, pre, post, handle, modes)
    h = _Backend(handle)
    try:
        graph = h._graph(p, specs, pre, post, DATA_TYPES[p.dtype])
        eng = h._new(_ENGINE)
        knobs = [h._new(_KNOB_CHOICE) for _ in range(_KNOBS_MAX)]
        knob_arr = h._descs_array(*knobs)
        names, failed = [], []
        for mode in modes:
            try:
                heur = h._new(_ENGINEHEUR)
                h._attr(heur, 201, _T_DESC, h._descs_array(graph), "heuristics")
                h._attr(heur, 200, _T_HEUR_MODE, (ctypes.c_int * 1)(HEUR_MODES[mode]), "heuristics")
                h._finalize(heur, f"heuristics mode {mode}")
                count = h._get(heur, 202, _T_DESC, 0, None, "heuristics results")
                cfgs = [h._new(_ENGINECFG) for _ in range(count)]
                got = h._get(heur, 202, _T_DESC, count, h._descs_array(*cfgs), "heuristics results") if count else 0
            except BackendPlanError as e:
                failed.append(f"mode {mode}: {e}")
                continue
            for cfg in cfgs[:got]:
                # the frontend's get_engine_tag: the engine's global index, then each knob choice as _k<type>=<value>
                h._get(cfg, 300, _T_DESC, 1, h._descs_array(eng), "engine config")
                index = ctypes.c_int64(0)
                h._get(eng, 1301, _T_INT64, 1, index, "engine")
                tag = [f"eng{index.value}"]
                for k in knobs[:h._get(cfg, 302, _T_DESC, _KNOBS_MAX, knob_arr, "engine config knobs")]:
                    kind, value = ctypes.c_int(0), ctypes.c_int64(0)
                    h._get(k, 600, _T_KNOB, 1, kind, "knob choice")
                    h._get(k, 601, _T_INT64, 1, value, "knob choice")
                    tag.append(f"_k{kind.value}={value.value}")
                names.append(("".join(tag), h._engine_notes(eng, _ENGINE_NUMERICAL_NOTE, _T_NUMERICAL_NOTE),
                              h._engine_notes(eng, _ENGINE_BEHAVIOR_NOTE, _T_BEHAVIOR_NOTE)))
        if not names and failed:
            raise BackendPlanError(f"{p.key()}: the heuristics offered nothing ({'; '.join(failed)})")
        return names
    finally:
        h.close()


# False: heuristic_configs and BackendPlan make their calls through ctypes even where miofind._native has
# cudnn_heuristics and cudnn_plan_build (tests, A/B)
native_calls = True


def native_call(name: str):
    """``miofind._native`` where it is built with the C function ``name`` and ``native_calls`` is on, else None (the
    caller makes the same calls through ctypes)."""
    if not native_calls:
        return None
    nat = launch.native()
    return nat if nat is not None and hasattr(nat, name) else None


def _entry_points() -> tuple[int, ...]:
    """The addresses miofind._native's cuDNN calls take: create, destroy, set, get, finalize."""
    return tuple(address(n) for n in ("cudnnBackendCreateDescriptor", "cudnnBackendDestroyDescriptor",
                                      "cudnnBackendSetAttribute", "cudnnBackendGetAttribute", "cudnnBackendFinalize"))


def _graph_args(p, specs, pre, post) -> tuple:
    """The operation-graph arguments miofind._native's cuDNN calls share (after the entry points and the handle): data
    type, operation kind and attributes, the three tensors' dims and strides in the invoker's order, and the
    convolution's dilations, strides and paddings."""
    roles = _ROLE_SPECS[p.direction]
    return (DATA_TYPES[p.dtype], _OP[p.direction], _OP_ATTRS[p.direction],
            tuple(tuple(specs[r].dim) for r in roles), tuple(tuple(specs[r].stride) for r in roles),
            (tuple(p.dilations), tuple(p.strides), tuple(pre), tuple(post)))


def _native_heuristics(nat, p, specs, pre, post, handle: int, modes) -> list[tuple]:
    """heuristic_configs through ``miofind._native.cudnn_heuristics``: the same calls in C, the GIL released once."""
    library()
    try:
        configs, statuses = nat.cudnn_heuristics(_entry_points(), handle, *_graph_args(p, specs, pre, post),
                                                 tuple(HEUR_MODES[m] for m in modes), ALIGNMENT)
    except (RuntimeError, ValueError) as e:
        raise BackendPlanError(f"{p.key()}: {e} {_last_error()}") from None
    if not configs and any(statuses):
        raise BackendPlanError(f"{p.key()}: the heuristics offered nothing (statuses {dict(zip(modes, statuses))})")
    return [("eng%d" % engine + "".join("_k%d=%d" % kv for kv in knobs), notes, behaviour)
            for engine, knobs, notes, behaviour in configs]


class BackendPlan(_Backend):
    """The execution plan ``name`` (``engN_kK=V...``: ``engine`` and its ``knobs``, {backend knob number: value}) of
    a single-convolution problem, built through the backend API on ``handle`` (a raw ``cudnnHandle_t``); ``specs``
    are cudnn_base's x, w, y tensor specs.
    ``workspace`` is its workspace bytes; calling it runs it on a stream with three device pointers in the
    invoker's order (F x, w -> y; B dy, w -> dx; W dy, x -> dw) and a workspace pointer."""

    def __init__(self, problem: ProblemDescription, specs: dict, pre, post, handle: int, name: str, engine: int,
                 knobs: dict, exclude: tuple[str, ...] = (), defer_rtc: bool = False):
        p = problem.as_conv()
        why = unsupported(p)
        if why is not None:
            raise BackendPlanError(why)
        dtype = DATA_TYPES[p.dtype]
        super().__init__(handle)
        lib = self._lib
        self.name = name
        nat = native_call("cudnn_plan_build")
        try:
            if nat is not None:
                self._build_native(nat, p, specs, pre, post, engine, knobs, exclude, defer_rtc)
            else:
                self._build(p, specs, pre, post, dtype, engine, knobs, exclude, defer_rtc)
        except BaseException:
            self.close()
            raise
        n = 3
        self._uids = _i64(range(1, n + 1))
        self._ptrs = (ctypes.c_void_p * n)()
        self._ws = ctypes.c_void_p(0)
        self._create, self._set, self._fin = lib.cudnnBackendCreateDescriptor, lib.cudnnBackendSetAttribute, \
            lib.cudnnBackendFinalize
        self._exec, self._destroy, self._stream = lib.cudnnBackendExecute, lib.cudnnBackendDestroyDescriptor, \
            lib.cudnnSetStream

    def _build_native(self, nat, p, specs, pre, post, engine, knobs, exclude=(), defer_rtc=False) -> None:
        """``_build`` in one C call with the GIL released (``miofind._native.cudnn_plan_build``): a thread building a
        find's plans does not wait for the GIL at each of its ~50 backend calls while the find's Python work runs."""
        try:
            got = nat.cudnn_plan_build(_entry_points(), self.handle.value, *_graph_args(p, specs, pre, post),
                                       ALIGNMENT, engine, tuple(knobs.items()), tuple(NOTES[n] for n in exclude),
                                       defer_rtc)
        except (RuntimeError, ValueError) as e:
            raise BackendPlanError(f"plan {self.name}: {e} {_last_error()}") from None
        if got[0] == 1:
            raise ExcludedPlan(f"plan {self.name} carries numerical note(s) "
                               f"{[n for n in exclude if NOTES[n] in got[1]]}")
        if got[0] == 2:
            self.behavior = got[1]
            raise RuntimeCompiled(f"plan {self.name}: engine {engine} compiles its kernels when the plan is built")
        _, plan, ws, self.behavior, descs = got
        self._descs = [ctypes.c_void_p(d) for d in descs]
        self.plan, self.workspace = ctypes.c_void_p(plan), int(ws)

    def _build(self, p, specs, pre, post, dtype, engine, knobs, exclude=(), defer_rtc=False) -> None:
        graph = self._graph(p, specs, pre, post, dtype)
        eng = self._new(_ENGINE)
        self._attr(eng, 1300, _T_DESC, self._descs_array(graph), "engine")
        self._attr(eng, 1301, _T_INT64, _i64([engine]), "engine")
        self._finalize(eng, f"engine {engine}")
        if exclude:
            # the frontend's deselect_numeric_notes, asked of the engine before the plan compiles anything
            notes = self._engine_notes(eng, _ENGINE_NUMERICAL_NOTE, _T_NUMERICAL_NOTE)
            if notes is None:
                raise BackendPlanError(f"plan {self.name}: engine {engine}'s numerical notes cannot be read")
            carried = [n for n in exclude if NOTES[n] in notes]
            if carried:
                raise ExcludedPlan(f"plan {self.name} carries numerical note(s) {carried}")
        self.behavior = self._engine_notes(eng, _ENGINE_BEHAVIOR_NOTE, _T_BEHAVIOR_NOTE) or ()
        if defer_rtc and RUNTIME_COMPILATION in self.behavior:
            raise RuntimeCompiled(f"plan {self.name}: engine {engine} compiles its kernels when the plan is built")
        choices = []
        for k, v in knobs.items():
            c = self._new(_KNOB_CHOICE)
            self._attr(c, 600, _T_KNOB, (ctypes.c_int * 1)(k), "knob")
            self._attr(c, 601, _T_INT64, _i64([v]), "knob")
            self._finalize(c, f"knob {k}={v}")
            choices.append(c)
        cfg = self._new(_ENGINECFG)
        self._attr(cfg, 300, _T_DESC, self._descs_array(eng), "engine config")
        if choices:
            self._attr(cfg, 302, _T_DESC, self._descs_array(*choices), "engine config")
        self._finalize(cfg, "engine config")
        plan = self._new(_PLAN)
        self._attr(plan, 400, _T_HANDLE, (ctypes.c_void_p * 1)(self.handle.value), "plan")
        self._attr(plan, 401, _T_DESC, self._descs_array(cfg), "plan")
        self._finalize(plan, f"plan {self.name}")
        ws, count = ctypes.c_int64(0), ctypes.c_int64(0)
        _check(self._lib.cudnnBackendGetAttribute(plan, 402, _T_INT64, 1, ctypes.byref(count), ctypes.byref(ws)),
               "workspace size")
        self.plan, self.workspace = plan, int(ws.value)

    def __call__(self, ptrs, workspace: int, stream: int) -> None:
        """Run on ``stream`` (a raw handle): ptrs are the three device pointers, 16-byte aligned."""
        vp = ctypes.c_void_p()
        _check(self._create(_VARIANT_PACK, ctypes.byref(vp)), "create variant pack")
        try:
            self._ptrs[0], self._ptrs[1], self._ptrs[2] = ptrs
            self._ws.value = workspace or None
            _check(self._set(vp, 1000, _T_INT64, 3, self._uids), "variant pack uids")
            _check(self._set(vp, 1001, _T_VOID_PTR, 3, self._ptrs), "variant pack pointers")
            _check(self._set(vp, 1003, _T_VOID_PTR, 1, ctypes.byref(self._ws)), "variant pack workspace")
            _check(self._fin(vp), "finalize variant pack")
            _check(self._stream(self.handle, stream or None), "cudnnSetStream")
            _check(self._exec(self.handle, self.plan, vp), f"execute {self.name}")
        finally:
            self._destroy(vp)


class _Ctx(ctypes.Structure):
    """``miofind/_native.c``'s cudnn_ctx."""

    _fields_ = [("create", ctypes.c_uint64), ("set", ctypes.c_uint64), ("finalize", ctypes.c_uint64),
                ("execute", ctypes.c_uint64), ("destroy", ctypes.c_uint64), ("set_stream", ctypes.c_uint64),
                ("handle", ctypes.c_uint64), ("plan", ctypes.c_uint64), ("stream", ctypes.c_uint64),
                ("lock", ctypes.c_uint64), ("uids", ctypes.c_int64 * 3)]


# device -> (its cudnnHandle_t, which cudnn_run points at each context's stream, and the lock word of its native runs),
# and every NativeRun traced: never freed, since a recipe that names them (one of miofind.torch's C++ plans, which an autograd graph may
# hold after the Python side forgot it) may run until the process ends. An untraced one (a find's candidate) lives as
# long as what holds it, as a frontend plan lives as long as its graph
_native_handles: dict = {}
_native_runs: list = []


def _native_handle(device: int):
    got = _native_handles.get(device)
    if got is None:
        lib = library()         # before the lock, which library() takes while it loads
        with _lib_lock:
            got = _native_handles.get(device)
            if got is None:
                h = ctypes.c_void_p()
                _check(lib.cudnnCreate(ctypes.byref(h)), "cudnnCreate")
                got = _native_handles[device] = (h.value, ctypes.c_int(0))
    return got


_RUN_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64,
                             ctypes.c_uint64)


class NativeRun:
    """Plan ``name`` (``engine``, ``knobs``) of a plain convolution built through the backend API on the device's
    handle of native runs, or ``plan`` (a BackendPlan built so: another stream's), run on ``stream``, with the context
    ``miofind._native``'s cudnn_run takes: ``fn`` that C function's address, ``ctx`` the context's; a recipe step calls
    ``fn(ctx, a, b, out, workspace)``, which sets the stream on the handle. Its ``workspace`` is the plan's bytes."""

    def __init__(self, problem: ProblemDescription, specs: dict, pre, post, device: int, stream: int, name: str,
                 engine: int, knobs: dict, exclude: tuple[str, ...] = (), defer_rtc: bool = False, plan=None):
        nat = launch.native()
        runner = getattr(nat, "cudnn_runner", None)
        if runner is None:
            raise BackendPlanError("miofind._native (with cudnn_runner) is not built")
        fn, size = runner()
        handle, lock = _native_handle(device)
        if plan is not None and plan.handle.value != handle:
            raise BackendPlanError(f"plan {name}: built on another handle than device {device}'s native runs")
        self.plan = plan if plan is not None else BackendPlan(problem, specs, pre, post, handle, name, engine, knobs,
                                                              exclude, defer_rtc)
        self.workspace = self.plan.workspace
        self._lock = lock
        self._ctx = _Ctx(address("cudnnBackendCreateDescriptor"), address("cudnnBackendSetAttribute"),
                         address("cudnnBackendFinalize"), address("cudnnBackendExecute"),
                         address("cudnnBackendDestroyDescriptor"), address("cudnnSetStream"), handle,
                         self.plan.plan.value, stream or 0, ctypes.addressof(lock), (ctypes.c_int64 * 3)(1, 2, 3))
        if ctypes.sizeof(self._ctx) != size:
            raise BackendPlanError(f"miofind._native's cudnn_ctx is {size} bytes, this module's "
                                   f"{ctypes.sizeof(self._ctx)}")
        self.fn, self.ctx = int(fn), ctypes.addressof(self._ctx)
        self._call = _RUN_TYPE(self.fn)
        self._kept = False

    def trace(self, ptrs, workspace: int) -> None:
        """Record ``cudnn_run(ctx, a, b, out, workspace)`` in the running ``launch.trace``, the three pointers
        (``ptrs``) and the workspace written per replay; the run is then kept until the process ends."""
        if not self._kept:
            with _lib_lock:
                _native_runs.append(self)
            self._kept = True
        launch.trace_call(self.fn, [self.ctx, *ptrs, workspace],
                          [(1, ptrs[0]), (2, ptrs[1]), (3, ptrs[2]), (4, workspace)])

    def __call__(self, a: int, b: int, out: int, workspace: int) -> None:
        """Run the plan from Python (one ctypes call of cudnn_run) on this run's stream; BackendPlanError on a failing
        status."""
        status = self._call(self.ctx, a, b, out, workspace)
        if status:
            _check(status, f"cudnnBackendExecute of {self.plan.name}")
