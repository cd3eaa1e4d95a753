"""Invokers: a solution's kernels compiled and bound, cached per (network_config, solver, config).

An invoker runs one solution: ``invoker(a, b, out, workspace, stream)`` with device pointers in
the order of ``ProblemDescription.io_shapes()`` and a raw stream handle (``miofind.solver``), and
for a fused problem the bias pointer as a sixth argument.
``call`` runs one on arrays (CuPy, torch, ``__cuda_array_interface__``) on CuPy's current stream
and applies the one argument swap a problem needs (a transposed problem's weights gradient).
"""

from __future__ import annotations

import json
import threading

from .compile import compile_kernel
from .device import runtime
from .launch import ptr, replay_failed, replayer, scratch
from .problem import ProblemDescription
from .registry import get_solver
from .solver import ConvSolution

_invokers: dict[tuple, tuple] = {}
_lock = threading.Lock()


def config_key(config) -> str:
    return json.dumps(config, sort_keys=True) if config else ""


def build_invoker(problem: ProblemDescription, solution: ConvSolution):
    """Compile (or fetch from the binary cache) the solution's kernels and bind them."""
    kernels = [compile_kernel(k) for k in solution.kernels]
    return solution.invoker_factory(kernels)


# what builds a run's invoker: ``miofind.tiered.run_invoker`` installs itself here when imported
# (a generic build where the specialised kernels are not compiled yet); else the specialised build
_run_builder: list = []


def set_run_builder(fn) -> None:
    """Install ``fn(problem, solver_id, config) -> (invoker, workspace bytes)`` as what builds a run's
    invoker (``miofind.tiered`` does, on import)."""
    _run_builder[:] = [fn]


def get_invoker(problem: ProblemDescription, solver_id: str, config=None):
    """(invoker, workspace bytes) of a solver for a problem, built once per process."""
    key = (problem.network_config(), solver_id, config_key(config))
    inv = _invokers.get(key)
    if inv is None:
        if _run_builder:
            inv = _run_builder[0](problem, solver_id, config)
        else:
            runtime()   # a clear NoGPUError where CuPy is not installed (a find may not have imported it)
            sol = get_solver(solver_id).get_solution(problem, config)
            inv = (build_invoker(problem, sol), sol.workspace_bytes)
        with _lock:
            _invokers[key] = inv
    return inv


def clear() -> None:
    """Forget every cached invoker and prepared solution (their kernels stay loaded)."""
    with _lock:
        _invokers.clear()
        _prepared.clear()


def call(invoker, problem: ProblemDescription, a, b, out, workspace, stream: int | None = None, bias=None) -> None:
    """Run ``invoker`` on arrays (or pointers) on ``stream`` (default: CuPy's current stream);
    ``bias`` (k elements) for a fused problem with a bias."""
    import cupy

    # A transposed problem's weights gradient is the ordinary one with the activations swapped.
    if problem.transposed and problem.direction == "W":
        a, b = b, a
    if stream is None:
        stream = cupy.cuda.get_current_stream().ptr
    if problem.fused:
        if problem.bias and bias is None:
            raise ValueError(f"bias: {problem.key()} has a fused bias; pass a bias of k={problem.k} elements")
        invoker(ptr(a), ptr(b), ptr(out), ptr(workspace), stream, ptr(bias) if problem.bias else 0)
        return
    invoker(ptr(a), ptr(b), ptr(out), ptr(workspace), stream)


# -- prepared solutions: the hot path ------------------------------------------------------------

_CL = {"NHWC": True, "NDHWC": True}

# whether a Prepared made from now on runs a solution of several launches or library calls as one native call
# (``miofind.launch.replayer``) where it can; the benchmarks turn it off to time the step-by-step path beside it
replay = True


def _logical(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """A channels-last layout's shape as torch names it (N, C, *spatial); others unchanged."""
    return (shape[0], shape[-1], *shape[1:-1]) if _CL.get(layout) else shape


def dense_layout(shape: tuple[int, ...], channels_last: bool = False) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, strides) torch gives a dense tensor of ``shape``, contiguous or channels_last(_3d), read from a
    meta tensor (``Prepared.torch_output`` and ``miofind.torch``'s forward plans allocate with them)."""
    import torch

    shape = tuple(int(v) for v in shape)
    fmt = (torch.channels_last if len(shape) == 4 else torch.channels_last_3d) if channels_last else \
        torch.contiguous_format
    return shape, torch.empty(shape, device="meta", memory_format=fmt).stride()


class Prepared:
    """One solution bound to its problem, ready to run many times (``Solution.prepare()``).

    Everything that does not depend on the data pointers is done once: the kernels are loaded,
    their argument blocks packed and launch geometry fixed, library handles and plans made, and the
    workspace size known (with one workspace buffer per stream, made on that stream and kept, when
    the caller passes none). A call checks each array with one comparison of (shape, dtype) and a
    contiguity test, reads its device pointer (``data_ptr()`` or ``.data.ptr``, never DLPack), and
    launches on the given stream, else the current one (torch's for torch tensors, CuPy's otherwise).

    Streams: what the caller orders, as in CUDA: inputs (and an output or workspace the caller
    filled) written on another stream need an event before the call; the output may be read on the
    launch stream (or after an event); a workspace the caller passes must not be in use on another
    stream at the same time, and must stay allocated until the launches are done (allocate it on
    the launch stream, or order its release with an event). What miofind orders: every kernel and
    library call of the solution runs on the launch stream, and a workspace miofind owns is made on
    that stream and used by it only, so concurrent calls on different streams (or threads) never
    share a buffer or plan. One Prepared may be called from many threads at once. The workspaces it
    makes are kept, one per stream it has run on, until it is dropped (``miofind.clear_caches``).
    """

    def __init__(self, problem: ProblemDescription, solver_id: str, config, invoker, workspace_bytes: int) -> None:
        import numpy as np

        from .tensors import numpy_dtype

        self.problem, self.solver_id, self.config = problem, solver_id, config
        self.invoker, self.workspace_bytes = invoker, int(workspace_bytes)
        shapes = tuple(tuple(s) for s in problem.io_shapes())
        d = problem.direction
        lays = {"F": (0, 1, 2), "B": (2, 1, 0), "W": (2, 0, 1)}[d]        # io order -> (x, w, y) layout index
        self._layouts = tuple(problem.layouts[i] for i in lays)
        self._shapes = shapes
        self._logical = tuple(_logical(s, lay) for s, lay in zip(shapes, self._layouts))
        # channels-last operands also take torch's (N, C, *spatial) view in channels_last memory format,
        # even where C == H == W makes the two shapes one tuple
        self._cl = tuple(bool(_CL.get(lay)) for lay in self._layouts)
        self._np = np.dtype(numpy_dtype(problem.dtype))
        self._bf16 = problem.dtype == "BF16"
        self._swap = problem.transposed and d == "W"
        self._torch = None                      # (torch dtype, channels_last formats) on first torch call
        self._ttype = None                      # torch.Tensor, once a torch tensor was seen
        self._ws: dict[int, object] = {}
        self._ws_lock = threading.Lock()
        self.device = runtime().getDevice()     # the kernels are loaded for this device
        self.names = {"F": ("x", "w", "y"), "B": ("dy", "w", "dx"), "W": ("dy", "x", "dw")}[d]
        self._fused, self._has_bias = problem.fused, bool(problem.bias)
        self._out_torch = None                  # torch_output's two (shape, strides), made on first use
        # per stream: (the invoker it replays, the native run or None, its steps' kinds); a Switching invoker's
        # run is remade when it switches to its specialised build
        self._replay = replay and not self._fused
        self._sw = invoker if type(invoker).__name__ == "Switching" else None
        self._runs: dict[int, tuple] = {}
        self._pending: set[int] = set()         # streams whose replay waits for cuBLASLt's set-up (launch.NotYet)

    # -- pointers --------------------------------------------------------------------------------
    def _torch_info(self):
        import torch

        dt = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}[self.problem.dtype]
        fmts = []
        for cl, s in zip(self._cl, self._shapes):
            fmts.append(torch.channels_last if cl and len(s) == 4 else torch.channels_last_3d if cl else
                        torch.contiguous_format)
        self._torch = (dt, tuple(fmts))
        self._ttype = torch.Tensor
        return self._torch

    def _ptr(self, a, i: int) -> int:
        tt = self._ttype
        if tt is not None and (type(a) is tt or isinstance(a, tt)):     # torch.Tensor, or a subclass (Parameter)
            # torch: one comparison each of shape (a torch.Size against a tuple), dtype and device
            dt, fmts = self._torch
            if a.dtype is dt and a.get_device() == self.device:
                if a.shape == self._shapes[i] and a.is_contiguous():
                    return a.data_ptr()
                if self._cl[i] and a.shape == self._logical[i] and a.is_contiguous(memory_format=fmts[i]):
                    return a.data_ptr()
            self._reject(a, i)
        if tt is None and type(a).__module__.startswith("torch"):
            self._torch_info()
            return self._ptr(a, i)
        cls_name = type(a).__name__
        if cls_name == "ndarray" and hasattr(a, "data") and hasattr(a.data, "ptr"):
            if a.shape == self._shapes[i] and (a.dtype == self._np or (self._bf16 and a.dtype.itemsize == 2)) \
                    and a.flags.c_contiguous and a.device.id == self.device:
                return a.data.ptr
            self._reject(a, i)
        iface = getattr(a, "__cuda_array_interface__", None)
        if iface is not None and tuple(iface["shape"]) == self._shapes[i] and iface.get("strides") is None:
            return iface["data"][0]
        self._reject(a, i)

    def _reject(self, a, i: int):
        name = self.names[i]
        mod = type(a).__module__
        if mod.startswith("torch") and not getattr(a, "is_cuda", True):
            raise ValueError(f"{name}: is a CPU torch tensor; move it to the GPU (.cuda()) first")
        if mod.startswith("torch") and a.get_device() != self.device:
            raise ValueError(f"{name} is on device {a.get_device()}: expected device {self.device}")
        if not (mod.startswith(("torch", "cupy")) or hasattr(a, "__cuda_array_interface__")):
            raise ValueError(f"{name}: expected a CUDA array (CuPy, PyTorch, or anything with "
                             f"__cuda_array_interface__), got {mod}.{type(a).__name__}")
        dev = getattr(getattr(a, "device", None), "id", None)
        if mod.startswith("cupy") and dev is not None and dev != self.device:
            raise ValueError(f"{name} is on device {dev}: expected device {self.device}")
        shape = tuple(getattr(a, "shape", ()))
        dtype = getattr(a, "dtype", None)
        raise ValueError(f"{name}: got shape {shape} dtype {dtype} (contiguous: "
                         f"{getattr(a, 'is_contiguous', lambda: getattr(getattr(a, 'flags', None), 'c_contiguous', '?'))()}); "
                         f"{self.solver_id} for {self.problem.key()} expects a dense {self.problem.dtype} tensor of shape "
                         f"{self._shapes[i]} in layout {self._layouts[i]}"
                         + (f" (or torch shape {self._logical[i]} in channels_last)" if self._cl[i] else ""))

    def torch_output(self, channels_last: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(shape, strides) of a dense output tensor as torch names it: the problem's shape, or with
        ``channels_last`` (a channels-last problem given torch's (N, C, *spatial) view) that view in
        channels_last memory format."""
        out = self._out_torch
        if out is None:
            out = self._out_torch = (dense_layout(self._shapes[2]),
                                     dense_layout(self._logical[2], channels_last=True))
        return out[bool(channels_last)]

    # -- workspace -------------------------------------------------------------------------------
    def workspace_for(self, stream: int) -> int:
        """The device address of this prepared solution's own workspace for ``stream`` (made on that
        stream at first use and kept; 0 when the solution needs none). Call it before a CUDA-graph
        capture so that the capture allocates nothing."""
        if not self.workspace_bytes:
            return 0
        buf = self._ws.get(stream)
        if buf is None:
            with self._ws_lock:
                buf = self._ws.get(stream)
                if buf is None:
                    buf = scratch(self.workspace_bytes, stream)     # (owner, address)
                    self._ws[stream] = buf
        return buf[1]

    # -- the native replay ------------------------------------------------------------------------
    def _replay_of(self, stream: int) -> tuple:
        """(invoker, run, kinds) of ``stream``: the invoker now running and its native replay there (None where
        it has none); made at the stream's first call, not while the stream captures a graph (a first trace
        may plan library calls: the call then takes the invoker, and the next one tries again)."""
        cur = self._sw.current if self._sw is not None else self.invoker
        rec = self._runs.get(stream)
        if rec is not None and rec[0] is cur:
            return rec
        if runtime().streamIsCapturing(stream):
            return (cur, None, None)
        got = replayer(cur, bool(self.workspace_bytes), stream)
        if got is False:        # cuBLASLt sets itself up: the invoker runs (on the bridge GEMM), a later call traces
            self._pending.add(stream)
            return (cur, None, None)
        self._pending.discard(stream)
        rec = (cur, *got) if got else (cur, None, None)
        self._runs[stream] = rec
        return rec

    def replays(self, stream: int) -> bool:
        """Whether a call on ``stream`` runs as one native call (``miofind.launch.replayer``)."""
        return self._replay and self._replay_of(stream)[1] is not None

    def replay(self, stream: int, a: int, b: int, out: int, workspace: int, make: bool = True) -> bool:
        """Run on raw pointers (the invoker's order, swaps applied) as the native replay of ``stream``: True when it
        ran; False where there is none (nor is one made, unless ``make`` or an earlier trace was told to wait for
        cuBLASLt's set-up) or an address is misaligned for it (nothing ran): the caller then runs the invoker. A
        failed step raises."""
        if not self._replay:
            return False
        rec = self._runs.get(stream)
        if rec is None or (self._sw is not None and rec[0] is not self._sw.current):
            if not make and stream not in self._pending:
                return False
            rec = self._replay_of(stream)
        run = rec[1]
        if run is None:
            return False
        r = run(stream, a, b, out, workspace)
        if r and r != -1:
            replay_failed(r, rec[2])
        return not r

    # -- the call --------------------------------------------------------------------------------
    def _bias_ptr(self, bias) -> int:
        """The device pointer of a fused problem's bias: k elements of the data type, dense, on this
        device (a torch tensor, a CuPy array or ``__cuda_array_interface__``); 0 without a bias."""
        if not self._has_bias:
            if bias is not None:
                raise ValueError(f"bias: {self.problem.key()} has no fused bias (bias=0); pass none")
            return 0
        if bias is None:
            raise ValueError(f"bias: {self.problem.key()} has a fused bias; pass a bias of k={self.problem.k} elements")
        k = self.problem.k
        mod = type(bias).__module__
        if mod.startswith("torch"):
            dt = self._torch[0] if self._torch is not None else self._torch_info()[0]
            if bias.dtype is dt and bias.get_device() == self.device and tuple(bias.shape) == (k,) \
                    and bias.is_contiguous():
                return bias.data_ptr()
        elif mod.startswith("cupy"):
            if tuple(bias.shape) == (k,) and (bias.dtype == self._np or (self._bf16 and bias.dtype.itemsize == 2)) \
                    and bias.flags.c_contiguous and bias.device.id == self.device:
                return bias.data.ptr
        else:
            iface = getattr(bias, "__cuda_array_interface__", None)
            if iface is not None and tuple(iface["shape"]) == (k,) and iface.get("strides") is None:
                return iface["data"][0]
        raise ValueError(f"bias: got shape {tuple(getattr(bias, 'shape', ()))} dtype {getattr(bias, 'dtype', None)}; "
                         f"{self.solver_id} for {self.problem.key()} expects a dense {self.problem.dtype} vector of "
                         f"{k} elements on device {self.device}")

    def __call__(self, a, b, out, *, workspace=None, stream=None, bias=None):
        """Run on (a, b) into ``out`` (the io order of ``ProblemDescription.io_shapes``: F (x, w) -> y,
        B (dy, w) -> dx, W (dy, x) -> dw) and return ``out``. ``bias``: a fused problem's bias (k
        elements of the data type; see ``ProblemDescription.fused``). ``workspace``: an array of at least
        ``workspace_bytes`` (or a device address), default this Prepared's own for the stream;
        ``stream``: a raw handle, a CuPy or torch stream; default the current stream (torch's for a
        torch ``a``, else CuPy's). The launches are queued, not waited for (see the class's streams
        note for what the caller orders)."""
        pa, pb, po = self._ptr(a, 0), self._ptr(b, 1), self._ptr(out, 2)
        if stream is None:
            s = current_stream(a)
        elif isinstance(stream, int):
            s = stream
        else:
            s = stream_handle(stream)
        if self._swap:
            pa, pb = pb, pa
        extra = (self._bias_ptr(bias),) if self._fused else ()
        if bias is not None and not self._fused:
            raise ValueError(f"bias: {self.problem.key()} is not a fused problem; pass none (or prepare the "
                             "problem with bias=1)")
        if workspace is None:
            pw = self.workspace_for(s) if self.workspace_bytes else 0
        else:
            pw = _workspace_ptr(workspace, self.workspace_bytes, self.solver_id)
        # several threads may launch on one stream: the launches of one call carry data through this stream's
        # state (this solution's workspace, cuBLAS's workspace of the stream, which every solution on it shares),
        # so another thread's launches on the stream must not come between them
        with stream_lock(s):
            if not self.replay(s, pa, pb, po, pw):
                self.invoker(pa, pb, po, pw, s, *extra)
        return out


_raw_stream = None


def current_stream(a) -> int:
    """The current stream's raw handle: torch's for a torch tensor (its C++ accessor where it has
    one: ``torch.cuda.current_stream()`` builds a Python object per call), else CuPy's."""
    global _raw_stream
    if type(a).__module__.startswith("torch"):
        if _raw_stream is None:
            import torch
            _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
                (lambda dev: torch.cuda.current_stream(dev).cuda_stream)
        return _raw_stream(a.get_device())
    import cupy
    return cupy.cuda.get_current_stream().ptr


def stream_handle(stream) -> int:
    """The raw handle of a CuPy stream, a torch.cuda.Stream or an int; ValueError otherwise."""
    if isinstance(stream, bool):
        raise ValueError(f"stream: expected a CuPy stream, a torch.cuda.Stream or an int handle, got {stream!r}")
    if isinstance(stream, int):
        return stream
    p = getattr(stream, "ptr", None)
    if isinstance(p, int):
        return p
    p = getattr(stream, "cuda_stream", None)
    if isinstance(p, int):
        return p
    raise ValueError(f"stream: expected a CuPy stream, a torch.cuda.Stream or an int handle, got {type(stream).__name__}")


def _workspace_ptr(workspace, need: int, solver_id: str) -> int:
    if isinstance(workspace, int):
        return workspace
    nbytes = getattr(workspace, "nbytes", None)
    if nbytes is None and hasattr(workspace, "numel"):
        nbytes = workspace.numel() * workspace.element_size()
    if nbytes is not None and nbytes < need:
        raise ValueError(f"workspace: {nbytes} bytes given, {solver_id} needs {need}")
    return ptr(workspace)


_prepared: dict[tuple, Prepared] = {}
_stream_locks: dict[int, threading.RLock] = {}


def stream_lock(stream: int) -> threading.RLock:
    """The process-wide lock of a raw stream, held while one prepared call queues its launches on it."""
    lk = _stream_locks.get(stream)
    if lk is None:
        with _lock:
            lk = _stream_locks.setdefault(stream, threading.RLock())
    return lk


def prepare(problem: ProblemDescription, solver_id: str, config=None) -> Prepared:
    """The Prepared solution of (problem, solver, config), made once per process."""
    key = (problem.network_config(), problem.key(), solver_id, config_key(config))
    pr = _prepared.get(key)
    if pr is None:
        inv, ws = get_invoker(problem, solver_id, config)
        pr = Prepared(problem, solver_id, config, inv, ws)
        with _lock:
            pr = _prepared.setdefault(key, pr)
    return pr
