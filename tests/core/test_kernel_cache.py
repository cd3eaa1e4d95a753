"""The binary cache and the library/header searches, on the CPU: no current-directory search paths,
a private (0700) cache directory, cubins checked against their stored sha256 before loading, and
atomic rebuilds. NVRTC and cupy.RawModule are replaced by fakes, so no GPU or CUDA is needed."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import sys
import types

import pytest

from miofind import compile as comp
from miofind import fileio
from miofind.solver import KernelInfo

KINFO = KernelInfo("direct_naive.cu", "naive_conv_fwd", (1, 1, 1), (1, 1, 1))


def _plant(path, content=b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)


# -- no current-directory search paths ---------------------------------------------------------------

@pytest.fixture
def include_search(monkeypatch, tmp_path):
    """cuda_include_dirs with no toolkit and no NVRTC found, run from a directory holding planted headers."""
    cwd = tmp_path / "cwd"
    for rel in ("nvidia/cu13/include", "rel/nvidia/cu13/include", "nvidia/cuda_runtime/include"):
        _plant(cwd / rel / "cuda_fp16.h", b"// planted")
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(comp, "CUDA_DEFAULT_ROOT", str(tmp_path / "no-toolkit"))
    monkeypatch.setattr(comp, "nvrtc_library_path", lambda: None)
    comp.cuda_include_dirs.cache_clear()
    yield cwd
    comp.cuda_include_dirs.cache_clear()


def test_include_search_skips_empty_and_relative_sys_path(include_search, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "path", ["", ".", "rel"])
    assert comp.cuda_include_dirs() == []
    # an absolute entry is searched (the search itself works)
    site = tmp_path / "site"
    _plant(site / "nvidia/cu13/include/cuda_fp16.h")
    monkeypatch.setattr(sys, "path", ["", "rel", str(site)])
    comp.cuda_include_dirs.cache_clear()
    assert comp.cuda_include_dirs() == [str(site / "nvidia/cu13/include")]


def test_include_search_skips_a_relative_cuda_path(include_search, monkeypatch):
    monkeypatch.setattr(sys, "path", [])
    monkeypatch.setenv("CUDA_PATH", "nvidia/cu13")  # relative: the planted cwd/nvidia/cu13/include
    assert comp.cuda_include_dirs() == []


@pytest.mark.parametrize("lib,headers", [
    ("site/nvidia/cu13/lib/libnvrtc.so.13", "site/nvidia/cu13/include"),            # CUDA 13 wheels
    ("site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12", "site/nvidia/cuda_runtime/include"),  # CUDA 12 wheels
    ("toolkit/lib64/libnvrtc.so.13", "toolkit/include"),                            # a CUDA toolkit
])
def test_include_search_prefers_the_headers_of_the_nvrtc_in_use(include_search, monkeypatch, tmp_path, lib, headers):
    _plant(tmp_path / lib)
    _plant(tmp_path / headers / "cuda_fp16.h")
    other = tmp_path / "cuda-other"
    _plant(other / "include/cuda_fp16.h")
    monkeypatch.setenv("CUDA_PATH", str(other))
    monkeypatch.setattr(comp, "CUDA_DEFAULT_ROOT", str(other))
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")])
    monkeypatch.setattr(comp, "nvrtc_library_path", lambda: str(tmp_path / lib))
    assert comp.cuda_include_dirs() == [str(tmp_path / headers)]
    # NVRTC not found: CUDA_PATH, then the default toolkit, then the wheels on sys.path
    monkeypatch.setattr(comp, "nvrtc_library_path", lambda: None)
    comp.cuda_include_dirs.cache_clear()
    assert comp.cuda_include_dirs() == [str(other / "include")]


def test_cufft_search_skips_the_current_directory(monkeypatch, tmp_path):
    from miofind.solvers import fft_cufft

    cwd = tmp_path / "cwd"
    for rel in ("nvidia/cufft/lib", "nvidia/cu13/lib", "rel/nvidia/cufft/lib", "lib64"):
        _plant(cwd / rel / "libcufft.so.12")
    site = tmp_path / "site"
    _plant(site / "nvidia/cufft/lib/libcufft.so.12")
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "path", ["", ".", "rel", str(site)])
    monkeypatch.setenv("CUDA_PATH", ".")
    monkeypatch.setenv("CUDA_HOME", "")
    tried = []

    def fake_cdll(path, *a, **k):
        tried.append(path)
        raise OSError("fake: not loaded")

    monkeypatch.setattr(fft_cufft, "_lib", None)
    monkeypatch.setattr(fft_cufft.ctypes, "CDLL", fake_cdll)
    with pytest.raises(RuntimeError, match="libcufft not found"):
        fft_cufft.library()
    assert str(site / "nvidia/cufft/lib/libcufft.so.12") in tried  # the absolute entry is searched
    # bare names ("libcufft.so.12") go to the dynamic linker's own search; any path must be absolute
    planted = [p for p in tried if "/" in p and (not os.path.isabs(p) or os.path.realpath(p).startswith(f"{cwd}{os.sep}"))]
    assert planted == [], f"searched the current directory: {planted}"


# -- the private cache directory ---------------------------------------------------------------------

@pytest.fixture
def cache(monkeypatch, tmp_path):
    d = tmp_path / "cache" / "cubin"
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(d))
    return d


def test_cache_dir_is_created_private(cache):
    assert comp.private_cache_dir(create=False) is None and not cache.exists()  # a lookup creates nothing
    assert comp.private_cache_dir() == cache
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_a_loose_cache_dir_of_ours_is_tightened(cache, caplog):
    cache.mkdir(parents=True)
    cache.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger="miofind.compile"):
        assert comp.private_cache_dir() == cache
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert "made private" in caplog.text


def test_a_cache_dir_of_another_user_is_refused(cache, monkeypatch):
    cache.mkdir(parents=True, mode=0o700)
    owner = cache.stat().st_uid
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    with pytest.raises(comp.CompileError, match=r"owned by uid \d+, not by this user"):
        comp.private_cache_dir()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700  # left alone


# -- cubins checked against their digest -------------------------------------------------------------

class FakeRawModule:
    """cupy.RawModule(path=...) that records the bytes it loads; cubins starting b'BAD' fail to load."""
    loaded: list[bytes] = []

    def __init__(self, *, path):
        self.path, self.data = path, None

    def get_function(self, name):
        if self.data is None:  # like CuPy, loads the file at the first get_function
            data = open(self.path, "rb").read()
            if data.startswith(b"BAD"):
                raise RuntimeError("CUDA_ERROR_INVALID_IMAGE")
            FakeRawModule.loaded.append(data)
            self.data = data
        return ("kernel", name, self.data)


@pytest.fixture
def fake_gpu(monkeypatch, cache):
    """compile_kernel with fake NVRTC (each compile returns new bytes) and a fake cupy."""
    compiled = []

    def nvrtc(kinfo, arch="sm_90"):
        compiled.append(b"\x7fELF fake cubin %d" % len(compiled))
        return compiled[-1]

    FakeRawModule.loaded = []
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(RawModule=FakeRawModule))
    monkeypatch.setattr(comp, "nvrtc_compile", nvrtc)
    monkeypatch.setattr(comp, "_nvrtc_version", lambda: "13.0")
    monkeypatch.setattr(comp, "_device_arch", lambda: "sm_90")
    monkeypatch.setattr(comp, "_module_cache", {})
    path = cache / f"{comp.binary_key(KINFO, 'sm_90')}.cubin"
    return types.SimpleNamespace(compiled=compiled, path=path, digest=path.with_suffix(".sha256"),
                                 fresh=lambda: monkeypatch.setattr(comp, "_module_cache", {}))


def test_compiled_cubins_are_stored_with_their_digest_and_reused(fake_gpu):
    assert not comp.is_compiled(KINFO)
    k = comp.compile_kernel(KINFO)
    assert k[2] == fake_gpu.compiled[0] and len(fake_gpu.compiled) == 1
    assert fake_gpu.path.read_bytes() == fake_gpu.compiled[0]
    assert fake_gpu.digest.read_text().strip() == hashlib.sha256(fake_gpu.compiled[0]).hexdigest()
    for f in (fake_gpu.path, fake_gpu.digest):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert sorted(p.name for p in fake_gpu.path.parent.iterdir()) == sorted([fake_gpu.path.name, fake_gpu.digest.name])
    fake_gpu.fresh()  # a new process: loads the verified cubin, compiles nothing
    assert comp.is_compiled(KINFO)
    assert comp.compile_kernel(KINFO)[2] == fake_gpu.compiled[0] and len(fake_gpu.compiled) == 1


def test_a_cubin_that_passed_is_not_read_again_until_its_files_change(fake_gpu, monkeypatch):
    """A cubin that passed its digest check in this process is taken again on the ``lstat`` of it and its digest file
    alone; a change to either file (a rewrite, a new digest) makes the next ask check it again."""
    comp.compile_kernel(KINFO)
    fake_gpu.fresh()
    reads = []
    real = comp.cached_cubin
    monkeypatch.setattr(comp, "cached_cubin", lambda path: (reads.append(path), real(path))[1])
    assert comp.is_compiled(KINFO) and len(reads) == 1
    assert comp.is_compiled(KINFO) and comp.compile_kernel(KINFO)[2] == fake_gpu.compiled[0] and len(reads) == 1
    fake_gpu.fresh()
    fake_gpu.digest.write_text("0" * 64 + "\n")       # the cubin untouched, its digest replaced
    assert not comp.is_compiled(KINFO) and len(reads) == 2
    assert comp.compile_kernel(KINFO)[2] == fake_gpu.compiled[1] and len(fake_gpu.compiled) == 2
    fake_gpu.fresh()
    assert comp.is_compiled(KINFO) and len(reads) == 4      # the rebuilt files: checked (then remembered)
    fake_gpu.path.write_bytes(b"\x7fELF rewritten in place, same digest file")
    assert not comp.is_compiled(KINFO) and len(reads) == 5


@pytest.mark.parametrize("damage", ["tamper", "no digest", "bad digest", "symlink"])
def test_a_cubin_failing_its_check_is_rebuilt_not_loaded(fake_gpu, caplog, tmp_path, damage):
    comp.compile_kernel(KINFO)
    evil = b"\x7fELF planted by someone else"
    if damage == "tamper":
        fake_gpu.path.write_bytes(evil)
    elif damage == "no digest":
        fake_gpu.path.write_bytes(evil)
        fake_gpu.digest.unlink()
    elif damage == "bad digest":
        fake_gpu.digest.write_text("0" * 64 + "\n")
        evil = fake_gpu.compiled[0]  # even the right bytes are not trusted under a wrong digest
    else:  # a link to a file elsewhere, with a matching digest
        target = tmp_path / "elsewhere.cubin"
        target.write_bytes(evil)
        fake_gpu.path.unlink()
        fake_gpu.path.symlink_to(target)
        fake_gpu.digest.write_text(hashlib.sha256(evil).hexdigest())
    fake_gpu.fresh()
    FakeRawModule.loaded = []
    assert not comp.is_compiled(KINFO)
    with caplog.at_level(logging.WARNING, logger="miofind.compile"):
        k = comp.compile_kernel(KINFO)
    assert len(fake_gpu.compiled) == 2 and k[2] == fake_gpu.compiled[1]
    assert FakeRawModule.loaded == [fake_gpu.compiled[1]]  # the damaged file was never loaded
    assert not fake_gpu.path.is_symlink() and fake_gpu.path.read_bytes() == fake_gpu.compiled[1]
    assert fake_gpu.digest.read_text().strip() == hashlib.sha256(fake_gpu.compiled[1]).hexdigest()
    if damage != "symlink":  # (a link is not a file of ours: simply a miss)
        assert "compiling it again" in caplog.text


def test_a_verified_cubin_that_cannot_load_is_rebuilt_atomically(fake_gpu, monkeypatch):
    comp.private_cache_dir()
    comp.store_cubin(fake_gpu.path, b"BAD cubin with a valid digest")
    writes = []
    real = comp.atomic_write
    monkeypatch.setattr(comp, "atomic_write", lambda p, d, **k: (writes.append(os.fspath(p)), real(p, d, **k)))
    k = comp.compile_kernel(KINFO)
    assert k[2] == fake_gpu.compiled[0] and fake_gpu.path.read_bytes() == fake_gpu.compiled[0]
    assert writes == [str(fake_gpu.path), str(fake_gpu.digest)]  # both replaced through atomic_write
    assert sorted(p.name for p in fake_gpu.path.parent.iterdir()) == sorted([fake_gpu.path.name, fake_gpu.digest.name])


def test_a_fresh_cubin_that_cannot_load_is_a_compile_error(fake_gpu, monkeypatch):
    monkeypatch.setattr(comp, "nvrtc_compile", lambda kinfo, arch="sm_90": b"BAD always")
    with pytest.raises(comp.CompileError, match="cannot load kernel 'naive_conv_fwd'"):
        comp.compile_kernel(KINFO)


def test_compile_refuses_a_cache_dir_of_another_user(fake_gpu, cache, monkeypatch):
    cache.mkdir(parents=True, mode=0o700)
    owner = cache.stat().st_uid
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    with pytest.raises(comp.CompileError, match="owned by uid"):
        comp.compile_kernel(KINFO)
    assert not comp.is_compiled(KINFO)
    assert fake_gpu.compiled == [] and list(cache.iterdir()) == []


@pytest.mark.gpu
def test_the_binary_cache_on_the_gpu(monkeypatch, tmp_path):
    """Real NVRTC and CuPy: a cubin is stored with its digest, loaded from the cache in a new process
    state without compiling, and a tampered one is compiled again before anything is loaded."""
    import cupy

    from miofind.registry import get_solver
    from miofind.problem import ProblemDescription

    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path / "cubin"))
    monkeypatch.setattr(comp, "_module_cache", {})
    p = ProblemDescription.make("F", n=1, c=4, k=4, in_size=(8, 8), filter_size=3, pads=1)
    kinfo = get_solver("ConvDirectNaiveConvFwd").get_solution(p).kernels[0]
    calls = []
    real = comp.nvrtc_compile
    # only this kernel's compiles count: another test's background thread in this worker (a deferred candidate,
    # the float64 reference) may compile its own kernels meanwhile (bench/results/session-btma/call5/)
    monkeypatch.setattr(comp, "nvrtc_compile",
                        lambda k, arch="sm_90": (k == kinfo and calls.append(k), real(k, arch))[1])
    k1 = comp.compile_kernel(kinfo)
    path = tmp_path / "cubin" / f"{comp.binary_key(kinfo, comp._device_arch())}.cubin"
    good = path.read_bytes()
    assert len(calls) == 1 and good[:4] == b"\x7fELF" and isinstance(k1, cupy.RawKernel)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    monkeypatch.setattr(comp, "_module_cache", {})
    assert comp.is_compiled(kinfo) and comp.compile_kernel(kinfo).kernel.ptr and len(calls) == 1
    # a cubin damaged on disk (digest no longer matches) is rebuilt, not loaded
    path.write_bytes(good[:100] + b"\0" * (len(good) - 100))
    monkeypatch.setattr(comp, "_module_cache", {})
    assert not comp.is_compiled(kinfo)
    assert comp.compile_kernel(kinfo).kernel.ptr and len(calls) == 2 and comp.cached_cubin(path) is not None
