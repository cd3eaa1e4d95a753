"""Kernel sources and their compilation: NVRTC through CuPy, in process and on disk.

Sources live in ``kernels_src/`` (installed as ``miofind.kernels_src``). ``#include "x.cuh"`` of
our own headers is expanded here, so the source hash (which keys the FindDB trust check and
CuPy's on-disk cubin cache) covers every line that is compiled. CuPy's cubin cache goes under the
user cache directory unless CUPY_CACHE_DIR is already set.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import re
import sys
import threading
from importlib import resources
from pathlib import Path

from .solver import KernelInfo

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
    for env in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(env):
            dirs.append(os.path.join(os.environ[env], "include"))
    dirs.append("/usr/local/cuda/include")
    for sp in sys.path:
        dirs += glob.glob(os.path.join(sp, "nvidia", "cu1*", "include"))
        dirs += glob.glob(os.path.join(sp, "nvidia", "cuda_runtime", "include"))
    return [d for d in dict.fromkeys(dirs) if os.path.isfile(os.path.join(d, "cuda_fp16.h"))][:1]


def _options(kinfo: KernelInfo) -> tuple[str, ...]:
    return BASE_OPTIONS + tuple(f"-I{d}" for d in cuda_include_dirs()) + kinfo.compile_options()


def set_cupy_cache_dir() -> None:
    if "CUPY_CACHE_DIR" not in os.environ:
        import platformdirs
        os.environ["CUPY_CACHE_DIR"] = os.path.join(platformdirs.user_cache_dir("miofind"), "cupy")


_module_cache: dict[tuple, object] = {}
_module_lock = threading.Lock()


def compile_kernel(kinfo: KernelInfo):
    """Compile (or fetch from cache) and return the cupy.RawKernel for ``kinfo``."""
    set_cupy_cache_dir()
    import cupy

    key = (kinfo.source, source_hash(kinfo.source), _options(kinfo))
    mod = _module_cache.get(key)
    if mod is None:
        try:
            mod = cupy.RawModule(code=kernel_source(kinfo.source), options=_options(kinfo))
            mod.compile()
        except Exception as e:
            log = getattr(e, "log", None) or str(e)
            raise CompileError(f"{kinfo.source} ({' '.join(kinfo.compile_options())}): {log.strip()[:4000]}") from None
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
    return cubin
