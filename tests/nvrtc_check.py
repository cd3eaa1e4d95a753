"""Shared by the tests that compile kernels with NVRTC and no GPU (CI's sm_90/sm_90a builds)."""

from __future__ import annotations

import os

import pytest


def nvrtc_or_skip() -> None:
    """Skip the test when NVRTC or the CUDA headers are missing here; in CI (``CI`` set), fail instead."""
    try:
        from cupy_backends.cuda.libs import nvrtc  # noqa: F401
        from miofind.compile import cuda_include_dirs
        if not cuda_include_dirs():
            raise ImportError("no cuda_fp16.h found (pip install 'cuda-toolkit[nvrtc,cudart]')")
    except Exception as e:
        if os.environ.get("CI"):
            pytest.fail(f"NVRTC unavailable in CI: {e}")
        pytest.skip(f"NVRTC unavailable: {e}")


def assert_cubins(kernels, arch: str = "sm_90a") -> None:
    """Each of ``kernels`` (KernelInfo) compiles with NVRTC for ``arch`` to an ELF cubin; a failure names the kernel and
    its macros. Call ``nvrtc_or_skip`` first."""
    from miofind.compile import nvrtc_compile
    for k in kernels:
        assert nvrtc_compile(k, arch)[:4] == b"\x7fELF", (k.name, dict(k.macros))


def ptxas_log(kinfo) -> str:
    """ptxas's verbose log (``-Xptxas=-v``) of compiling ``kinfo`` with NVRTC: registers, spills, and the advisories of
    serialised wgmma or injected waits. Call ``nvrtc_or_skip`` first."""
    from cupy_backends.cuda.libs import nvrtc

    from miofind.compile import _options, kernel_source, pre_includes
    pre = pre_includes(kinfo)
    prog = nvrtc.createProgram(kernel_source(kinfo.source), kinfo.source, [kernel_source(n).encode() for n in pre],
                               [n.encode() for n in pre])
    try:
        nvrtc.compileProgram(prog, [*_options(kinfo), "-Xptxas=-v"])
        log = nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return log.decode() if isinstance(log, bytes) else log
