"""cuBLASLt's first query of each GEMM kind made ahead (``miofind.cublas.gemm_kinds``, ``query_kinds``): a find with a
GEMM candidate names its problem's kinds, so that its 16-bit or TF32 GEMM does not pay the library's first query
of that type (70-120 ms on an H200) inside the candidate's verification.

CPU: the kinds are those ``solvers/gemm_base.Blas`` plans; each kind is queried once per process, in a thread
that waits for the set-up. GPU: in a fresh process, a find of an FP16 problem with a GEMM candidate leaves the
FP16 kinds queried, and a GEMM of that kind planned afterwards runs and gives the right product.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from miofind import cublas

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("dtype,math", [("FP32", "strict"), ("FP32", "tf32"), ("FP16", "strict"), ("BF16", "strict")])
def test_kinds_are_those_the_gemm_solvers_plan(dtype, math):
    from solvers.gemm_base import Blas

    b = Blas(dtype, math)
    kinds = cublas.gemm_kinds(dtype, math)
    assert (b.io_type, b.io_type, b.compute) in kinds             # C in the data type
    if dtype != "FP32":
        assert (b.io_type, b.f32_type, b.compute) in kinds        # C in float (c_f32)
        assert len(kinds) == 2
    else:
        assert len(kinds) == 1


def test_no_kinds_for_other_types():
    assert cublas.gemm_kinds("FP64", "strict") == () and cublas.gemm_kinds("INT8", "strict") == ()


@pytest.fixture
def recorded(monkeypatch):
    """``query_kinds`` on a fresh record of queried kinds, its thread's work recorded instead of made."""
    calls, done = [], threading.Event()
    monkeypatch.setattr(cublas, "_kinds_queried", set())
    monkeypatch.setattr(cublas, "_kind_threads", [])
    monkeypatch.setattr(cublas, "_exit_hook", [True])

    def fake(dev, kinds):
        calls.append((dev, kinds))
        done.set()

    monkeypatch.setattr(cublas, "_query_kinds", fake)
    return calls


def _join():
    for t in list(cublas._kind_threads):
        t.join(10)


def test_each_kind_is_queried_once_per_process(recorded):
    fp16 = cublas.gemm_kinds("FP16", "strict")
    cublas.query_kinds(fp16, dev=0)
    _join()
    cublas.query_kinds(fp16, dev=0)                                   # asked again: no thread
    cublas.query_kinds(fp16 + cublas.gemm_kinds("BF16", "strict"), dev=0)
    _join()
    assert recorded == [(0, fp16), (0, cublas.gemm_kinds("BF16", "strict"))]
    assert len(cublas._kind_threads) == 2


def test_prefetch_names_kinds_after_the_setup(recorded, monkeypatch):
    """Once cuBLASLt is set up (or its set-up started), ``prefetch_lt(kinds)`` still queries new kinds."""
    monkeypatch.setattr(cublas, "_lt_ready", True)
    monkeypatch.setattr(cublas, "runtime", lambda: type("R", (), {"getDevice": staticmethod(lambda: 3)})())
    cublas.prefetch_lt(cublas.gemm_kinds("FP32", "tf32"))
    _join()
    assert recorded == [(3, cublas.gemm_kinds("FP32", "tf32"))]


def test_the_kinds_thread_waits_for_the_setup(monkeypatch):
    """``_query_kinds`` joins the set-up thread before its first query: the two never query side by side."""
    order = []
    release = threading.Event()

    def setup_body():
        release.wait(10)
        order.append("setup")

    setup = threading.Thread(target=setup_body)
    setup.start()
    monkeypatch.setattr(cublas, "_setup", setup)

    class FakeGemm:
        def __init__(self, *args):
            order.append(("kind", args[5], args[10], args[14]))

        def _plan(self, align):
            order.append("plan")

    monkeypatch.setattr(cublas, "LtGemm", FakeGemm)
    monkeypatch.setattr(cublas, "runtime", lambda: type("R", (), {"setDevice": staticmethod(lambda d: None)})())
    t = threading.Thread(target=cublas._query_kinds, args=(0, cublas.gemm_kinds("BF16", "strict")))
    t.start()
    t.join(0.2)
    assert t.is_alive() and order == []                              # waiting for the set-up
    release.set()
    t.join(10)
    setup.join(10)
    assert order == ["setup", ("kind", cublas.R_16BF, cublas.R_16BF, cublas.COMPUTE_32F), "plan",
                     ("kind", cublas.R_16BF, cublas.R_32F, cublas.COMPUTE_32F), "plan"]


CHILD = r"""
import time
import cupy, numpy as np
import miofind
from miofind import cublas

p = miofind.ProblemDescription.make("F", n=4, c=64, k=64, in_size=(14, 14), filter_size=3, pads=1, dtype="FP16",
                                    layout="NCHW")
t0 = time.perf_counter()
r = miofind.find_solutions(p, solvers=["GemmFwdRest"], store=False, mode="benchmark")
find_ms = (time.perf_counter() - t0) * 1e3
assert r and r[0].verified, (r, r.failures)
for t in cublas._kind_threads:
    t.join(60)
assert set(cublas.gemm_kinds("FP16", "strict")) <= cublas._kinds_queried, cublas._kinds_queried
m, n, kk = 96, 80, 112
rng = np.random.default_rng(5)
a = rng.uniform(-1, 1, (kk, m)).astype(np.float16)
b = rng.uniform(-1, 1, (n, kk)).astype(np.float16)
g = cublas.LtGemm(cublas.OP["N"], cublas.OP["N"], m, n, kk, cublas.R_16F, m, 0, kk, 0, cublas.R_32F, m, 0, 1,
                  cublas.COMPUTE_32F, 0, False)
dc = cupy.full((n, m), cupy.nan, dtype=cupy.float32)
s = cupy.cuda.Stream(non_blocking=True)
da, db = cupy.asarray(a), cupy.asarray(b)     # kept: the call reads them after this line
g.call(s.ptr, da.data.ptr, db.data.ptr, dc.data.ptr)
s.synchronize()
ref = b.astype(np.float64) @ a.astype(np.float64)
err = float(np.abs(cupy.asnumpy(dc) - ref).max() / np.abs(ref).max())
assert err < 1e-3, err
print(f"ok find {find_ms:.0f} ms, rel err {err:.1e}")
"""


@pytest.mark.gpu
def test_a_find_queries_its_problems_kinds(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "MIOFIND_DB": f"sqlite:///{tmp_path / 'user.sqlite'}"}
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=REPO, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("ok "), out.stdout


def test_a_failed_query_still_marks_its_kind_ready(monkeypatch):
    """A kind whose query fails is marked ready all the same: no GEMM of it stays on the bridge for good."""
    monkeypatch.setattr(cublas, "_setup", None)
    monkeypatch.setattr(cublas, "_kinds_ready", set())

    def broken(*args):
        raise RuntimeError("no cuBLASLt here")

    monkeypatch.setattr(cublas, "LtGemm", broken)
    monkeypatch.setattr(cublas, "runtime", lambda: type("R", (), {"setDevice": staticmethod(lambda d: None)})())
    kinds = cublas.gemm_kinds("FP16", "strict")
    cublas._query_kinds(0, kinds)
    assert cublas._kinds_ready == set(kinds)


def test_all_kinds_cover_every_data_type_and_math():
    kinds = cublas.all_gemm_kinds()
    for dtype in ("FP32", "FP16", "BF16"):
        for math in ("strict", "tf32"):
            assert set(cublas.gemm_kinds(dtype, math)) <= set(kinds)
    assert len(kinds) == len(set(kinds)) == 6


def test_settle_queries_every_kind_and_waits_for_them(recorded, monkeypatch):
    """``settle`` (what steady-state benchmarks start with) leaves no GEMM of any data type on the bridge: it queries
    every kind and returns once the set-up and those queries have."""
    monkeypatch.setattr(cublas, "_lt_ready", True)
    monkeypatch.setattr(cublas, "_setup", None)
    monkeypatch.setattr(cublas, "runtime", lambda: type("R", (), {"getDevice": staticmethod(lambda: 1)})())
    release = threading.Event()
    monkeypatch.setattr(cublas, "_query_kinds", lambda dev, kinds: (release.wait(10), recorded.append((dev, kinds))))
    done = threading.Thread(target=cublas.settle)
    done.start()
    done.join(0.2)
    assert done.is_alive() and recorded == []                        # waiting for the kinds' queries
    release.set()
    done.join(10)
    assert not done.is_alive() and recorded == [(1, cublas.all_gemm_kinds())]
