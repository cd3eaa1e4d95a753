"""Kernel sources and their compilation: NVRTC to cubins, cached in process and on disk.

Sources live in ``kernels_src/`` (installed as ``miofind.kernels_src``). ``#include "x.cuh"`` of
our own headers is expanded here, so the source hash (which keys the FindDB trust check and the
binary cache) covers every line that is compiled. The binary cache (MIOpen's "binary cache") is a
directory of cubins named by a hash of (expanded source, options, GPU architecture, NVRTC version):
``$MIOFIND_KERNEL_CACHE`` or ``<user cache dir>/miofind/cubin``. ``is_compiled`` tells whether a
kernel would need no new compilation, which the dynamic_hybrid find mode relies on.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import logging
import os
import re
import sys
import threading
import time
from importlib import resources
from pathlib import Path

from . import env
from .solver import KernelInfo

_log = logging.getLogger(__name__)

BASE_OPTIONS = ("-std=c++17",)
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)


class CompileError(RuntimeError):
    """A kernel failed to compile; the message carries NVRTC's log."""


def _kernels_dir() -> Path:
    return Path(str(resources.files("miofind.kernels_src")))


@functools.lru_cache(maxsize=None)
def kernel_source(name: str) -> str:
    """The source of kernels_src/<name> with our own ``#include "..."`` headers expanded."""
    path = _kernels_dir() / name
    if not path.is_file():
        raise FileNotFoundError(f"kernel source {name!r} not found in {_kernels_dir()}")
    text = path.read_text()
    seen: set[str] = set()

    def expand(m):
        inc = m.group(1)
        if inc in seen:
            return ""
        seen.add(inc)
        return _INCLUDE_RE.sub(expand, (_kernels_dir() / inc).read_text().replace("#pragma once", ""))

    return f"// miofind kernel {name}\n" + _INCLUDE_RE.sub(expand, text)


@functools.lru_cache(maxsize=None)
def source_hash(*names: str) -> str:
    h = hashlib.sha256()
    for n in sorted(names):
        h.update(n.encode())
        h.update(kernel_source(n).encode())
    return h.hexdigest()[:16]


def cuda_include_dirs() -> list[str]:
    """Directories holding cuda_fp16.h / cuda_bf16.h: CUDA_PATH, /usr/local/cuda, pip's nvidia/*."""
    dirs = []
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(var):
            dirs.append(os.path.join(os.environ[var], "include"))
    dirs.append("/usr/local/cuda/include")
    for sp in sys.path:
        dirs += glob.glob(os.path.join(sp, "nvidia", "cu1*", "include"))
        dirs += glob.glob(os.path.join(sp, "nvidia", "cuda_runtime", "include"))
    return [d for d in dict.fromkeys(dirs) if os.path.isfile(os.path.join(d, "cuda_fp16.h"))][:1]


def _options(kinfo: KernelInfo) -> tuple[str, ...]:
    return BASE_OPTIONS + tuple(f"-I{d}" for d in cuda_include_dirs()) + kinfo.compile_options()


def kernel_cache_dir() -> Path:
    """``env.kernel_cache_dir()`` ($MIOFIND_KERNEL_CACHE, $MIOPEN_CUSTOM_CACHE_DIR), else the per-user cache."""
    d = env.kernel_cache_dir()
    if d is None:
        import platformdirs
        d = Path(platformdirs.user_cache_dir("miofind")) / "cubin"
    return d


@functools.lru_cache(maxsize=None)
def _nvrtc_version() -> str:
    from cupy_backends.cuda.libs import nvrtc
    return "%d.%d" % nvrtc.getVersion()


def _device_arch() -> str:
    from .device import current_device
    return current_device().arch


def binary_key(kinfo: KernelInfo, arch: str) -> str:
    """The binary-cache file name of a kernel: a hash of its expanded source, options, target and NVRTC."""
    h = hashlib.sha256()
    for part in (kernel_source(kinfo.source), "\0".join(_options(kinfo)), arch, _nvrtc_version()):
        h.update(part.encode())
        h.update(b"\1")
    return h.hexdigest()[:32]


_module_cache: dict[tuple, object] = {}
_module_lock = threading.Lock()


def _module_key(kinfo: KernelInfo, arch: str) -> tuple:
    return (kinfo.source, source_hash(kinfo.source), _options(kinfo), arch)


def is_compiled(kinfo: KernelInfo) -> bool:
    """Whether ``kinfo`` is loaded in this process or its cubin is in the binary cache for this GPU."""
    arch = _device_arch()
    if _module_key(kinfo, arch) in _module_cache:
        return True
    return (kernel_cache_dir() / f"{binary_key(kinfo, arch)}.cubin").is_file()


def compile_kernel(kinfo: KernelInfo):
    """Compile (or fetch from the in-process or binary cache) and return the cupy.RawKernel for ``kinfo``."""
    import cupy

    arch = _device_arch()
    key = _module_key(kinfo, arch)
    mod = _module_cache.get(key)
    if mod is None:
        path = kernel_cache_dir() / f"{binary_key(kinfo, arch)}.cubin"
        if path.is_file():
            _log.debug("binary cache hit: %s %s (%s)", kinfo.source, kinfo.name, path.name)
        else:
            _log.debug("binary cache miss: %s %s", kinfo.source, kinfo.name)
            cubin = nvrtc_compile(kinfo, arch)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(cubin)
            os.replace(tmp, path)  # atomic: a reader never sees a partial cubin
        try:
            mod = cupy.RawModule(path=str(path))
        except Exception as e:  # a damaged cache file: rebuild it once
            _log.warning("cached cubin %s cannot be loaded (%s): compiling it again", path, e)
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            cubin = nvrtc_compile(kinfo, arch)
            path.write_bytes(cubin)
            try:
                mod = cupy.RawModule(path=str(path))
            except Exception:
                raise CompileError(f"{kinfo.source}: cannot load the compiled cubin: {e}") from None
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
    t0 = time.perf_counter()
    prog = nvrtc.createProgram(src, kinfo.source, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [f"-arch={arch}", *_options(kinfo)])
        except Exception as e:
            raise CompileError(f"{kinfo.source} ({' '.join(kinfo.compile_options())}): {e}\n"
                               f"{nvrtc.getProgramLog(prog).strip()[:4000]}") from None
        cubin = nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)
    _log.debug("NVRTC compiled %s %s (%s) for %s in %.0f ms", kinfo.source, kinfo.name,
               " ".join(kinfo.compile_options()), arch, (time.perf_counter() - t0) * 1e3)
    return cubin
