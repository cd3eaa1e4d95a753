"""cuBLASLt's first-use set-up in a background thread (``miofind.cublas.prefetch``), which a find starts:
on the CPU, once per device, a thread the interpreter waits for, never raising; on the GPU, a process
whose first GEMM follows the prefetch gets the right result, and the find starts it."""

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from miofind import cublas

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(cublas, "_warming", {})
    monkeypatch.setattr(cublas, "_lt_handles", {})


def test_prefetch_starts_one_waited_thread_per_device(fresh, monkeypatch):
    gate, seen = threading.Event(), []
    monkeypatch.setattr(cublas, "_warm", lambda dev: seen.append(dev) or gate.wait(30))
    cublas.prefetch(0)
    cublas.prefetch(0)
    cublas.prefetch(1)
    threads = dict(cublas._warming)
    assert sorted(threads) == [0, 1] and all(not t.daemon for t in threads.values())
    assert all(t.name == "miofind-cublaslt-init" for t in threads.values())
    gate.set()
    for t in threads.values():
        t.join(30)
    assert sorted(seen) == [0, 1]
    cublas.prefetch(0)                       # done once: not again
    assert cublas._warming == threads


def test_prefetch_skips_a_device_with_a_handle(fresh):
    cublas._lt_handles[0] = 1234
    cublas.prefetch(0)
    assert cublas._warming == {}


def test_warm_never_raises(fresh, monkeypatch):
    """Without a GPU (or a library), the thread ends quietly: the solution that needs cuBLAS reports it."""
    def boom(*a, **k):
        raise RuntimeError("no libcublasLt")
    monkeypatch.setattr(cublas, "LtGemm", boom)
    cublas._warm(0)


CHILD = r"""
import cupy, numpy as np
cupy.cuda.Device(0).use()
from miofind import cublas
cublas.prefetch(0)
m, n, k, batch = 96, 80, 64, 3
a = cupy.random.standard_normal((batch, k, m), dtype=cupy.float32)   # column-major m x k per batch
b = cupy.random.standard_normal((batch, n, k), dtype=cupy.float32)   # column-major k x n
c = cupy.full((batch, n, m), cupy.nan, dtype=cupy.float32)
g = cublas.LtGemm(cublas.OP["N"], cublas.OP["N"], m, n, k, cublas.R_32F, m, m * k, k, k * n, cublas.R_32F, m, m * n,
                  batch, cublas.COMPUTE_32F, 0, False)
g.call(cupy.cuda.get_current_stream().ptr, a.data.ptr, b.data.ptr, c.data.ptr)
want = np.einsum("bkm,bnk->bnm", a.get().astype(np.float64), b.get().astype(np.float64))
err = float(np.max(np.abs(c.get() - want)) / np.max(np.abs(want)))
assert err < 1e-5, err
print("ok", cublas._warming[0].name, err)
"""


@pytest.mark.gpu
def test_a_gemm_right_after_the_prefetch_is_right():
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("ok miofind-cublaslt-init"), r.stdout + r.stderr


@pytest.mark.gpu
def test_a_find_starts_the_prefetch(monkeypatch, tmp_path):
    import cupy

    from miofind import find_solutions
    from miofind.problem import ProblemDescription

    started = []
    monkeypatch.setattr(cublas, "prefetch", lambda dev: started.append(dev))
    p = ProblemDescription.make("F", n=1, c=8, k=8, in_size=(6, 6), filter_size=3, pads=1)
    find_solutions(p, mode="normal", solvers=["GemmFwdRest"], db=str(tmp_path / "user.sqlite"))
    assert started == [cupy.cuda.runtime.getDevice()]
