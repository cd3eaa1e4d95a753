"""The cuFFT binding's version prefetch (solvers/fft_cufft.py): a background read, once per process, of the
version of the library that opens by its soname, which ``version()`` then answers without loading the binding
(CuPy's cufft module); a find starts it for F and B. CPU only."""

from __future__ import annotations


import pytest

from miofind.find import candidates
from miofind.problem import ProblemDescription
from miofind.solvers import fft_cufft


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(fft_cufft, "_prefetching", [])
    monkeypatch.setattr(fft_cufft, "_lib", None)
    monkeypatch.setattr(fft_cufft, "_soname_version", None)
    fft_cufft.version.cache_clear()
    yield fft_cufft
    fft_cufft.version.cache_clear()


class _Lib:
    """A libcufft stand-in: cufftGetVersion writes ``v``."""

    def __init__(self, v, opened):
        self.v, self.opened = v, opened

    def cufftGetVersion(self, ptr):
        ptr._obj.value = self.v
        return 0


def test_no_soname_opens_no_thread(fresh, monkeypatch):
    tried = []

    def cdll(name):
        tried.append(name)
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(fresh.ctypes, "CDLL", cdll)
    fresh.prefetch_version()
    fresh._prefetching[0].join(5)
    assert tried == list(fresh._SONAMES) and fresh._soname_version is None
    # version() then reads it through the binding, as before the prefetch existed
    monkeypatch.setattr(fresh, "library", lambda: _Lib(11900, []))
    assert fresh.version() == 11900


def test_prefetch_reads_the_version_once_per_process(fresh, monkeypatch):
    opened = []
    monkeypatch.setattr(fresh.ctypes, "CDLL", lambda name: (opened.append(name), _Lib(12000, opened))[1])
    monkeypatch.setattr(fresh, "library", lambda: pytest.fail("the binding loaded for the version alone"))
    fresh.prefetch_version()
    fresh.prefetch_version()
    assert fresh.version() == 12000          # waits for the thread; no binding loaded
    assert opened == [fresh._SONAMES[0]] and len(fresh._prefetching) == 1 and fresh._soname_version == 12000


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
