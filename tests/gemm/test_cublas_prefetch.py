"""cuBLASLt's background initialisation (``miofind.cublas.prefetch``): once per device, never raises."""

import logging

from miofind import cublas


def test_prefetch_starts_one_thread_per_device(monkeypatch):
    calls = []
    monkeypatch.setattr(cublas, "_prefetched", {})
    monkeypatch.setattr(cublas, "_prefetch", calls.append)
    for dev in (0, 0, 1, 0):
        cublas.prefetch(dev)
    cublas._join_prefetch()
    assert sorted(calls) == [0, 1] and sorted(cublas._prefetched) == [0, 1]


def test_a_failing_prefetch_is_only_logged(monkeypatch, caplog):
    class Boom(Exception):
        pass

    def lt_gemm(*a, **k):
        raise Boom("no cuBLASLt here")

    monkeypatch.setattr(cublas, "LtGemm", lt_gemm)
    with caplog.at_level(logging.DEBUG, logger="miofind.cublas"):
        cublas._prefetch(0)      # no exception escapes the thread's function
    assert "cuBLASLt prefetch on device 0 failed" in caplog.text
