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
