"""The C++ hot path of miofind.torch (``_fast.cpp``): building it, loading it, and giving it a plan.

A planned convolution (``functional._Plan``) whose forward, backward-data and backward-weights solutions are
kernel launches (``launch.recipe``: implicit GEMM, the Hopper family with its tensor maps, depthwise, tiled
direct) hands their packed launches to the extension, which then runs the forward and, as a C++ autograd node,
the backward: no Python frame, no GIL hand-over to the autograd thread, per call. It encodes the Hopper kernels'
tensor maps itself (``miofind.tma``'s specs, one map per pointer, kept). A traceable invoker (GEMM, Winograd, FFT:
kernel launches and cuBLASLt matmuls or cuFFT calls, ``launch.trace``) is replayed the same way, its library calls
made through their function pointers, on the stream it was traced on. A direction it cannot launch itself (a cuDNN
plan) calls back the
plan's Python path for that direction alone, so the answers are the Python path's. A fused plan's forward takes the
bias into its epilogue (the Hopper forward's ``launch.BIAS`` pointer, or cuDNN's fused graph through its Python path)
with its activation, and its C++ backward gives the bias's gradient too.

The extension also holds the custom ops' CUDA kernels (``ops_kernels``, ``_ops._op_python``): a call whose key a
call through Python learned launches that direction's recipe from C++, as ``torch.compile``'s graphs call the ops.

The extension is compiled against the installed PyTorch with the C++ compiler (``$CXX``, else ``c++``/``g++``)
into the kernel cache, under a name keyed by the source, PyTorch's version and the Python ABI, so an upgrade of
either builds a new one and never loads a stale one. ``MIOFIND_TORCH_CPP`` says when (``env.torch_cpp``);
``miofind warmup`` builds it at install time. Without a compiler, or with a failed build (its log is kept
beside it), miofind.torch stays on the Python path.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

NAME = "miofind_torch_fast"
SOURCE = Path(__file__).with_name("_fast.cpp")

use = True              # the C++ path's switch (``functional._fast_ok``): benchmarks time both paths in one process
trace_recipes = True    # whether traceable invokers (GEMM, Winograd, FFT) get recipes: benchmarks time both in one process
arm_modules = True      # whether modules arm repeat calls (``modules._Miofind``): benchmarks time both
_lock = threading.Lock()
_module = None          # the loaded extension, or False once it cannot be had in this process
_building: threading.Thread | None = None
_error: str | None = None
_ops_module = None      # the extension whose C++ CUDA kernels the custom ops dispatch to (``ops_kernels``)
_ops_done = False       # ops_kernels has registered them, or never will in this process


def compiler() -> str | None:
    """The C++ compiler: ``$CXX``, else ``c++`` or ``g++`` on PATH; None if there is none."""
    cxx = os.environ.get("CXX")
    if cxx:
        return shutil.which(cxx) or cxx
    return shutil.which("c++") or shutil.which("g++")


def _digest() -> str:
    import torch
    h = hashlib.sha256(SOURCE.read_bytes())
    h.update(f"{torch.__version__}|{sysconfig.get_config_var('EXT_SUFFIX')}|{sys.version_info[:2]}".encode())
    return h.hexdigest()[:20]


def library_path() -> Path:
    """Where the extension for this PyTorch and Python lives (built or not)."""
    from ..compile import kernel_cache_dir
    return kernel_cache_dir() / "torch-ext" / _digest() / (NAME + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))


def build_command(out: Path, cxx: str) -> list[str]:
    """The compiler command that builds the extension into ``out``."""
    import torch
    from torch.utils import cpp_extension
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    cmd = [cxx, "-O2", "-std=c++17", "-w", "-shared", "-fPIC", f"-DTORCH_EXTENSION_NAME={NAME}",
           "-DTORCH_API_INCLUDE_EXTENSION_H", f"-D_GLIBCXX_USE_CXX11_ABI={abi}"]
    cmd += [f"-I{p}" for p in cpp_extension.include_paths()]
    cmd += [f"-I{sysconfig.get_paths()['include']}", str(SOURCE), f"-L{lib}", "-lc10", "-ltorch", "-ltorch_cpu",
            "-ltorch_python", f"-Wl,-rpath,{lib}", "-o", str(out)]
    return cmd


def build(timeout: float = 600) -> Path:
    """Compile the extension into the kernel cache (a no-op where it is there); its path. RuntimeError with the
    compiler's output when there is no compiler or the build fails (the log stays beside the library)."""
    out = library_path()
    if out.exists():
        return out
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("miofind.torch C++ extension: no C++ compiler found (set CXX, or install g++)")
    out.parent.mkdir(parents=True, exist_ok=True)
    from ..fileio import exclusive

    with exclusive(out.parent / "build.lock"):   # one build at a time: the others then find it built
        if out.exists():
            return out
        return _build(out, cxx, timeout)


def _build(out: Path, cxx: str, timeout: float) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=NAME, suffix=".so.tmp", dir=out.parent)
    os.close(fd)
    try:
        r = subprocess.run(build_command(Path(tmp), cxx), capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            (out.parent / "build.log").write_text(r.stdout + r.stderr)
            raise RuntimeError(f"miofind.torch C++ extension: {cxx} failed (exit {r.returncode}); log in "
                               f"{out.parent / 'build.log'}: {(r.stderr or r.stdout).strip()[-600:]}")
        os.replace(tmp, out)        # atomic: a concurrent builder's result is the same file
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def _load(path: Path):
    loader = importlib.machinery.ExtensionFileLoader(NAME, str(path))
    spec = importlib.util.spec_from_file_location(NAME, str(path), loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    import ctypes

    from ..launch import cu_launch_kernel
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:         # no driver: every call takes the Python path (which reports it)
        return mod
    def address(name):      # 0 where the driver lacks it (tensor maps: before CUDA 12): the Python path then
        f = getattr(cuda, name, None)
        return (ctypes.cast(f, ctypes.c_void_p).value or 0) if f is not None else 0
    mod.init(cu_launch_kernel(), *[address(f) for f in ("cuStreamIsCapturing", "cuTensorMapEncodeTiled",
                                                         "cuTensorMapEncodeIm2col", "cuLaunchKernelEx")])
    return mod


def ops_kernels(python, autograd=None) -> None:
    """Make the custom ops' CUDA kernels the extension's C++ ones, with ``python`` (``_ops._op_python``) their Python
    path, once per process, from its main thread (``_ops._run`` asks on each CUDA call until then): the dispatcher's
    table is not written while another thread may read it, as a training loop's main thread is the one that calls the
    ops (the extension's background build never registers them). Loads the extension where it is built, else starts
    its build (``module``); never where it is off or failed. ``autograd`` (``_ops._autograd_kernels``, called once
    here; it may answer None) gives custom_op's autograd kernels of the three ops: then the extension's C++ autograd
    kernels take the calls that record nothing for autograd and hand it the others."""
    global _ops_module, _ops_done
    if threading.current_thread() is not threading.main_thread():
        return
    mod = module()
    if mod is None:
        if _module is False:
            _ops_done = True
        return
    with _lock:
        if not _ops_done:
            _ops_done = True
            # False where this load had registered them already (its library file loaded once more, as a test's
            # own load of the same build is): the kernels are still this load's
            if mod.register_ops(python, autograd() if autograd else None) or mod.ops_registered():
                _ops_module = mod


def ops_clear() -> None:
    """Forget the op keys the extension learned (``_ops._learn``): a deferred solution may replace their Entries, or
    ``_policy.clear`` forgot them; the next call of each goes through Python and learns it again."""
    m = _ops_module
    if m:
        m.ops_clear()


def ops_stats() -> tuple[int, int, int, int]:
    """(custom op calls launched from C++, calls through their Python path, calls the C++ autograd kernels
    redispatched below autograd, calls they handed to custom_op's Python autograd kernel) since the process
    started."""
    m = _ops_module
    if not m:
        return 0, 0, 0, 0
    _, hits, misses, _on = m.ops_stats()
    below, python, _on, _registered = m.ops_autograd_stats()
    return hits, misses, below, python


def build_detached(timeout: float = 900) -> Path:
    """``build()`` in a detached child process, waited for: the compile survives this process's exit (a short
    process leaves the extension built for the next), and PyTorch's ``cpp_extension`` module (half a second to
    import, holding the GIL) is imported there, not here. The child's output goes to ``builder.log`` beside the
    library (one file, rewritten by each build). ``build()`` in this process where there is no interpreter to
    start (an embedded one). RuntimeError with the child's output when it fails."""
    out = library_path()
    if out.exists():
        return out
    if not sys.executable:
        return build(timeout)
    out.parent.mkdir(parents=True, exist_ok=True)
    from ..env import child_env

    log_path = out.parent / "builder.log"
    with open(log_path, "w") as fh:
        r = subprocess.Popen([sys.executable, "-c", "from miofind.torch._fast import build; build()"],
                             stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, env=child_env(),
                             start_new_session=True)
    rc = r.wait(timeout)
    if rc != 0 or not out.exists():
        tail = log_path.read_text(errors="replace").strip()[-800:]
        raise RuntimeError(f"miofind.torch C++ extension: the build process failed (exit {rc}; {log_path}): {tail}")
    return out


def _background() -> None:
    global _module, _error
    try:
        path = build_detached()
        mod = _load(path)
    except Exception as e:      # noqa: BLE001  the Python path stays
        _error = f"{type(e).__name__}: {e}"
        log.warning("miofind.torch: the C++ hot path is not available (%s); using the Python path", _error)
        with _lock:
            _module = False
        return
    with _lock:
        _module = mod


def module():
    """The loaded extension, or None (off, not built yet, or unavailable: ``status()`` says which)."""
    global _module, _building, _error
    m = _module
    if m is not None:
        return m or None
    if _building is not None:       # building in the background: it sets _module when done
        return None
    from .. import env
    mode = env.torch_cpp()
    with _lock:
        if _module is not None:
            return _module or None
        if mode == "off":
            _module, _error = False, "MIOFIND_TORCH_CPP=off"
            return None
        try:
            path = library_path()
            if path.exists():
                _module = _load(path)
                return _module
        except Exception as e:      # noqa: BLE001
            _module, _error = False, f"{type(e).__name__}: {e}"
            return None
        if mode == "background":
            if _building is None:
                _building = threading.Thread(target=_background, name="miofind-torch-cpp", daemon=True)
                _building.start()
            return None
    _background()       # sync
    return _module or None


def possible() -> bool:
    """Whether planned calls in this process may take the C++ path: it is switched on (``use``, not
    ``MIOFIND_TORCH_CPP=off``) and loaded, building, or buildable (a C++ compiler), not failed."""
    if not use or _module is False:
        return False
    if _module:
        return True
    from .. import env
    return env.torch_cpp() != "off" and compiler() is not None


def launches(entry) -> bool:
    """Whether the C++ path launches ``entry`` itself (``recipe``; an Entry waiting for its specialised build
    counts where its generic build is launches too: both are the same solver's)."""
    try:
        return recipe(entry) is not None
    except NotReady:
        g = getattr(entry.invoker, "generic", entry.invoker)
        return getattr(g, "recipe", None) is not None or (trace_recipes and getattr(g, "traceable", False))


def wait(timeout: float | None = None) -> bool:
    """Wait for a background build; whether the extension is loaded."""
    t = _building
    if t is not None:
        t.join(timeout)
    return bool(_module)


def status() -> str:
    """One line: loaded (and from where), building, off, or why not."""
    if _module:
        return f"loaded ({_module.__file__})"
    if _module is None:
        return "building" if _building is not None and _building.is_alive() else "not loaded yet"
    return f"not available: {_error}"


# -- plans ----------------------------------------------------------------------------------------------------------

MAX_MAPS = 16          # tensor maps one direction's launches may take (_fast.cpp's MAX_MAPS)


class NotReady(Exception):
    """An Entry still runs a generic build while its specialised one compiles (``tiered.Switching``)."""


def _traced(inv, entry, stream: int) -> tuple | None:
    """The C++ recipe of a traceable invoker (``launch.traced_steps``: kernel launches, library calls and library
    kernels read from a graph capture) on ``stream``, kept on the invoker per stream; None where it cannot be
    traced. Its library calls and kernels use that stream's cuBLASLt workspace (and the calls carry the stream), so
    the extension replays it on that stream alone (the Python path elsewhere)."""
    from .. import launch as L
    from .. import cublas
    cache = getattr(inv, "_fast_traced", None)
    if cache is None:
        cache = inv._fast_traced = {}
    key = (stream, cublas.capture_kernels)     # matmuls as their captured kernels, or as cuBLASLt calls
    if key in cache:
        return cache[key]
    try:
        # a first trace on a stream plans its matmuls and may make that stream's cuBLASLt workspace, as an Entry's
        # first call does
        from ._alloc import first_call_allocator
        with first_call_allocator():
            steps = L.traced_steps(inv, bool(entry.ws_bytes), stream)
    except L.NotYet as e:       # cuBLASLt sets itself up (the bridge GEMM runs meanwhile): traced on a later call
        raise NotReady(f"{entry.solver_id}: {e}") from None
    except L.NotTraceable as e:
        log.info("miofind.torch: %s is not replayed from C++ (%s)", entry.solver_id, e)
        steps = None
    out = None
    # refused: a library call with more arguments, or a library kernel with a larger parameter buffer, than the
    # extension holds
    if steps and all(st[0] == 0 or len(st[5]) <= (MAX_CALL_ARGS if st[0] == 1 else MAX_CELLS) for st in steps):
        kernels = [(func, grid, block, smem, values, [i for i, _, _ in slots], [r for _, r, _ in slots],
                    [o for _, _, o in slots], [], kind, nbytes)
                   for kind, func, grid, block, smem, values, slots, nbytes in steps]
        has_call = any(k[9] for k in kernels)
        out = (kernels, int(entry.ws_bytes), bool(entry.swap), [L.TRACE_ALIGN] * 4, [],
               int(stream) if has_call else -1)
    cache[key] = out
    return out


MAX_CALL_ARGS = 16     # a library call's 64-bit arguments (_fast.cpp's MAX_CALL_ARGS)
MAX_CELLS = 512        # a library kernel's parameter buffer in 8-byte cells (_fast.cpp's MAX_CELLS)


def recipe(entry, stream: int | None = None) -> tuple | None:
    """An Entry's launches as the extension takes them, or None when its invoker is not kernel launches only (or
    cuBLASLt matmuls besides, traced on ``stream``: the current one when None); NotReady while it runs a generic
    build that a specialised one will replace."""
    inv = getattr(entry, "invoker", None)
    if type(inv).__name__ == "Switching":
        if inv.specialised is None:
            raise NotReady(entry.solver_id)
        inv = inv.specialised
    spec = getattr(inv, "recipe", None)
    if spec is None:
        if not trace_recipes or not getattr(inv, "traceable", False):
            return None
        if stream is None:
            import torch
            stream = torch._C._cuda_getCurrentRawStream(entry.dev)
        return _traced(inv, entry, stream)
    steps, align, ws_needed = spec
    kernels, specs, spec_ids = [], [], {}
    for launch, roles, maps in steps:
        values, slots, map_params = launch.packed()
        if len(slots) != len(roles) or len(map_params) != len(maps):
            return None
        mp = []
        for param, (role, off, ms) in zip(map_params, maps):
            if id(ms) not in spec_ids:      # one map per (spec, pointer), shared by the launches that read it
                spec_ids[id(ms)] = len(specs)
                specs.append(ms.fields)
            mp.append((param, role, off, spec_ids[id(ms)]))
        kernels.append((launch.function(), launch.grid, launch.block, launch.shared_mem, values, slots,
                        [r for r, _ in roles], [o for _, o in roles], mp, 3 if launch.dependent() else 0))
    if sum(len(k[8]) for k in kernels) > MAX_MAPS:
        return None
    ws = int(entry.ws_bytes)
    if ws_needed and not ws:
        return None
    return kernels, ws, bool(entry.swap), list(align), specs, -1


def bump() -> None:
    """Disarm every module's armed call (``modules._Miofind``; the extension's ``hot``): a plan was made, remade or
    forgotten, so an armed key may now map to another plan."""
    mod = _module
    if mod:
        mod.bump()


def make_plan(plan, eb, ew) -> int | None:
    """The extension's plan for ``functional._Plan`` ``plan`` with its learned backward Entries ``eb``/``ew`` (None
    where not learned): its id, or None when the extension cannot be had in this process. A fused plan's forward
    takes the bias (its recipe's ``launch.BIAS`` pointer, else its Python path's) and its activation. NotReady while
    it builds in the background or an Entry runs a generic build: try again later."""
    mod = module()
    if mod is None:
        if _module is None:         # building
            raise NotReady("the C++ extension is building")
        return None
    import torch

    stream = torch._C._cuda_getCurrentRawStream(plan.dev)
    specs = [recipe(e, stream) if e is not None else None for e in (plan.entry, eb, ew)]
    keep = (plan.entry, eb, ew)     # the Entries' kernels stay loaded while the C++ plan may launch them

    def fwd(x, wc, bias, _keep=keep):
        return plan.forward(x, wc, bias)

    def bwd(dy, x, w, need_dx, need_dw, _keep=keep):
        return plan.backward(dy, x, w, need_dx, need_dw)
    shapes = [list(s) for s, _ in plan._dense]
    strides = [list(t) for _, t in plan._dense]
    # a recipe that calls a library carries the stream it was traced on: the plan runs from C++ there alone
    plan.pinned = stream if any(r is not None and r[5] >= 0 for r in specs) else None
    return mod.new_plan(*specs, shapes, strides, plan.dtype, plan.dev, plan.fmt is not torch.contiguous_format,
                        fwd, bwd, plan.fused, ACTS[plan.act])


ACTS = {"none": 0, "relu": 1, "gelu": 2}     # a plan's activation as the extension numbers it
