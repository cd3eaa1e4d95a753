"""Kernel sources and their compilation: NVRTC to cubins, cached in process and on disk.

Sources live in ``kernels_src/`` (installed as ``miofind.kernels_src``). ``#include "x.cuh"`` of
our own headers is expanded here, so the source hash (which keys the FindDB trust check and the
binary cache) covers every line that is compiled. The binary cache (MIOpen's "binary cache") is a
directory of cubins named by a hash of (expanded source, options, GPU architecture, NVRTC version):
``$MIOFIND_KERNEL_CACHE`` or ``<user cache dir>/miofind/cubin``. The directory is private (0700,
owned by this user; one owned by another user is refused), each ``<key>.cubin`` has a
``<key>.sha256`` beside it, and a cubin is loaded only when its bytes match that digest: a missing
or wrong digest means the kernel is compiled again. Files are written atomically
(``fileio.atomic_write``). ``is_compiled`` tells whether a kernel would need no new compilation,
which the dynamic_hybrid find mode relies on.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import logging
import os
import re
import stat
import sys
import threading
import time
from importlib import resources
from pathlib import Path

from . import env
from .fileio import atomic_write
from .solver import KernelInfo

_log = logging.getLogger(__name__)

BASE_OPTIONS = ("-std=c++17",)
CUDA_DEFAULT_ROOT = "/usr/local/cuda"
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)


# what this process compiled with NVRTC and loaded, for diagnostics (bench_models.py's first steps report them)
stats = {"nvrtc_compiles": 0, "nvrtc_s": 0.0, "modules_loaded": 0}


class CompileError(RuntimeError):
    """A kernel failed to compile; the message carries NVRTC's log."""


@functools.lru_cache(maxsize=1)
def _kernels_dir() -> Path:
    # once per process: importlib.resources costs about 0.1 ms a call, and a trust key reads many files
    return Path(str(resources.files("miofind.kernels_src")))


@functools.lru_cache(maxsize=None)
def kernel_source(name: str) -> str:
    """The source of kernels_src/<name> with our own ``#include "..."`` headers expanded."""
    return expand_source(name)[0]


def expand_source(name: str, stamp=None) -> tuple[str, dict[str, object]]:
    """(``kernel_source(name)``, {absolute path: ``stamp(path)`` taken just before the file was read, or
    None without ``stamp``}) for the source and every header it includes, directly or not, each file
    read once."""
    path = _kernels_dir() / name
    if not path.is_file():
        raise FileNotFoundError(f"kernel source {name!r} not found in {_kernels_dir()}")
    files: dict[str, object] = {}

    def read(p: Path) -> str:
        files[str(p)] = stamp(str(p)) if stamp is not None else None
        return p.read_text()

    seen: set[str] = set()

    def expand(m):
        inc = m.group(1)
        if inc in seen:
            return ""
        seen.add(inc)
        return _INCLUDE_RE.sub(expand, read(_kernels_dir() / inc).replace("#pragma once", ""))

    text = f"// miofind kernel {name}\n" + _INCLUDE_RE.sub(expand, read(path))
    return text, files


def kernel_path(name: str) -> str:
    """The absolute path of kernels_src/<name>."""
    return str(_kernels_dir() / name)


@functools.lru_cache(maxsize=None)
def source_hash(*names: str) -> str:
    h = hashlib.sha256()
    for n in sorted(names):
        h.update(n.encode())
        h.update(kernel_source(n).encode())
    return h.hexdigest()[:16]


def _loaded_library(pattern: str) -> str | None:
    """The path of a loaded shared library whose file name matches ``pattern`` (Linux), else None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rstrip("\n").split(" ")[-1]
                if path.startswith("/") and re.search(pattern, os.path.basename(path)):
                    return path
    except OSError:
        pass
    return None


def nvrtc_library_path() -> str | None:
    """The file of the NVRTC library CuPy loaded, or would load (None without CuPy's NVRTC or off Linux)."""
    try:
        _nvrtc_version()  # loads libnvrtc (CuPy's binding, or cuda.pathfinder as it does)
    except Exception:
        return None
    return _loaded_library(r"^libnvrtc\.so(\.\d+)*$")


def _absolute(entries) -> list[str]:
    # '' on sys.path (python -c, the REPL) or any relative entry means the current directory: a
    # header or library planted there must never be picked up.
    return [e for e in entries if e and os.path.isabs(e)]


@functools.lru_cache(maxsize=None)
def cuda_include_dirs() -> list[str]:
    """The directory holding cuda_fp16.h / cuda_bf16.h for NVRTC (a list of at most one).

    First the headers of the NVRTC in use: beside its library (``nvidia/cu13/include`` for the CUDA 13
    wheels, ``<toolkit>/include``) or, for the CUDA 12 wheels, ``nvidia/cuda_runtime/include``; then
    $CUDA_PATH, $CUDA_HOME and /usr/local/cuda; last the pip wheels on sys.path. Only absolute paths
    are searched, never the current directory.
    """
    dirs = []
    lib = nvrtc_library_path()
    if lib:
        for base in dict.fromkeys((os.path.dirname(lib), os.path.dirname(os.path.realpath(lib)))):
            root = os.path.dirname(base)  # nvidia/cu13, <toolkit> (lib64/), nvidia/cuda_nvrtc
            dirs.append(os.path.join(root, "include"))
            dirs.append(os.path.join(os.path.dirname(root), "cuda_runtime", "include"))  # CUDA 12 wheels
    dirs += [os.path.join(os.environ[v], "include") for v in ("CUDA_PATH", "CUDA_HOME")
             if os.path.isabs(os.environ.get(v, ""))]
    dirs.append(os.path.join(CUDA_DEFAULT_ROOT, "include"))
    for sp in _absolute(sys.path):
        dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "cu1*", "include")), reverse=True)
        dirs += glob.glob(os.path.join(sp, "nvidia", "cuda_runtime", "include"))
    return [os.path.normpath(d) for d in dict.fromkeys(dirs) if os.path.isfile(os.path.join(d, "cuda_fp16.h"))][:1]


def _options(kinfo: KernelInfo) -> tuple[str, ...]:
    return BASE_OPTIONS + tuple(f"-I{d}" for d in cuda_include_dirs()) + kinfo.compile_options()


def kernel_cache_dir() -> Path:
    """``env.kernel_cache_dir()`` ($MIOFIND_KERNEL_CACHE, $MIOPEN_CUSTOM_CACHE_DIR), else the per-user cache."""
    d = env.kernel_cache_dir()
    if d is None:
        import platformdirs
        d = Path(platformdirs.user_cache_dir("miofind")) / "cubin"
    return d


def read_cache_json(name: str, directory=None) -> dict | None:
    """The JSON object in ``<kernel cache>/<name>`` (a small file that carries work over between
    processes; ``directory``: that of another kernel cache), None where it is missing, unreadable or
    not an object."""
    try:
        with open(os.path.join(kernel_cache_dir() if directory is None else directory, name), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_cache_json(name: str, data: dict) -> None:
    """Replace ``<kernel cache>/<name>`` with ``data`` as JSON, atomically, in the private cache directory
    (``private_cache_dir``). Best effort: where the directory cannot be used nothing is written, and
    later processes redo the work the file would have saved."""
    try:
        d = private_cache_dir(create=True)
        if d is not None:
            atomic_write(os.path.join(d, name), json.dumps(data))
    except (OSError, RuntimeError, ValueError, TypeError) as e:   # RuntimeError: CompileError among them
        _log.debug("kernel cache %s not written (%s)", name, e)


def private_cache_dir(create: bool = True) -> Path | None:
    """The binary-cache directory, checked private: created 0700 (``create``); one of ours with
    looser permissions is tightened to 0700; one owned by another user, or not a directory, raises
    CompileError (nothing is loaded from it or stored in it). None if it does not exist and not ``create``.
    """
    d = kernel_cache_dir()
    if create:
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as e:
            raise CompileError(f"kernel cache directory {d}: cannot create it ({e.strerror or e})") from None
    try:
        st = os.stat(d)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise CompileError(f"kernel cache directory {d}: {e.strerror or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise CompileError(f"kernel cache directory {d} is not a directory")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise CompileError(f"kernel cache directory {d} is owned by uid {st.st_uid}, not by this user "
                           f"(uid {os.getuid()}): refusing to load or store cubins there; set "
                           "MIOFIND_KERNEL_CACHE to a private directory")
    if stat.S_IMODE(st.st_mode) & 0o077:
        try:
            os.chmod(d, 0o700)
        except OSError as e:
            raise CompileError(f"kernel cache directory {d} has mode {stat.S_IMODE(st.st_mode):03o} and cannot "
                               f"be made private ({e.strerror or e})") from None
        _log.warning("kernel cache directory %s had mode %03o: made private (0700)", d, stat.S_IMODE(st.st_mode))
    return d


def _read_owned(path: Path, limit: int) -> bytes | None:
    # A regular file of ours, read through one descriptor (no symlink followed); None otherwise.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return None
        return f.read(limit)


def cached_cubin(path: Path) -> bytes | None:
    """The cubin at ``path`` if its bytes match the digest in ``<key>.sha256`` beside it, else None
    (missing, or failing the check, which is logged: such a file is compiled again, never loaded)."""
    cubin = _read_owned(path, 1 << 30)
    if cubin is None:
        return None
    digest = _read_owned(path.with_suffix(".sha256"), 200)
    if digest is None:
        _log.warning("cached cubin %s has no digest file of ours: compiling it again", path)
        return None
    if digest.decode("ascii", "replace").strip() != hashlib.sha256(cubin).hexdigest():
        _log.warning("cached cubin %s does not match its sha256 digest: compiling it again", path)
        return None
    return cubin


# str(path) -> (``_file_key`` of the cubin, of its digest file) as they were when the cubin last passed its digest check
# in this process: a find asks about each candidate's cubin two or three times (``tiered.deferrable``, the
# preparation's ``is_compiled``, ``compile_kernel``), and reading and hashing it again cost 0.2-1 ms each time in a
# warm find (bench/results/session-dec01c/call3/)
_verified: dict[str, tuple] = {}


def _file_key(path: Path) -> tuple | None:
    """What identifies a regular file of ours at ``path`` and its contents' version (no symlink followed): device,
    inode, size, modification and change times; None where it is missing or not such a file."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def cubin_verified(path: Path) -> bool:
    """Whether ``cached_cubin(path)`` gives the cubin: answered by two ``lstat`` calls where the cubin and its digest
    file are the very files (same inode, size and times) that passed the check earlier in this process, else by the
    check."""
    key = (_file_key(path), _file_key(path.with_suffix(".sha256")))
    if None not in key and _verified.get(str(path)) == key:
        return True
    if cached_cubin(path) is None:
        return False
    if None not in key:     # the files as they were before the check: a change since makes the next ask check again
        _verified[str(path)] = key
    return True


def store_cubin(path: Path, cubin: bytes) -> None:
    """Write ``cubin`` and its digest into the binary cache atomically (each file 0600)."""
    _verified.pop(str(path), None)
    atomic_write(path, cubin)
    atomic_write(path.with_suffix(".sha256"), hashlib.sha256(cubin).hexdigest() + "\n")


def compile_into_cache(args) -> str | None:
    """A compile worker's call (``miofind.procpool``; the tuner's precompile and tiered's background builds): compile
    one kernel, ``(KernelInfo, arch, cubin path)``, into the binary cache unless it is there. Its error text, else None
    (the process that builds the kernel compiles it again and reports the error)."""
    kinfo, arch, path = args
    path = Path(path)
    if cached_cubin(path) is not None:
        return None
    try:
        store_cubin(path, nvrtc_compile(kinfo, arch))
    except CompileError as e:
        return str(e)[:2000]
    return None


def lower_priority(nice: int) -> None:
    """A compile worker's initializer: run ``nice`` steps below the process that measures. A find times
    each call with its host time, so a measuring thread that waits for a core behind NVRTC records a
    slower solution than it is; at niceness 10 a worker gets about a tenth of a core that a normal
    process wants, and all of an idle one."""
    if nice and hasattr(os, "nice"):
        try:
            os.nice(nice)
        except OSError:
            pass


@functools.lru_cache(maxsize=None)
def _nvrtc_version() -> str:
    if "cupy" not in sys.modules:       # CuPy's NVRTC binding imports CuPy to find its library
        v = _nvrtc_version_unimported()
        if v is not None:
            return v
    from cupy_backends.cuda.libs import nvrtc
    return "%d.%d" % nvrtc.getVersion()


def _nvrtc_version_unimported() -> str | None:
    """NVRTC's version, from the library ``cuda.pathfinder`` loads, which is where CuPy's NVRTC binding finds its
    own, without importing CuPy (60 ms on the H100 host: a PyTorch process's first run asks this for its binary
    cache keys); None where that does not work (the binding then answers)."""
    try:
        import ctypes

        from cuda.pathfinder import load_nvidia_dynamic_lib

        lib = ctypes.CDLL(load_nvidia_dynamic_lib("nvrtc").abs_path)
        major, minor = ctypes.c_int(), ctypes.c_int()
        if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) != 0:
            return None
        return f"{major.value}.{minor.value}"
    except Exception:
        return None


def _device_arch() -> str:
    from .device import current_device
    return current_device().arch


PRE_INCLUDE = "--pre-include="


def pre_includes(kinfo: KernelInfo) -> tuple[str, ...]:
    """The kernels_src headers a build pre-includes (``--pre-include=<name>`` options: the generic
    builds' parameter block, miofind.generic); none for the specialised builds."""
    return tuple(o[len(PRE_INCLUDE):] for o in kinfo.options if o.startswith(PRE_INCLUDE))


def binary_key(kinfo: KernelInfo, arch: str) -> str:
    """The binary-cache file name of a kernel: a hash of its expanded source, options, target and NVRTC
    (and of the text of any pre-included header)."""
    return _binary_key(kinfo, arch, kernel_source(kinfo.source), tuple(kernel_source(n) for n in pre_includes(kinfo)),
                       _nvrtc_version())


@functools.lru_cache(maxsize=8192)
def _binary_key(kinfo: KernelInfo, arch: str, source: str, pre_included: tuple[str, ...], nvrtc: str) -> str:
    # memoised on the texts themselves (a str caches its hash): a find asks for the same keys many times
    h = hashlib.sha256()
    for part in (source, "\0".join(_options(kinfo)), arch, nvrtc) + pre_included:
        h.update(part.encode())
        h.update(b"\1")
    return h.hexdigest()[:32]


_module_cache: dict[tuple, object] = {}
_module_lock = threading.Lock()


def _module_key(kinfo: KernelInfo, arch: str) -> tuple:
    return (kinfo.source, source_hash(kinfo.source), _options(kinfo), arch)


def is_compiled(kinfo: KernelInfo) -> bool:
    """Whether ``kinfo`` is loaded in this process or a verified cubin of it is in the binary cache
    for this GPU (a cache directory that is not private counts as empty)."""
    arch = _device_arch()
    if _module_key(kinfo, arch) in _module_cache:
        return True
    try:
        d = private_cache_dir(create=False)
    except CompileError:
        return False
    return d is not None and cubin_verified(d / f"{binary_key(kinfo, arch)}.cubin")


def _load(path: Path, name: str):
    stats["modules_loaded"] += 1
    if "cupy" not in sys.modules:   # a PyTorch process that has not imported CuPy: the driver's module load
        from .cumodule import DriverModule

        mod = DriverModule(path=str(path))
        mod.get_function(name).kernel   # load now, so a bad cubin fails here
        return mod
    import cupy

    mod = cupy.RawModule(path=str(path))
    mod.get_function(name)  # RawModule loads lazily: load now, so a bad cubin fails here
    return mod


def cubin_for(kinfo: KernelInfo, arch: str | None = None) -> bytes:
    """The verified cubin of ``kinfo`` for ``arch`` (default: this GPU's) from the binary cache,
    compiled and stored there first when missing. CompileError as compile_kernel."""
    arch = arch or _device_arch()
    path = private_cache_dir() / f"{binary_key(kinfo, arch)}.cubin"
    cubin = cached_cubin(path)
    if cubin is None:
        cubin = nvrtc_compile(kinfo, arch)
        store_cubin(path, cubin)
    return cubin


def compile_kernel(kinfo: KernelInfo):
    """Compile (or fetch from the in-process or binary cache) and return the cupy.RawKernel for
    ``kinfo`` (a ``cumodule.DriverKernel`` where CuPy is not imported: the same interface for launches).
    A cached cubin is loaded only after its digest check; one that fails the check, or
    passes it but cannot be loaded, is compiled again and replaced atomically. CompileError when
    compiling or loading fails or the cache directory is not private."""
    arch = _device_arch()
    key = _module_key(kinfo, arch)
    mod = _module_cache.get(key)
    if mod is None:
        path = private_cache_dir() / f"{binary_key(kinfo, arch)}.cubin"
        cached = cubin_verified(path)
        if cached:
            _log.debug("binary cache hit: %s %s (%s)", kinfo.source, kinfo.name, path.name)
        else:
            _log.debug("binary cache miss: %s %s", kinfo.source, kinfo.name)
            store_cubin(path, nvrtc_compile(kinfo, arch))
        try:
            mod = _load(path, kinfo.name)
        except Exception as e:
            if not cached:
                raise CompileError(f"{kinfo.source}: cannot load kernel {kinfo.name!r} from the compiled "
                                   f"cubin: {e}") from None
            _log.warning("cached cubin %s cannot be loaded (%s): compiling it again", path, e)
            store_cubin(path, nvrtc_compile(kinfo, arch))
            try:
                mod = _load(path, kinfo.name)
            except Exception as e2:
                raise CompileError(f"{kinfo.source}: cannot load kernel {kinfo.name!r} from the compiled "
                                   f"cubin: {e2}") from None
        with _module_lock:
            _module_cache[key] = mod
    try:
        return mod.get_function(kinfo.name)
    except Exception as e:
        raise CompileError(f"{kinfo.source}: kernel {kinfo.name!r} not found: {e}") from None


def nvrtc_compile(kinfo: KernelInfo, arch: str = "sm_90") -> bytes:
    """Compile to a cubin with NVRTC directly: needs no GPU or driver (used by CI)."""
    from cupy_backends.cuda.libs import nvrtc

    src = kernel_source(kinfo.source)
    pre = pre_includes(kinfo)
    t0 = time.perf_counter()
    prog = nvrtc.createProgram(src, kinfo.source, [kernel_source(n).encode() for n in pre], [n.encode() for n in pre])
    try:
        # a kernel that names its own target (KernelInfo.options "-arch=sm_90a": wgmma) keeps it
        target = [] if any(o.startswith("-arch=") for o in kinfo.options) else [f"-arch={arch}"]
        try:
            nvrtc.compileProgram(prog, [*target, *_options(kinfo)])
        except Exception as e:
            raise CompileError(f"{kinfo.source} ({' '.join(kinfo.compile_options())}): {e}\n"
                               f"{nvrtc.getProgramLog(prog).strip()[:4000]}") from None
        cubin = nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)
    dt = time.perf_counter() - t0
    stats["nvrtc_compiles"] += 1
    stats["nvrtc_s"] += dt
    _log.debug("NVRTC compiled %s %s (%s) for %s in %.0f ms", kinfo.source, kinfo.name,
               " ".join(kinfo.compile_options()), arch, dt * 1e3)
    return cubin
