"""Shared fixtures: the `gpu` marker is skipped cleanly where no usable CUDA GPU exists."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tests/shapes.py, shared by every family

# The bridge GEMM (miofind.lt_bridge) stands in for cuBLASLt only until the library is set up in a process, so
# which path a test's first GEMM takes would depend on test order; tests that compare runs bit for bit need one
# path. tests/gemm/test_lt_bridge.py turns it on in the fresh processes it tests it in.
os.environ.setdefault("MIOFIND_LT_BRIDGE", "0")


def _gpu_reason():
    try:
        from miofind.device import NoGPUError, current_device
        current_device()
        return None
    except NoGPUError as e:
        return str(e)
    except Exception as e:  # pragma: no cover
        return f"no GPU: {e}"


def pytest_collection_modifyitems(config, items):
    gpu_items = [it for it in items if "gpu" in it.keywords]
    if not gpu_items:
        return
    reason = _gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for it in gpu_items:
        it.add_marker(skip)


@pytest.fixture
def tmp_db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'finddb.sqlite'}"
    monkeypatch.setenv("MIOFIND_DB", url)
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", "none")  # tests that want a system DB name one
    return url


@pytest.fixture(autouse=True)
def _fresh_find_memo():
    """Each test starts without answers memoised by an earlier test's find_solutions/get_solutions."""
    from miofind import api
    api._memo.clear()
    yield


@pytest.fixture
def big_selected(request):
    """The 2^31-element index-boundary tests (markers ``gpu`` and ``big``): skip unless selected; with
    MIOFIND_NO_MEMPOOL=1 (scripts/sanitize-boundaries), every array is its own cudaMalloc of its exact size, so that
    memcheck sees an access just past a tensor's end."""
    if "big" not in (request.config.getoption("-m") or "") and os.environ.get("MIOFIND_BIG_TESTS") != "1":
        pytest.skip("2^31-element problems (up to ~60 GB each): select them with -m big or MIOFIND_BIG_TESTS=1 "
                    "(MIOFIND_BIG_TESTS=1 XDIST=2 scripts/gpu-check tests/core/test_index_boundaries_gpu.py "
                    "tests/implicit_gemm_hopper/test_index_boundaries.py; scripts/sanitize-boundaries)")
    if os.environ.get("MIOFIND_NO_MEMPOOL") != "1":
        yield
        return
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()
    cupy.cuda.set_allocator(None)
    try:
        yield
    finally:
        cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)
