"""cuBLASLt's once-per-process set-up in a background thread (``miofind.cublas.prefetch_lt``, which a find with a
GEMM candidate starts): in a fresh process, beside a CUDA-graph capture that the main thread runs in the default
global mode, the capture stays valid, and the GEMMs planned afterwards run and give the right product."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import threading, time
import cupy, numpy as np
from miofind import cublas, launch

x = cupy.arange(64, dtype=cupy.float32)
y = cupy.zeros(64, dtype=cupy.float32)
k = cupy.ElementwiseKernel("float32 a", "float32 b", "b = 2 * a", "twice")
st = cupy.cuda.Stream(non_blocking=False)
with st:
    k(x, y)                                   # compiled and loaded before the capture
    st.synchronize()
    y.fill(0)
    st.begin_capture(cupy.cuda.runtime.streamCaptureModeGlobal)
    t0 = time.perf_counter()
    cublas.prefetch_lt()                      # the library's set-up while the capture is open
    cublas._setup.join(60)
    setup_ms = (time.perf_counter() - t0) * 1e3
    k(x, y)
    g = st.end_capture()
    g.launch(st)
    st.synchronize()
assert bool((y == 2 * x).all()), "the capture's replay is wrong"
assert cublas._lt_handles, "the set-up thread made no cuBLASLt handle"
# a GEMM planned after the set-up: C (m x n, column-major) = A (m x k) B (k x n)
m, n, kk = 96, 80, 112
rng = np.random.default_rng(3)
a = rng.uniform(-1, 1, (kk, m)).astype(np.float32)   # column-major m x k as a C-order (k, m) array
b = rng.uniform(-1, 1, (n, kk)).astype(np.float32)
gemm = cublas.LtGemm(cublas.OP["N"], cublas.OP["N"], m, n, kk, cublas.R_32F, m, 0, kk, 0, cublas.R_32F, m, 0, 1,
                     cublas.COMPUTE_32F, 0, True)
da, db = cupy.asarray(a), cupy.asarray(b)
dc = cupy.full((n, m), cupy.nan, dtype=cupy.float32)
s2 = cupy.cuda.Stream(non_blocking=True)
gemm.call(s2.ptr, da.data.ptr, db.data.ptr, dc.data.ptr)
s2.synchronize()
ref = (b.astype(np.float64) @ a.astype(np.float64))
err = float(np.abs(cupy.asnumpy(dc) - ref).max() / np.abs(ref).max())
assert err < 1e-5, err
print(f"ok setup {setup_ms:.0f} ms, rel err {err:.1e}")
"""


@pytest.mark.gpu
def test_setup_thread_beside_a_global_capture():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=REPO, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("ok "), out.stdout
