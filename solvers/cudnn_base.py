"""cuDNN through its frontend graph API (``import cudnn``, pip nvidia-cudnn-frontend).

Every cuDNN engine configuration ("plan") is one candidate: config ``{"plan": name}`` where the
name is cuDNN's own engine tag (engine id and knob choices, e.g. ``eng67_k2=5_k3=0``). One graph per
problem and device holds every plan that heuristic modes A and FALLBACK offer, in heuristic order;
plans are built on demand. Where a problem replays natively, the heuristics are asked and the plans built through
cuDNN's backend API (``cudnn_execute``: in C with the GIL released, so a find's thread can do it, ``prefetch``), the
frontend's graph only where a plan needs it; elsewhere the frontend's graph lists, builds and executes the plans by
index. Numerical-note filters keep the data contract:
FP32 with math "strict" never runs a tensor-core (TF32) or input-down-converting engine, and no
engine may reduce in less than FP32.

Nothing here imports ``cudnn`` or touches the GPU before a graph is built: applicability and the
trust key read the installed package and libcudnn's version without the import.
"""

from __future__ import annotations

import collections
import logging
import math
import os
import re
import sys
import threading
from typing import NamedTuple

from miofind import env
from miofind.problem import ProblemDescription
from miofind.solver import APPLICABLE, ConvSolution, Solver, not_applicable
from miofind.tensors import element_strides, index_overflow, numpy_dtype

from miofind import launch

from . import cudnn_execute

log = logging.getLogger(__name__)

NOT_INSTALLED = "cuDNN frontend not installed"
HEURISTIC_MODES = ("A", "FALLBACK")
LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
CUDNN_DTYPES = {"FP32": "FLOAT", "FP16": "HALF", "BF16": "BFLOAT16"}
MAX_GRAPHS = 64                # graphs (with their built plans) kept per process, least recently used out
DELEGATING_PLAN = "backend_heuristics"  # frontend >= 1.29: "let the backend choose", no replayable name


def replays_natively(problem: ProblemDescription) -> bool:
    """Whether a plan of ``problem`` is replayed natively (``make_invoker``'s traced ``cudnn_run`` call) where it
    can be rebuilt through the backend API: ``MIOFIND_CUDNN_EXECUTE=backend``, an unfused convolution, a data type
    the backend path takes. Launches nothing."""
    return backend_execute and env.cudnn_execute() == "backend" and cudnn_execute.unsupported(problem) is None


class CudnnPlanError(RuntimeError):
    """cuDNN could not build or run a graph or plan; the message names the problem, stage and versions."""


# -- is the frontend there? (cached: applicability must stay fast) --------------------------------
#
# Applicability and the trust key need only whether the frontend is installed and the two versions.
# A process answered from the FindDB never builds a graph, so neither imports ``cudnn`` (30 ms): the
# installed package is found by its spec, its version read from its ``__init__.py``, and the backend
# version asked of the libcudnn the frontend will load (its own search order, ``_backend_library``).
# The first real use imports the frontend (``_cudnn``); should that fail, or report other versions,
# the status and the versions are corrected there and the trust keys recomputed.

_status: tuple[bool, str] | None = None        # from the spec (cheap) or the import (final)
_imported: tuple[bool, str] | None = None      # from the import
_versions: dict[str, str | None] | None = None
_status_lock = threading.Lock()
_VERSION_RE = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.M)


def frontend_status() -> tuple[bool, str]:
    """(available, reason). The reason is exactly NOT_INSTALLED when there is no ``cudnn`` module.
    Does not import the frontend unless a module named ``cudnn`` is already imported."""
    global _status
    st = _status
    if st is None:
        with _status_lock:
            if _status is None:
                _status = _imported if _imported is not None else _probe_spec()
            st = _status
    return st


def reset_frontend_status() -> None:
    """Forget the cached probes and versions, and the trust keys made with them (tests; after
    installing the frontend in-process)."""
    global _status, _imported, _versions
    from miofind import trust
    with _status_lock:
        _status = _imported = _versions = None
    trust.trust_key.cache_clear()


def _frontend_dir() -> str | None:
    """The installed frontend package's folder, found without importing it (None: no regular
    package named ``cudnn``)."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("cudnn")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.has_location or not spec.submodule_search_locations:
        return None     # not installed, a namespace package (such as tests/cudnn) or a plain module
    return os.path.dirname(spec.origin)


def _probe_spec() -> tuple[bool, str]:
    if "cudnn" in sys.modules:     # imported already (or blocked): the import's answer costs nothing
        return _probe_frontend()
    where = _frontend_dir()
    if where is None:
        return False, NOT_INSTALLED
    try:
        names = os.listdir(where)
    except OSError as e:
        return False, f"{NOT_INSTALLED} (cannot list {where}: {e})"
    if not any(n.startswith("_compiled_module") for n in names):
        return False, (f"{NOT_INSTALLED} (the package 'cudnn' at {where} has no compiled module; expected "
                       "nvidia-cudnn-frontend)")
    return True, ""


def _probe_frontend() -> tuple[bool, str]:
    try:
        import cudnn
    except ModuleNotFoundError as e:
        if e.name in (None, "cudnn"):
            return False, NOT_INSTALLED
        return False, f"{NOT_INSTALLED} (import cudnn failed: {e})"
    except Exception as e:
        return False, f"{NOT_INSTALLED} (import cudnn failed: {e.__class__.__name__}: {e})"
    if getattr(cudnn, "__file__", None) is None:
        # a namespace package: a folder named cudnn on sys.path (such as tests/cudnn), not the frontend
        if sys.modules.get("cudnn") is cudnn:
            del sys.modules["cudnn"]
        return False, NOT_INSTALLED
    if not hasattr(cudnn, "pygraph"):
        where = getattr(cudnn, "__file__", "?")
        return False, f"{NOT_INSTALLED} (the module 'cudnn' at {where} has no pygraph; expected nvidia-cudnn-frontend)"
    return True, ""


def _cudnn():
    """The imported frontend (CudnnPlanError with the reason when it cannot be used)."""
    global _status, _imported
    st = _imported
    if st is None:
        with _status_lock:
            if _imported is None:
                _imported = _probe_frontend()
                if _status != _imported:
                    _status = _imported
            st = _imported
        if st[0]:
            _check_versions()
    if not st[0]:
        raise CudnnPlanError(st[1])
    import cudnn
    return cudnn


def _backend_library():
    """The libcudnn that ``import cudnn`` loads, by the frontend's own order (its ``_dlopen_cudnn``):
    a libcudnn.so.9 or libcudnn.so in an LD_LIBRARY_PATH folder, the nvidia-cudnn wheel's in
    site-packages, then the loader's search for libcudnn.so.9. None where none loads."""
    import ctypes
    import glob
    import sysconfig
    for folder in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        for name in ("libcudnn.so.9", "libcudnn.so") if folder else ():
            path = os.path.join(folder, name)
            if os.path.exists(path):
                return ctypes.CDLL(path)
    purelib = sysconfig.get_path("purelib")
    for sub in ("nvidia/cudnn/lib", "nvidia/cudnn_jit/lib"):
        found = glob.glob(os.path.join(purelib, sub, "libcudnn.so.*[0-9]"))
        if found:
            return ctypes.CDLL(found[0]) if len(found) == 1 else None
    for name in ("libcudnn.so.9", "libcudnn.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


# the backend API's plans (cudnn_execute) load the same libcudnn; through the name, so that a test's stand-in applies
cudnn_execute.loader = lambda: _backend_library()


def _versions_unimported() -> dict[str, str | None]:
    fe = be = None
    where = _frontend_dir()
    if where is not None:
        try:
            with open(os.path.join(where, "__init__.py"), encoding="utf-8") as fh:
                m = _VERSION_RE.search(fh.read())
            fe = m.group(1) if m else None
        except OSError:
            pass
    try:
        import ctypes
        lib = _backend_library()
        if lib is not None:
            lib.cudnnGetVersion.restype = ctypes.c_size_t
            be = str(int(lib.cudnnGetVersion()))
    except (OSError, AttributeError):
        pass
    return {"cudnn": be, "cudnn_frontend": fe}


def _versions_imported(cudnn) -> dict[str, str | None]:
    try:
        be = str(cudnn.backend_version())
    except Exception:
        be = None
    return {"cudnn": be, "cudnn_frontend": getattr(cudnn, "__version__", None)}


def _check_versions() -> None:
    """After the import: the versions the trust keys used must be the frontend's own; where they
    were not, they are replaced and every cached trust key recomputed."""
    global _versions
    import cudnn
    real = _versions_imported(cudnn)
    if _versions is not None and _versions != real:
        from miofind import trust
        trust.trust_key.cache_clear()
    _versions = real


def library_versions() -> dict[str, str | None]:
    """{"cudnn": backend version, "cudnn_frontend": frontend version}, None where unreadable
    (never raises). Read without importing the frontend until something has imported it."""
    global _versions
    v = _versions
    if v is None:
        if not frontend_status()[0]:
            v = {"cudnn": None, "cudnn_frontend": None}
        elif _imported is not None or "cudnn" in sys.modules:
            try:
                v = _versions_imported(_cudnn())
            except Exception:
                v = {"cudnn": None, "cudnn_frontend": None}
        else:
            v = _versions_unimported()
        _versions = v
    return dict(v)


def versions() -> str:
    """'frontend X, backend Y' for messages (never raises)."""
    try:
        cudnn = _cudnn()
    except Exception as e:
        return f"frontend unavailable ({e})"
    fe = getattr(cudnn, "__version__", "?")
    try:
        be = cudnn.backend_version()
    except Exception as e:
        be = f"? ({e.__class__.__name__})"
    return f"cuDNN frontend {fe}, backend {be}"


# -- device, stream, handle (indirections so CPU tests can stand in for CuPy) ------------------

def _device_id() -> int:
    import cupy
    try:
        return cupy.cuda.Device().id
    except cupy.cuda.runtime.CUDARuntimeError:
        from miofind.device import current_device
        current_device()    # NoGPUError where CUDA is not usable: one line, naming what works without a GPU
        raise


def _workspace_ptr(name: str, need: int, workspace) -> int:
    """The workspace's address for a plan ``name`` that needs ``need`` bytes (0 where it needs none)."""
    if not need:
        return 0
    if not workspace:
        raise ValueError(f"cuDNN plan {name} needs {need} workspace bytes, got none")
    return _ptr(workspace)


def _ptr(a) -> int:
    if a is None:
        return 0
    if isinstance(a, int):
        return a
    return int(a.data.ptr)


# False: new invokers start at the frontend's binding even where MIOFIND_CUDNN_EXECUTE=backend (benchmarks' A/B)
backend_execute = True

# One lock for every cuDNN call: a handle may move between threads but must not be used by two at once.
_LOCK = threading.RLock()
_handles: dict[int, object] = {}


def _handle(cudnn, dev: int):
    h = _handles.get(dev)
    if h is None:
        h = _handles[dev] = _new_handle(cudnn, dev)  # binds the calling thread's current device (dev)
    return h


def _new_handle(cudnn, dev: int):
    """A cuDNN handle on the current device ``dev``. ``cudnn.create_handle()`` asks cuda-python which device
    is current, importing ``cuda.bindings`` (0.2-0.4 s in a new process) to learn what we know already; so
    the backend handle is wrapped as the frontend documents for a foreign one, ``cudnn.Handle(backend_handle,
    ordinal, stream)``, where this frontend has the parts (else ``create_handle``)."""
    mod = getattr(cudnn, "_pybind_module", None)
    if isinstance(getattr(cudnn, "Handle", None), type) and hasattr(mod, "create_handle") and hasattr(mod, "get_stream"):
        raw = mod.create_handle()
        return cudnn.Handle(raw, dev, mod.get_stream(raw))
    return cudnn.create_handle()


# -- tensor descriptions -------------------------------------------------------------------------

class TensorSpec(NamedTuple):
    """A graph tensor: logical dims N, C, (D), H, W (weights K, C/G, (Z), Y, X), element strides."""

    name: str
    dim: tuple[int, ...]
    stride: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.name} dim {list(self.dim)} stride {list(self.stride)}"


def _spec(name: str, memory_shape: tuple[int, ...], layout: str, logical: tuple[int, ...]) -> TensorSpec:
    sn, sc, sd, sh, sw = element_strides(memory_shape, layout)
    spatial = (sd, sh, sw) if len(logical) == 5 else (sh, sw)
    return TensorSpec(name, tuple(logical), (sn, sc, *spatial))


def tensor_specs(problem: ProblemDescription) -> dict[str, TensorSpec]:
    """x, w, y of the (non-transposed) problem as cuDNN sees them; strides encode the layouts."""
    p = problem.as_conv()
    return {
        "x": _spec("x", p.x_shape, p.layouts[0], (p.n, p.c, *p.in_size)),
        "w": _spec("w", p.w_shape, p.layouts[1], (p.k, p.c // p.groups, *p.filter_size)),
        "y": _spec("y", p.y_shape, p.layouts[2], (p.n, p.k, *p.out_size)),
    }


def paddings(problem: ProblemDescription) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(pre, post) padding per spatial dim. Symmetric, except where the problem states an output size
    the formula does not give (MIOpen's same/valid modes): output o still reads input o*s - pre + tap*d,
    and the post padding is what makes (in + pre + post - dilated filter) // s + 1 equal that size."""
    p = problem.as_conv()
    if p.out_size_override is None:
        return p.pads, p.pads
    post = tuple((o - 1) * s + e - i - pre for o, s, e, i, pre in
                 zip(p.out_size, p.strides, p.effective_filter, p.in_size, p.pads))
    return p.pads, post


def _excluded_reason(problem: ProblemDescription) -> str:
    """A plan's ``reason`` where its engine carries one of ``excluded_notes(problem)``."""
    return (f"excluded: carries a numerical note in {list(excluded_notes(problem))}, "
            f"which {problem.dtype} math={problem.math} forbids")


def excluded_notes(problem: ProblemDescription) -> tuple[str, ...]:
    """Numerical notes (cudnn.numerical_note members) whose engines break the problem's contract."""
    p = problem.as_conv()
    if p.dtype == "FP32" and p.math == "strict":
        return ("TENSOR_CORE", "DOWN_CONVERT_INPUTS", "REDUCED_PRECISION_REDUCTION")
    return ("REDUCED_PRECISION_REDUCTION",)


# -- one graph per (device, problem), its plans built on demand --------------------------------

class CudnnPlan:
    """One plan of a graph: ``index`` (its position in the frontend graph's plan list, heuristic order; None for a
    plan listed through the backend API while no frontend graph is built, or that the frontend does not offer),
    ``name``, whether it is ``built`` (runnable: through the frontend, ``fe_built``, or as a ``native``
    NativePlan alone), its ``workspace`` bytes, the ``reason`` it cannot run (deselected by a note filter,
    build failure), its ``invoker``, and ``rtc``: a build that deferred runtime-compiled engines found it one (it
    stays unbuilt). A plain class: a dataclass costs a millisecond of import time
    (bench/results/hot-path/first-find-stages/)."""

    __slots__ = ("index", "name", "built", "workspace", "reason", "invoker", "native", "fe_built", "rtc")

    def __init__(self, index: int | None, name: str, built: bool = False, workspace: int = 0, reason: str = "",
                 invoker: object = None) -> None:
        self.index, self.name, self.built, self.workspace, self.reason, self.invoker = \
            index, name, built, workspace, reason, invoker
        self.native, self.fe_built, self.rtc = None, built, False

    def __repr__(self) -> str:
        return (f"CudnnPlan(index={self.index!r}, name={self.name!r}, built={self.built!r}, "
                f"workspace={self.workspace!r}, reason={self.reason!r})")

    @property
    def path(self) -> str:
        """How the invoker calls cuDNN: "direct" (the C++ binding) or "public" (and why); "" before one exists."""
        return getattr(self.invoker, "path", "")

    @property
    def usable(self) -> bool:
        return self.built and not self.reason


class PlanGraph:
    """A cuDNN graph for one problem on one device and its plans (deduplicated by name): every plan the
    heuristics offer, or with ``replay`` (plan name, engine id, ``frontend_knobs``) only that plan, appended
    by its engine id and knobs (``create_execution_plan``) without running the heuristics (CudnnPlanError
    if it cannot be). With ``native`` (where ``native_first`` and the problem replays natively) the heuristics
    are asked and a plan is built through the backend API alone (``listed`` "backend", the plan a NativePlan),
    the frontend's graph and plan only where a call needs them: each a C call that releases the GIL where
    ``miofind._native`` is built, so a thread can list and build a find's cuDNN plans while the find's other work
    runs (``prefetch``)."""

    def __init__(self, problem: ProblemDescription, device: int, replay: tuple[str, int, dict] | None = None,
                 native: bool = False):
        self.problem = problem
        self.device = device
        self.native = native and native_first and replays_natively(problem)
        self.specs = tensor_specs(problem)
        self.plans: list[CudnnPlan] = []
        self.by_name: dict[str, CudnnPlan] = {}
        self.skipped: dict[str, str] = {}
        self.graph = self.handle = self.roles = None
        self._frontend_error: CudnnPlanError | None = None
        # "backend": the heuristics asked through the backend API (no frontend graph until a call needs one)
        self.listed = "frontend"
        if not (self.native and replay is None and native_listing and self._list_native()):
            self._build_graph(replay)

    def _add(self, index: int | None, name: str) -> None:
        """A plan offered at frontend ``index`` (None: listed through the backend API), once per name; a backend
        listing's frontend graph (built later) only gives its plans their index: the listing stays the backend's."""
        plan = self.by_name.get(name)
        if plan is None and self.listed == "backend":
            return
        if plan is None:
            plan = self.by_name[name] = CudnnPlan(index, name)
            self.plans.append(plan)
        elif plan.index is None:
            plan.index = index

    def _list_native(self) -> bool:
        """List the heuristics' plans through the backend API (``cudnn_execute.heuristic_configs``, which lets other
        threads run while cuDNN plans), a plan whose engine carries an excluded note marked so at once; False where it
        cannot (the frontend lists them then)."""
        try:
            handle, _ = cudnn_execute._native_handle(self.device)
            pre, post = paddings(self.problem)
            configs = cudnn_execute.heuristic_configs(self.problem, self.specs, pre, post, handle, HEURISTIC_MODES)
        except Exception as e:      # noqa: BLE001  the frontend's listing then
            log.info("cuDNN's heuristics for %s are asked through the frontend (%s: %s)", self.problem.key(),
                     e.__class__.__name__, " ".join(str(e).split())[:300])
            return False
        if not configs:
            return False
        barred = {cudnn_execute.NOTES[n] for n in excluded_notes(self.problem)}
        for name, notes, _ in configs:
            self._add(None, name)
            plan = self.by_name[name]
            if notes is not None and barred.intersection(notes) and not plan.reason:
                # the frontend's deselect_numeric_notes, read off the listing: nothing built for it
                plan.reason = _excluded_reason(self.problem)
        self.listed = "backend"
        return True

    def _frontend(self) -> None:
        """The frontend's graph and plans (built once; a backend listing's plans get their frontend index)."""
        if self.graph is None:
            if self._frontend_error is not None:
                raise self._frontend_error
            try:
                self._build_graph()
            except CudnnPlanError as e:
                self.graph, self._frontend_error = None, e
                raise

    # -- construction --
    def _fail(self, stage: str, e: Exception) -> CudnnPlanError:
        desc = "; ".join(str(s) for s in self.specs.values())
        return CudnnPlanError(f"{versions()}: {stage} failed for {self.problem.key()} ({desc}): "
                              f"{e.__class__.__name__}: {str(e).strip()}")

    def _build_graph(self, replay: tuple[str, int, dict] | None = None) -> None:
        p = self.problem
        cudnn = _cudnn()
        stage = "creating the graph"
        try:
            self.handle = _handle(cudnn, self.device)
            dt = getattr(cudnn.data_type, CUDNN_DTYPES[p.dtype])
            f32 = cudnn.data_type.FLOAT
            g = cudnn.pygraph(name=f"miofind_conv_{p.direction}", io_data_type=dt, intermediate_data_type=f32,
                              compute_data_type=f32, handle=self.handle)
            pre, post = paddings(p)
            conv = dict(stride=list(p.strides), dilation=list(p.dilations), compute_data_type=f32)
            if pre == post:
                conv["padding"] = list(pre)
            else:
                conv.update(pre_padding=list(pre), post_padding=list(post))

            def tensor(role, name):
                s = self.specs[role]
                return g.tensor(name=name, dim=list(s.dim), stride=list(s.stride), data_type=dt)

            def output(t, role):
                s = self.specs[role]
                t.set_output(True)
                t.set_data_type(dt)
                t.set_dim(list(s.dim))
                t.set_stride(list(s.stride))
                return t

            stage = "adding the convolution node"
            # roles in the invoker's argument order: F (x, w) -> y, B (dy, w) -> dx, W (dy, x) -> dw
            if p.direction == "F" and p.fused:
                # the fused epilogue: y = act(conv + bias), the intermediate in FP32 (runtime fusion)
                x, w = tensor("x", "x"), tensor("w", "w")
                t = g.conv_fprop(image=x, weight=w, name="conv_fprop", **conv)
                roles = [x, w]
                if p.bias:
                    ys = self.specs["y"]
                    # (1, K, 1, ...) with y's channel stride: per output channel, broadcast elsewhere
                    bdim = [1, p.k] + [1] * (len(ys.dim) - 2)
                    bstride = [p.k, 1] + [p.k] * (len(ys.dim) - 2) if ys.stride[1] == 1 else [p.k] + [1] * (len(ys.dim) - 1)
                    b = g.tensor(name="bias", dim=bdim, stride=bstride, data_type=dt)
                    t = g.bias(input=t, bias=b, name="bias")
                    roles.append(b)
                if p.activation == "relu":
                    t = g.relu(input=t, name="relu")
                elif p.activation == "gelu":
                    t = g.gelu(input=t, name="gelu")
                y = output(t, "y")
                # roles in the fused invoker's order: x, w, y, then the bias
                self.roles = (x, w, y, *roles[2:])
            elif p.direction == "F":
                x, w = tensor("x", "x"), tensor("w", "w")
                y = output(g.conv_fprop(image=x, weight=w, name="conv_fprop", **conv), "y")
                self.roles = (x, w, y)
            elif p.direction == "B":
                dy, w = tensor("y", "dy"), tensor("w", "w")
                dx = output(g.conv_dgrad(loss=dy, filter=w, name="conv_dgrad", **conv), "x")
                self.roles = (dy, w, dx)
            else:
                dy, x = tensor("y", "dy"), tensor("x", "x")
                dw = output(g.conv_wgrad(image=x, loss=dy, name="conv_wgrad", **conv), "w")
                self.roles = (dy, x, dw)
            self.graph = g
            stage = "validate()"
            g.validate()
            stage = "build_operation_graph()"
            g.build_operation_graph()
            if replay is None:
                stage = f"create_execution_plans(heur_mode {'+'.join(HEURISTIC_MODES)})"
                g.create_execution_plans([getattr(cudnn.heur_mode, m) for m in HEURISTIC_MODES])
            else:
                name, engine, knobs = replay
                stage = f"create_execution_plan({name})"
                g.create_execution_plan(engine, knobs)
            stage = "deselect_numeric_notes"
            notes = []
            for n in excluded_notes(p):
                note = getattr(cudnn.numerical_note, n, None)
                if note is None:
                    raise CudnnPlanError(f"{versions()} has no cudnn.numerical_note.{n}, so engines carrying it "
                                         f"cannot be excluded as {p.key()} ({p.dtype} math={p.math}) requires")
                notes.append(note)
            g.deselect_numeric_notes(notes)
            stage = "listing the plans"
            for i in range(int(g.get_execution_plan_count())):
                name = str(g.get_plan_name_at_index(i))
                if name == DELEGATING_PLAN:
                    self.skipped[name] = "delegates the choice to cuDNN; not a replayable plan"
                    continue
                self._add(i, name)
        except CudnnPlanError:
            raise
        except Exception as e:
            raise self._fail(stage, e) from e
        if replay is not None and [pl.name for pl in self.plans] != [replay[0]]:
            raise CudnnPlanError(f"{versions()}: replaying plan {replay[0]} for {self.problem.key()} gave "
                                 f"{[pl.name for pl in self.plans]}")
        if not self.plans:
            raise CudnnPlanError(f"{versions()}: cuDNN heuristics offered no plan for {self.problem.key()}")

    # -- plans --
    def build(self, plan: CudnnPlan, defer_rtc: bool = False) -> CudnnPlan:
        """Build one plan (once) and read its workspace; failures are recorded in plan.reason. On a native
        graph the plan is a NativePlan (the plan that a native replay runs, so a find's winner is not compiled
        again for it), its numerical notes checked before it compiles; the frontend builds it where the backend
        API cannot. ``defer_rtc``: a plan whose engine compiles when built (cuDNN's runtime compilation, 100-300
        ms) is left unbuilt and marked ``rtc`` (native graphs only: the frontend cannot tell before it builds)."""
        if plan.built or plan.reason:
            return plan
        if self.native:
            key = (self.device, self.problem, plan.name)
            try:
                nat = _natives.get(key) or NativePlan(self.problem, plan.name, self.device,
                                                      exclude=excluded_notes(self.problem), defer_rtc=defer_rtc)
            except cudnn_execute.RuntimeCompiled:
                plan.rtc = True
                return plan
            except cudnn_execute.ExcludedPlan:
                plan.reason = _excluded_reason(self.problem)
                return plan
            except Exception as e:      # noqa: BLE001  the frontend's build then
                log.info("cuDNN plan %s for %s is built through the frontend (%s: %s)", plan.name,
                         self.problem.key(), e.__class__.__name__, " ".join(str(e).split())[:300])
            else:
                plan.native, plan.workspace, plan.built = nat, nat.workspace, True
                _lru(_natives, key, lambda: nat)
                return plan
        reason, ws = self._build_frontend(plan)
        if reason:
            plan.reason = reason
        else:
            plan.workspace, plan.built, plan.fe_built = ws, True, True
        return plan

    def frontend_plan(self, plan: CudnnPlan) -> CudnnPlan:
        """``plan`` with its frontend plan built as well (a NativePlan's plan, for the frontend's invokers), its
        workspace the larger of the two; CudnnPlanError where the frontend cannot build it."""
        if not plan.fe_built and plan.usable:
            reason, ws = self._build_frontend(plan)
            if reason:
                raise CudnnPlanError(f"cuDNN plan {plan.name} for {self.problem.key()} through the frontend: {reason}")
            plan.workspace, plan.fe_built = max(plan.workspace, ws), True
        return plan

    def _build_frontend(self, plan: CudnnPlan) -> tuple[str, int]:
        """Build the frontend's plan of ``plan``: ("", its workspace bytes) or (why it cannot run, 0)."""
        try:
            self._frontend()
        except CudnnPlanError as e:
            return f"the frontend's graph: {' '.join(str(e).split())[:500]}", 0
        index = plan.index
        if index is None:
            return "the frontend's heuristics do not offer it (listed through the backend API)", 0
        try:
            self.graph.build_plan_at_index(index)
        except Exception as e:
            msg = " ".join(str(e).split())
            if "eselect" in msg:  # "Deselecting execution plan": barred by the numerical-note filter
                return _excluded_reason(self.problem), 0
            return f"build failed: {e.__class__.__name__}: {msg[:500]}", 0
        try:
            ws = int(self.graph.get_workspace_size_plan_at_index(index))
        except Exception as e:
            return f"workspace query failed: {e.__class__.__name__}: {e}", 0
        if ws < 0:
            return f"negative workspace {ws}", 0
        return "", ws

    def build_all(self) -> list[CudnnPlan]:
        for plan in self.plans:
            self.build(plan)
        return [pl for pl in self.plans if pl.usable]

    def default_plan(self) -> CudnnPlan:
        """The heuristics' first plan that survives the note filters and builds."""
        for plan in self.plans:
            if self.build(plan).usable:
                return plan
        raise CudnnPlanError(f"{versions()}: no plan for {self.problem.key()} could be built:\n  "
                             + "\n  ".join(f"{pl.name}: {pl.reason}" for pl in self.plans))

    def plan(self, name: str) -> CudnnPlan:
        plan = self.by_name.get(name)
        if plan is None:
            offered = ", ".join(pl.name for pl in self.plans)
            raise ValueError(f"config plan={name!r}: not offered by {versions()} for {self.problem.key()} "
                             f"(offered: {offered})")
        if not self.build(plan).usable:
            raise CudnnPlanError(f"plan {name!r} for {self.problem.key()} cannot run ({versions()}): {plan.reason}")
        return plan

    def _rebuilt(self, plan: CudnnPlan, cls, /, *where, **kw):
        """``cls`` (cudnn_execute.BackendPlan or NativeRun, ``where`` its arguments between the paddings and the
        plan's name, ``kw`` its keywords: NativeRun's ``plan``, a BackendPlan to share) of ``plan``: the same engine and
        knobs built through the backend API, for a plain convolution whose workspace fits the frontend plan's; else why
        not (a str)."""
        try:
            pre, post = paddings(self.problem)
            got = cls(self.problem, self.specs, pre, post, *where, plan.name, *parse_plan_name(plan.name), **kw)
        except (cudnn_execute.BackendPlanError, ValueError) as e:
            return " ".join(str(e).split())[:300]
        if got.workspace > plan.workspace:
            return f"workspace {got.workspace} > the frontend plan's {plan.workspace}"
        return got

    def _backend_plan(self, plan: CudnnPlan):
        """(cudnn_execute.BackendPlan of ``plan`` on this graph's handle, "") or (None, why not)."""
        raw = _raw_handle(self.handle)
        if raw is None:
            return None, "no raw cudnnHandle_t"
        got = self._rebuilt(plan, cudnn_execute.BackendPlan, raw)
        return (None, got) if isinstance(got, str) else (got, "")

    def invoker(self, plan: CudnnPlan):
        """invoker(a, b, out, workspace, stream) running ``plan`` (device pointers, a raw stream handle).

        It calls the frontend's C++ binding directly (the public execute_plan_at_index re-derives the plan
        filters and re-describes every buffer on each call, tens of microseconds that a find would time), falling
        back to the public call for good on a failure. By default (``MIOFIND_CUDNN_EXECUTE=backend``) it is also
        traceable (``miofind.launch.trace``): a native replayer (miofind.torch's C++ path, a prepared solution's
        recipe) then runs the plan rebuilt through cuDNN's backend API (``cudnn_execute.NativeRun``: the same
        engine and knobs) with no Python. MIOFIND_CUDNN_EXECUTE=direct is the binding alone, =public the public
        call alone.
        """
        if plan.invoker is None:
            plan.invoker = plan.native.invoker() if plan.native is not None else self.make_invoker(plan)
        return plan.invoker

    def make_invoker(self, plan: CudnnPlan, path: str | None = None):
        """A new invoker for a built plan, by ``path`` ("backend", "direct" or "public"; default
        ``MIOFIND_CUDNN_EXECUTE``), or "backend-python" (calls from Python run the backend API's plan through
        ctypes: the tests compare it with the others)."""
        cudnn = _cudnn()
        self.frontend_plan(plan)
        graph, handle, roles = self.graph, self.handle, self.roles
        index, need, name, key = plan.index, plan.workspace, plan.name, self.problem.key()
        start = path or env.cudnn_execute()
        if start == "backend" and not backend_execute:
            start = "direct"
        path, direct, backend = "public", None, None
        if start != "public":
            direct = _direct_executor(graph, handle, index, roles)
            path = "direct" if direct is not None else "public (no direct binding in this frontend)"
        if start == "backend-python":
            backend, why = self._backend_plan(plan)
            path = "backend-python" if backend is not None else f"{path} (backend API: {why})"
        # native replays (traced): the plan rebuilt through the backend API, per stream (cudnn_execute.NativeRun)
        native = start == "backend" and cudnn_execute.unsupported(self.problem) is None
        natives: dict = {}

        def native_run(stream: int):
            got = natives.get(stream)
            if got is None:
                # the first stream's finalized plan serves the others (a runtime-compiled engine compiles once)
                first = next((r for r in natives.values() if not isinstance(r, str)), None)
                got = natives[stream] = self._rebuilt(plan, cudnn_execute.NativeRun, self.device, stream,
                                                      **({"plan": first.plan} if first is not None else {}))
            if isinstance(got, str):
                raise launch.NotTraceable(f"cuDNN plan {name} through the backend API: {got}")
            return got

        def run(ptrs, ws):
            nonlocal direct
            if direct is not None:
                try:
                    return direct(ptrs, ws)
                except Exception as e:
                    direct = None
                    invoker.path = f"public (direct call failed: {e.__class__.__name__}: {' '.join(str(e).split())[:300]})"
            graph.execute_plan_at_index(dict(zip(roles, ptrs)), ws, index)

        nroles = len(roles)

        def invoker(a, b, out, workspace, stream, bias=0):
            nonlocal backend
            ws = _workspace_ptr(name, need, workspace)
            # a fused graph with a bias has a fourth role: the bias's pointer
            ptrs = (_ptr(a), _ptr(b), _ptr(out)) if nroles == 3 else (_ptr(a), _ptr(b), _ptr(out), _ptr(bias))
            if native and launch.tracing():
                # recorded, not run: cudnn_run(ctx, a, b, out, workspace), the pointers written per replay
                with _LOCK:
                    nr = native_run(stream)
                nr.trace(ptrs, ws)
                return
            with _LOCK:
                try:
                    # the backend plan's tensors promise 16-byte aligned pointers; any other takes the frontend
                    if backend is not None and not ((ptrs[0] | ptrs[1] | ptrs[2]) & 15):
                        try:
                            return backend(ptrs, ws, stream)
                        except cudnn_execute.BackendPlanError as e:
                            backend = None
                            invoker.path = (f"{'direct' if direct is not None else 'public'} (backend API failed: "
                                            f"{' '.join(str(e).split())[:300]})")
                    cudnn.set_stream(handle, stream)
                    run(ptrs, ws)
                except Exception as e:
                    raise CudnnPlanError(f"cuDNN plan {name} failed to execute for {key} ({versions()}; "
                                         f"{invoker.path}): {e.__class__.__name__}: {e}") from e

        invoker.path = "backend" if native and path == "direct" else path
        if native:
            launch.mark_traceable(invoker)
        return invoker


def _raw_handle(handle) -> int | None:
    """The cudnnHandle_t behind a frontend handle (an int already, or a ``cudnn.Handle``)."""
    if isinstance(handle, int):
        return handle
    raw = getattr(handle, "backend_handle", None)
    return raw if isinstance(raw, int) and raw else None


def _direct_executor(graph, handle, index: int, roles):
    """fn(ptrs, workspace) calling the C++ binding's _execute_plan_at_index for one plan, or None.

    Frontend >= 1.29: ``cudnn.pygraph`` is Python over a lowered C++ graph; a backend plan's C++
    index is its PlanConfig.cpp_index and IR uids are pushed to C++ unchanged. Up to 1.28 the
    pybind pygraph itself has the method and takes the graph's own plan index.
    """
    d = getattr(graph, "__dict__", None) or {}
    lowered = d.get("_lowered_graph")
    if lowered is not None:
        plans = d.get("_plans") or []
        cfg = plans[index] if 0 <= index < len(plans) else None
        cpp = getattr(cfg, "cpp_index", None)
        fn = getattr(lowered, "_execute_plan_at_index", None)
        bh = getattr(handle, "backend_handle", None)
        uids = [getattr(t, "uid", None) for t in roles]
        if fn is None or not isinstance(cpp, int) or not isinstance(bh, int) or \
                not all(isinstance(u, int) and u > 0 for u in uids) or len(set(uids)) != len(roles):
            return None
        return lambda ptrs, ws: fn(dict(zip(uids, ptrs)), ws, cpp, bh)
    fn = getattr(graph, "_execute_plan_at_index", None)
    if fn is None or not isinstance(handle, int):
        return None
    try:
        uids = [int(t.get_uid()) for t in roles]
    except Exception:
        return None
    if not all(u > 0 for u in uids) or len(set(uids)) != len(roles):
        return None
    return lambda ptrs, ws: fn(dict(zip(uids, ptrs)), ws, index, handle)


_graphs: collections.OrderedDict = collections.OrderedDict()


def plan_graph(problem: ProblemDescription) -> PlanGraph:
    """The cached graph of ``problem`` (its non-transposed view) on the current device."""
    p = problem.as_conv()
    _cudnn()
    key = (_device_id(), p)
    with _LOCK:
        return _lru(_graphs, key, lambda: PlanGraph(p, key[0], native=native_find))


def _lru(cache: collections.OrderedDict, key, make):
    """``cache[key]``, made by ``make()`` on a miss (nothing is stored if it raises); beyond MAX_GRAPHS
    entries the least recently used goes."""
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = cache[key] = make()
    while len(cache) > MAX_GRAPHS:
        cache.popitem(last=False)
    return value


def parse_plan_name(name: str) -> tuple[int, dict[int, int]]:
    """(engine id, {knob type number: value}) of a cuDNN plan name such as ``eng67_k2=5_k3=0``;
    ValueError for any other name."""
    m = re.fullmatch(r"eng(\d+)((?:_k\d+=-?\d+)*)", name)
    if m is None:
        raise ValueError(f"plan={name!r}: not a cuDNN engine name (engN_kK=V...)")
    knobs = {int(k): int(v) for k, v in re.findall(r"_k(\d+)=(-?\d+)", m.group(2))}
    return int(m.group(1)), knobs


# cudnnBackendKnobType_t (cudnn_backend.h) by number, as plan names carry knobs (``_k14=4``: STAGES = 4);
# the frontend's ``cudnn.knob_type`` numbers its members otherwise and lacks some (USE_TEX, LDGC...)
BACKEND_KNOBS = ("SPLIT_K", "SWIZZLE", "TILE_SIZE", "USE_TEX", "EDGE", "KBLOCK", "LDGA", "LDGB", "CHUNK_K", "SPLIT_H",
                 "WINO_TILE", "MULTIPLY", "SPLIT_K_BUF", "TILEK", "STAGES", "REDUCTION_MODE", "CTA_SPLIT_K_MODE",
                 "SPLIT_K_SLC", "IDX_MODE", "SLICED", "SPLIT_RS", "SINGLEBUFFER", "LDGC", "SPECFILT", "KERNEL_CFG",
                 "WORKSPACE", "TILE_CGA", "TILE_CGA_M", "TILE_CGA_N", "BLOCK_SIZE", "OCCUPANCY",
                 "ARRAY_SIZE_PER_THREAD", "NUM_C_PER_BLOCK", "SPLIT_COLS", "TILE_ROWS", "TILE_COLS", "LOAD_SIZE")


def frontend_knobs(cudnn, knobs: dict[int, int]) -> dict | None:
    """``{cudnn.knob_type member: value}`` for a plan name's backend knob numbers, or None where the
    frontend has no member for one of them (that plan cannot be replayed through it)."""
    out = {}
    for k, v in knobs.items():
        member = getattr(cudnn.knob_type, BACKEND_KNOBS[k], None) if 0 <= k < len(BACKEND_KNOBS) else None
        if member is None:
            return None
        out[member] = v
    return out


# (device, problem, plan name) -> a graph holding only that plan, or None where replaying it failed
_replays: collections.OrderedDict = collections.OrderedDict()


def _replay(problem: ProblemDescription, name: str) -> tuple[PlanGraph, CudnnPlan] | None:
    """The graph of ``problem`` with only the named plan, built, where no graph with the heuristics' plans
    is cached (a find's candidates come from one): a stored record's plan prepared without running
    cuDNN's heuristics, which list and create every plan (about 15 ms a graph). None where it cannot be
    replayed (the caller takes the heuristics' graph)."""
    p = problem.as_conv()
    cudnn = _cudnn()
    dev = _device_id()
    if (dev, p) in _graphs:
        return None
    g = _lru(_replays, (dev, p, name), lambda: _replayed_graph(cudnn, p, dev, name))
    return None if g is None else (g, g.plans[0])


def _replayed_graph(cudnn, p: ProblemDescription, dev: int, name: str) -> PlanGraph | None:
    """A graph of ``p`` with only the plan ``name``, built, or None: the frontend cannot append a plan by
    engine and knobs, the name is no engine's, a knob has no frontend name, or it does not build."""
    if not hasattr(cudnn.pygraph, "create_execution_plan"):
        return None
    try:
        engine, knobs = parse_plan_name(name)
    except ValueError:
        return None
    knobs = frontend_knobs(cudnn, knobs)
    if knobs is None:
        return None
    try:
        g = PlanGraph(p, dev, replay=(name, engine, knobs))
        return g if g.build(g.plans[0]).usable else None
    except Exception:
        return None


# False: a stored plan is prepared through the frontend's graph even where it could replay natively alone (A/B)
native_first = True
# False: a find's plans are built through the frontend's graph, and a native replay of its winner builds it again
# through the backend API (A/B)
native_find = True
# False: a native graph asks cuDNN's heuristics through the frontend's graph (A/B); True: through the backend API
native_listing = True

# (device, problem, plan name) -> a NativePlan, or None where it could not be made
_natives: collections.OrderedDict = collections.OrderedDict()


class NativePlan:
    """A plan of ``problem`` (a stored one, or a find's on a native graph: ``PlanGraph.build``) run through its build
    on cuDNN's backend API alone (``cudnn_execute.NativeRun``: one per stream, the first made here for the legacy
    default stream, 0, all on that one's finalized plan), its frontend graph and plan never built unless a call needs
    them: a plan that compiles kernels when it is built (cuDNN's runtime-compiled engines, 100-300 ms each) then
    compiles once in a process, not once for the frontend and again for the native replay, nor once per stream. Calls from
    Python run it through one ctypes call of ``miofind._native``'s cudnn_run; only pointers that break the backend
    plan's 16-byte alignment take the frontend's plan (built then, and refused if it needs more workspace)."""

    def __init__(self, problem: ProblemDescription, name: str, device: int, stream: int = 0,
                 exclude: tuple[str, ...] = (), defer_rtc: bool = False):
        self.problem, self.name, self.device = problem, name, device
        self.exclude = exclude        # numerical notes (excluded_notes) the plan must not carry: checked at each build
        self.specs = tensor_specs(problem)
        self.pre, self.post = paddings(problem)
        self.engine, self.knobs = parse_plan_name(name)
        self._runs: dict = {}
        self._frontend = None
        # defer_rtc: cudnn_execute.RuntimeCompiled, before anything compiles, where the engine compiles when built
        self.workspace = self.run(stream, defer_rtc).workspace

    def run(self, stream: int, defer_rtc: bool = False):
        """The NativeRun of ``stream`` (made at its first use, on the first one's plan: one build however many streams
        run it; BackendPlanError where it cannot be)."""
        got = self._runs.get(stream)
        if got is None:
            first = next(iter(self._runs.values()), None)
            got = self._runs[stream] = cudnn_execute.NativeRun(self.problem, self.specs, self.pre, self.post,
                                                               self.device, stream, self.name, self.engine, self.knobs,
                                                               self.exclude, defer_rtc,
                                                               plan=first.plan if first is not None else None)
        return got

    def frontend(self):
        """The frontend's invoker of this plan (built at the first call that needs it)."""
        if self._frontend is None:
            g = _replayed_graph(_cudnn(), self.problem, self.device, self.name) or plan_graph(self.problem)
            plan = g.frontend_plan(g.plan(self.name))
            if plan.workspace > self.workspace:
                raise CudnnPlanError(f"cuDNN plan {self.name} for {self.problem.key()}: the frontend's plan needs "
                                     f"{plan.workspace} workspace bytes, the backend API's {self.workspace}")
            self._frontend = g.make_invoker(plan, "direct")
        return self._frontend

    def invoker(self):
        name, key, need = self.name, self.problem.key(), self.workspace

        def invoker(a, b, out, workspace, stream, bias=0):
            ws = _workspace_ptr(name, need, workspace)
            ptrs = (_ptr(a), _ptr(b), _ptr(out))
            if launch.tracing():
                # recorded, not run: cudnn_run(ctx, a, b, out, workspace), the pointers written per replay
                with _LOCK:
                    try:
                        nr = self.run(stream)
                    except cudnn_execute.BackendPlanError as e:
                        raise launch.NotTraceable(f"cuDNN plan {name} through the backend API: {e}") from None
                nr.trace(ptrs, ws)
                return
            try:
                with _LOCK:
                    nr = None
                    if not ((ptrs[0] | ptrs[1] | ptrs[2]) & 15):
                        try:
                            nr = self.run(stream)
                        except cudnn_execute.BackendPlanError:
                            nr = None
                    fe = self.frontend() if nr is None else None
                if nr is not None:
                    nr(*ptrs, ws)
                else:
                    fe(*ptrs, ws, stream)
            except (CudnnPlanError, ValueError):
                raise
            except Exception as e:
                raise CudnnPlanError(f"cuDNN plan {name} failed to execute for {key} ({versions()}; native): "
                                     f"{e.__class__.__name__}: {e}") from e

        invoker.path = "native"
        launch.mark_traceable(invoker)
        return invoker


def _native_plan(problem: ProblemDescription, name: str) -> NativePlan | None:
    """The NativePlan of a stored plan of ``problem`` where it is to be prepared that way: ``native_first``, the
    plan replays natively (``replays_natively``) and no graph with the heuristics' plans is cached (then the
    caller takes the plan from that graph, which holds the find's NativePlans, or builds it there); None otherwise
    or where it cannot be made (the caller takes the frontend's path)."""
    p = problem.as_conv()
    if not native_first or not replays_natively(p):
        return None
    dev = _device_id()
    if (dev, p) in _graphs:
        return None

    def make():
        try:
            return NativePlan(p, name, dev)
        except Exception as e:      # noqa: BLE001  the frontend's path then
            log.info("cuDNN plan %s for %s is prepared through the frontend (%s: %s)", name, p.key(),
                     e.__class__.__name__, " ".join(str(e).split())[:300])
            return None

    with _LOCK:
        return _lru(_natives, (dev, p, name), make)


def clear_cache() -> None:
    with _LOCK:
        _graphs.clear()
        _replays.clear()
        _natives.clear()


def resolve(problem: ProblemDescription, config=None) -> tuple[PlanGraph, CudnnPlan]:
    """The graph and the built plan that ``config`` (None: the heuristics' first) names: replayed alone
    where it can be (``_replay``), else from the graph of every plan the heuristics offer."""
    with _LOCK:
        if config:
            got = _replay(problem, config["plan"])
            if got is not None:
                return got
        g = plan_graph(problem)
        plan = g.default_plan() if not config else g.plan(config["plan"])
        return g, plan


def list_plans(problem: ProblemDescription, limit: int | None = None,
               defer_rtc: bool = False) -> list[tuple[str, int]]:
    """[(plan name, workspace bytes)] for every plan that builds, in heuristic order (builds them all),
    or for the first ``limit`` of them (building plans only until that many built); ``defer_rtc``: without the
    plans of runtime-compiled engines, left unbuilt (``PlanGraph.build``)."""
    with _LOCK:
        g = plan_graph(problem)
        out = []
        for pl in g.plans:
            if limit is not None and len(out) >= limit:
                break
            if g.build(pl, defer_rtc).usable:
                out.append((pl.name, pl.workspace))
        return out


def first_plans(problem: ProblemDescription, limit: int | None = None) -> list[tuple[str, int]]:
    """``list_plans`` as a find asks it (``CudnnSolverBase.find_configs``): up to MIOFIND_CUDNN_PLANS plans, or
    ``limit`` (a find's first plans: then passing over runtime-compiled ones where MIOFIND_CUDNN_DEFER_RTC)."""
    cap = env.cudnn_plans() if limit is None else min(limit, env.cudnn_plans())
    return list_plans(problem, cap, limit is not None and env.cudnn_defer_rtc())


def prefetch(problem: ProblemDescription, limit: int | None = None) -> threading.Thread | None:
    """Start, in a thread, what a find's ``find_configs(problem, limit)`` would do first (``MIOFIND_CUDNN_PREFETCH``:
    ``list`` the heuristics' plans of ``problem``'s graph, ``build`` them as that call builds them, ``load``: build them,
    then ``first_runs``), so that the find's other work runs meanwhile; the find's own call then takes the cached graph
    (waiting under the cuDNN lock for the thread where it is not done), and waits for the rest (``prefetch_wait``)
    before it times anything. Only for a graph not cached that lists through ``miofind._native.cudnn_heuristics``
    (one call with the GIL released: through ctypes, each call would wait for the GIL the find's Python work holds);
    None where nothing started. A failure in the thread is left for the find's own call to meet and report."""
    how = env.cudnn_prefetch()
    p = problem.as_conv()
    if how == "off" or not (native_find and native_first and native_listing and replays_natively(p)):
        return None
    if cudnn_execute.native_call("cudnn_heuristics") is None:
        return None
    dev = _device_id()
    if (dev, p) in _graphs:
        return None

    def work():
        try:
            import cupy

            from miofind.nvlib import relaxed_capture_mode
            # its CUDA calls (cuDNN's allocations and module loads when a plan is built) neither fail nor invalidate
            # a CUDA-graph capture another thread runs meanwhile, as miofind's other background threads
            relaxed_capture_mode()
            cupy.cuda.runtime.setDevice(dev)
            if how == "list":
                plan_graph(p)
                return
            names = [name for name, _ in first_plans(p, limit)]
            if how == "load":
                first_runs(p, dev, names)
        except Exception as e:      # noqa: BLE001  the find's own call meets it again and reports it
            log.debug("cuDNN prefetch for %s: %s: %s", p.key(), e.__class__.__name__, e)

    t = threading.Thread(target=work, name="miofind-cudnn-prefetch", daemon=True)
    with _LOCK:
        for k in [k for k, other in _prefetching.items() if not other.is_alive()]:
            del _prefetching[k]     # ended, and no find waited: nothing left to wait for
        _prefetching[(dev, p)] = t
    t.start()
    return t


# (device, problem) -> the thread prefetch started for a find's miss, until the find waits for it (prefetch_wait)
_prefetching: dict = {}
# device -> the stream first_runs runs plans on (one per device, kept: a plan's NativeRun is per stream)
_first_run_streams: dict = {}
# first_runs's scratch buffers (x, w, y and the largest workspace) stay under this; a larger problem's plans load at
# their first run in the find, as without the run
FIRST_RUN_BYTES = 512 << 20


def first_runs(problem: ProblemDescription, device: int, names) -> int:
    """Run each built plan ``names`` of ``problem``'s cached native graph once, on scratch buffers (their contents
    arbitrary: nothing reads the output) on a stream of its own, and wait for it: CUDA loads a kernel's module at its
    first launch in a process (lazy loading), a cost of up to tens of milliseconds for some cuDNN engines
    (bench/results/session-nov27f/call4/), which ``prefetch``'s thread thus pays beside the find's other work instead
    of the find's first verification run of the plan. How many plans ran; 0 where none is built natively or the
    buffers would pass FIRST_RUN_BYTES."""
    import cupy
    p = problem.as_conv()
    with _LOCK:
        g = _graphs.get((device, p))
        plans = [pl for pl in g.plans if pl.name in names and pl.usable and pl.native is not None] if g else []
    if not plans:
        return 0
    item = numpy_dtype(p.dtype).itemsize
    sizes = [item * math.prod(shape) for shape in p.io_shapes()]
    ws = max(pl.workspace for pl in plans)
    if sum(sizes) + ws > FIRST_RUN_BYTES:
        return 0
    with _LOCK:
        stream = _first_run_streams.get(device)
        if stream is None:
            stream = _first_run_streams[device] = cupy.cuda.Stream(non_blocking=True)
    with stream:
        a, b, out = (cupy.empty(max(n, 16), dtype=cupy.uint8) for n in sizes)
        work = cupy.empty(ws, dtype=cupy.uint8) if ws else None
        for pl in plans:
            with _LOCK:
                nr = pl.native.run(stream.ptr)
            nr(a.data.ptr, b.data.ptr, out.data.ptr, work.data.ptr if work is not None else 0)
        stream.synchronize()
    return len(plans)


def prefetch_wait(problem: ProblemDescription, timeout: float = 10.0) -> float:
    """Wait for the thread ``prefetch`` started for ``problem`` (its plans' first runs on the GPU: a find waits
    before it times anything, so that they do not overlap its timed runs); the milliseconds waited, 0.0 where none
    was started or it ended already."""
    import time
    if not _prefetching:
        return 0.0
    with _LOCK:
        t = _prefetching.pop((_device_id(), problem.as_conv()), None)
    if t is None or not t.is_alive():
        return 0.0
    t0 = time.perf_counter()
    t.join(timeout)
    return (time.perf_counter() - t0) * 1e3


def deferred_plans(problem: ProblemDescription) -> list[str]:
    """The plans of ``problem``'s cached graph that a build deferring runtime-compiled engines left unbuilt."""
    with _LOCK:
        g = _graphs.get((_device_id(), problem.as_conv()))
        return [] if g is None else [pl.name for pl in g.plans if pl.rtc and not pl.built and not pl.reason]


def plan_table(problem: ProblemDescription) -> list[dict]:
    """Every offered plan with whether it runs and why not (builds them all); for diagnostics."""
    with _LOCK:
        g = plan_graph(problem)
        g.build_all()
        rows = [dict(index=pl.index, name=pl.name, usable=pl.usable, workspace=pl.workspace, reason=pl.reason,
                     path=pl.path) for pl in g.plans]
        rows += [dict(index=None, name=n, usable=False, workspace=0, reason=r, path="")
                 for n, r in g.skipped.items()]
        return rows


def cudnn_candidates(problem: ProblemDescription) -> list[dict]:
    """One config per runnable plan of ``problem`` ([] when no cuDNN solver applies).

    For find: expand each cuDNN solver into ``get_solution(problem, cfg)`` per config. Raises
    CudnnPlanError when cuDNN cannot build a graph for the problem.
    """
    from miofind.registry import get_solver

    d = problem.as_conv().direction
    solver = get_solver({"F": "ConvCudnnFwd", "B": "ConvCudnnBwd", "W": "ConvCudnnWrw"}[d])
    if not solver.applicability(problem):
        return []
    return [{"plan": name} for name, _ in list_plans(problem)]


# -- the solver ----------------------------------------------------------------------------------

class CudnnSolverBase(Solver):
    """A cuDNN direction: each plan is a config; None is the heuristics' first plan."""

    family = "cudnn"
    tunable = True
    kernel_files = ()
    arbitrary_out_size = True      # stated output sizes become asymmetric (post) padding
    # some cuDNN engines (split-K, atomics) carry the NONDETERMINISTIC numerical note and the plans
    # are not filtered by it, so no cuDNN plan counts as deterministic
    deterministic = False

    def applicability(self, problem: ProblemDescription):
        ok, why = frontend_status()
        if not ok:
            return not_applicable(why)
        base = super().applicability(problem)
        if not base:
            return base
        p = problem.as_conv()
        for role, lay in zip(("x", "w", "y"), p.layouts):
            if lay not in LAYOUTS[p.spatial_dims]:
                return not_applicable(f"layout {role}={lay} not supported ({' or '.join(LAYOUTS[p.spatial_dims])})")
        why = index_overflow(p)   # cuDNN's tensor descriptors hold int64 dimensions and strides
        if why:
            return not_applicable(why)
        if p.out_size_override is not None:
            post = paddings(p)[1]
            if min(post) < 0:
                return not_applicable(f"output size {p.out_size} is smaller than padding {p.pads} gives; it would "
                                      f"need negative post-padding {post}")
        return APPLICABLE

    def library_versions(self) -> dict[str, str | None]:
        """cuDNN's versions join the trust key: a stored plan name is only valid for them."""
        return library_versions()

    def default_config(self, problem: ProblemDescription):
        return None

    def is_valid_config(self, problem: ProblemDescription, config) -> bool:
        if not config:
            return True
        return (isinstance(config, dict) and set(config) == {"plan"} and isinstance(config["plan"], str)
                and bool(config["plan"]))

    def config_space(self, problem: ProblemDescription):
        """One {"plan": name} per plan that builds (needs the GPU: builds every plan)."""
        if not self.applicability(problem):
            return
        for name, _ in list_plans(problem):
            yield {"plan": name}

    # a find measures the heuristics' first two plans at once and the others in the background: on
    # ResNet-50's 68 problems at batch 48 the fastest plan was among the first three in 70-81% of them,
    # and the find's answer without the others was 0-1.1% slower in geomean, 14% at worst; the third plan
    # then made no FP32 find's answer faster and AMP's by 0.18% in geomean, 3.1% at worst, for 0.15-0.3 s
    # of verify and timing per first step (bench/results/README.md, session-ref)
    configs_now = 2

    def find_configs(self, problem: ProblemDescription, limit: int | None = None) -> list:
        """Each plan is its own candidate in a find (engine + knobs name, up to MIOFIND_CUDNN_PLANS
        of them in cuDNN's heuristic order, default 8, or ``limit``); the fastest is kept and stored. A
        ``limit`` (a find's first plans, the others measured once no find runs) passes over runtime-compiled
        plans (MIOFIND_CUDNN_DEFER_RTC), which ``more_configs`` then reports; where every plan is one, None (the
        heuristics' first plan, built now)."""
        return [{"plan": name} for name, _ in first_plans(problem, limit)] or [None]

    def more_configs(self, problem: ProblemDescription, listed: list) -> bool:
        """Whether the limited listing passed over plans (runtime-compiled ones) that the full one holds."""
        return bool(deferred_plans(problem))

    def workspace_bytes(self, problem: ProblemDescription, config=None) -> int:
        """The plan's workspace (builds the graph); 0 when it cannot be built (get_solution then says why)."""
        if not self.applicability(problem) or not self.is_valid_config(problem, config):
            return 0
        try:
            native = _native_plan(problem, config["plan"]) if config else None
            return native.workspace if native is not None else resolve(problem, config)[1].workspace
        except Exception:
            return 0

    def get_solution(self, problem: ProblemDescription, config=None) -> ConvSolution:
        """A prebuilt solution running one plan; its config names the concrete plan chosen."""
        p = problem.as_conv()
        a = self.applicability(p)
        if not a:
            raise ValueError(f"{self.id} does not apply to {p.key()}: {a.reason}")
        if not self.is_valid_config(p, config):
            raise ValueError(f"config={config!r}: {self.id} expects None or {{'plan': <cuDNN plan name>}}")
        native = _native_plan(p, config["plan"]) if config else None
        if native is not None:
            # a stored plan replayed natively alone: no frontend graph or plan built (NativePlan)
            return ConvSolution(self.id, [], native.workspace, lambda kernels: native.invoker(),
                                {"plan": native.name}, prebuilt=True)
        g, plan = resolve(p, config)

        def factory(kernels):
            with _LOCK:
                return g.invoker(plan)

        return ConvSolution(self.id, [], plan.workspace, factory, {"plan": plan.name}, prebuilt=True)
