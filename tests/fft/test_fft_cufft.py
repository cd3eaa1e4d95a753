"""The cuFFT binding's version prefetch (solvers/fft_cufft.py): a background read that starts only
where the library opens by its soname, once per process, and that a find starts for F and B. CPU only."""

from __future__ import annotations

import threading

import pytest

from miofind.find import candidates
from miofind.problem import ProblemDescription
from miofind.solvers import fft_cufft


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(fft_cufft, "_prefetching", [])
    monkeypatch.setattr(fft_cufft, "_lib", None)
    return fft_cufft


def test_no_soname_opens_no_thread(fresh, monkeypatch):
    tried = []

    def cdll(name):
        tried.append(name)
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(fresh.ctypes, "CDLL", cdll)
    monkeypatch.setattr(fresh, "version", lambda: pytest.fail("version() read without a library"))
    fresh.prefetch_version()
    fresh._prefetching[0].join(5)
    assert tried == list(fresh._SONAMES)


def test_prefetch_reads_the_version_once_per_process(fresh, monkeypatch):
    read, opened = [], []
    done = threading.Event()
    monkeypatch.setattr(fresh.ctypes, "CDLL", lambda name: opened.append(name))
    monkeypatch.setattr(fresh, "version", lambda: (read.append(1), done.set(), 12000)[2])
    fresh.prefetch_version()
    fresh.prefetch_version()
    assert done.wait(5)
    fresh._prefetching[0].join(5)
    assert opened == [fresh._SONAMES[0]] and read == [1] and len(fresh._prefetching) == 1


@pytest.mark.parametrize("direction,starts", [("F", True), ("B", True), ("W", False)])
def test_a_find_starts_it_for_the_fft_directions(fresh, monkeypatch, direction, starts):
    started = []
    monkeypatch.setattr(fresh, "prefetch_version", lambda: started.append(1))
    p = ProblemDescription.make(direction, n=2, c=8, k=8, in_size=(9, 9), filter_size=(3, 3), pads=(1, 1))
    candidates(p)
    assert started == ([1] if starts else [])
    started.clear()
    candidates(p, ["ConvDirectNaiveConvFwd"] if direction == "F" else None)   # named solvers: never
    assert started == ([] if direction == "F" else [1] if starts else [])
