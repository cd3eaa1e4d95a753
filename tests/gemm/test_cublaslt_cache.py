"""cuBLASLt's algorithm kept between processes (``cublas.AlgoCache``), without a GPU: the file's round
trip, a damaged or foreign file ignored, the switch; on the GPU, a planned GEMM reused from the file."""

import json

import pytest

from miofind import cublas


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path / "kc"))
    monkeypatch.delenv("MIOFIND_CUBLASLT_CACHE", raising=False)
    c = cublas.AlgoCache()
    c._name = "cublaslt-algos-test.json"       # the version and device part needs a GPU
    return c, tmp_path / "kc" / "cublaslt-algos-test.json"


ALGO = [1, 2, 3, 2 ** 64 - 1, 0, 5, 6, 7]


def test_round_trip_between_processes(cache):
    c, path = cache
    assert c.get("k1") is None
    c.put("k1", ALGO, 4096)
    assert c.get("k1") == (ALGO, 4096)
    assert json.loads(path.read_text()) == {"k1": [ALGO, 4096]}
    fresh = cublas.AlgoCache()          # another process: reads the file
    fresh._name = c._name
    assert fresh.get("k1") == (ALGO, 4096)
    fresh.put("k2", ALGO[::-1], 0)      # merges into what the file holds
    assert set(json.loads(path.read_text())) == {"k1", "k2"}


def test_damaged_entries_and_files_are_ignored(cache):
    c, path = cache
    path.parent.mkdir(mode=0o700, parents=True)
    path.write_text(json.dumps({"short": [[1, 2], 0], "neg": [[-1] * 8, 0], "ws": [ALGO, cublas.WORKSPACE_BYTES + 1],
                                "ok": [ALGO, 16], "text": "x"}))
    assert c.get("ok") == (ALGO, 16)
    assert all(c.get(k) is None for k in ("short", "neg", "ws", "text"))
    path.write_text("{not json")
    fresh = cublas.AlgoCache()
    fresh._name = c._name
    assert fresh.get("ok") is None
    fresh.put("ok", ALGO, 16)           # a damaged file is replaced
    assert json.loads(path.read_text()) == {"ok": [ALGO, 16]}


def test_switched_off(cache, monkeypatch):
    c, path = cache
    monkeypatch.setenv("MIOFIND_CUBLASLT_CACHE", "0")
    c.put("k", ALGO, 0)
    assert c.get("k") is None and not path.exists()
    monkeypatch.setenv("MIOFIND_CUBLASLT_CACHE", "yes")
    with pytest.raises(ValueError, match="MIOFIND_CUBLASLT_CACHE"):
        c.get("k")


@pytest.mark.gpu
def test_planned_gemm_reused_from_the_file(tmp_path, monkeypatch):
    import cupy

    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path / "kc"))
    monkeypatch.setattr(cublas, "algo_cache", cublas.AlgoCache())
    m, n, k = 96, 80, 72
    a = cupy.random.standard_normal((k, m), dtype=cupy.float32)     # column-major A (m x k)
    b = cupy.random.standard_normal((n, k), dtype=cupy.float32)
    want = (b.astype(cupy.float64) @ a.astype(cupy.float64))       # row-major view of D = A B, (n x m)

    def run(gemm):
        c = cupy.full((n, m), cupy.nan, dtype=cupy.float32)
        gemm.call(cupy.cuda.get_current_stream().ptr, a.data.ptr, b.data.ptr, c.data.ptr)
        cupy.cuda.runtime.deviceSynchronize()
        return c

    def make():
        return cublas.LtGemm(0, 0, m, n, k, cublas.R_32F, m, 0, k, 0, cublas.R_32F, m, 0, 1, cublas.COMPUTE_32F, 0,
                             False)
    first = make()
    asked = []
    monkeypatch.setattr(cublas.LtGemm, "_heuristic", lambda self, al, f=cublas.LtGemm._heuristic: asked.append(al)
                        or f(self, al))
    got = run(first)
    assert asked and cupy.allclose(got, want, rtol=1e-4, atol=1e-3)
    assert list((tmp_path / "kc").glob("cublaslt-algos-*.json"))
    monkeypatch.setattr(cublas, "algo_cache", cublas.AlgoCache())      # a new process's cache: reads the file
    asked.clear()
    got = run(make())
    assert not asked, "the stored algorithm was not reused"
    assert cupy.allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
def test_a_refused_stored_algorithm_is_asked_again(tmp_path, monkeypatch):
    """cuBLASLt refusing a stored algorithm (a status from cublasLtMatmul, here injected once) makes the
    heuristic choose again; the call is redone and its result is right."""
    import cupy

    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path / "kc"))
    monkeypatch.setattr(cublas, "algo_cache", cublas.AlgoCache())
    m, n, k = 64, 48, 32
    a = cupy.random.standard_normal((k, m), dtype=cupy.float32)
    b = cupy.random.standard_normal((n, k), dtype=cupy.float32)
    want = b.astype(cupy.float64) @ a.astype(cupy.float64)

    def make():
        return cublas.LtGemm(0, 0, m, n, k, cublas.R_32F, m, 0, k, 0, cublas.R_32F, m, 0, 1, cublas.COMPUTE_32F, 0,
                             False)
    c = cupy.empty((n, m), dtype=cupy.float32)
    make().call(cupy.cuda.get_current_stream().ptr, a.data.ptr, b.data.ptr, c.data.ptr)    # stores it
    monkeypatch.setattr(cublas, "algo_cache", cublas.AlgoCache())
    g = make()
    real_block, refused, asked = cublas.LtGemm._block, [], []

    def block(self, stream, align):
        blk = real_block(self, stream, align)
        if blk is not None and blk[6] is not None and not refused:          # from the file: refuse it once
            refused.append(align)
            return (*blk[:5], (lambda *ptrs: 15), blk[6])                     # CUBLAS_STATUS_NOT_SUPPORTED
        return blk
    monkeypatch.setattr(cublas.LtGemm, "_block", block)
    real_h = cublas.LtGemm._heuristic
    monkeypatch.setattr(cublas.LtGemm, "_heuristic", lambda self, al: asked.append(al) or real_h(self, al))
    c.fill(cupy.nan)
    g.call(cupy.cuda.get_current_stream().ptr, a.data.ptr, b.data.ptr, c.data.ptr)
    cupy.cuda.runtime.deviceSynchronize()
    assert refused and asked == refused
    assert cupy.allclose(c, want, rtol=1e-4, atol=1e-3)
