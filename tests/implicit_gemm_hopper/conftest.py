"""Shared by the Hopper family's tests."""

import pytest

from miofind.solvers import implicit_gemm_hopper_base as hb


@pytest.fixture
def no_gpu_arch(monkeypatch):
    """The family's device check as without a visible GPU (CPU tests of claims, configs and builds for sm_90a)."""
    monkeypatch.setattr(hb, "device_arch", lambda: None)
