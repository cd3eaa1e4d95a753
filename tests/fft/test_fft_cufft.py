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


# -- plans made ahead (prefetch_plans / plan) ----------------------------------------------------------------------


class _Plan:
    """An InPlacePlan stand-in recording its arguments; ``gate`` (an Event) holds its making until set."""

    made: list = []
    gate = None

    def __init__(self, dims, kind, batch, plane):
        if _Plan.gate is not None:
            assert _Plan.gate.wait(5)
        self.args = (tuple(dims), kind, batch, plane)
        _Plan.made.append(self.args)


@pytest.fixture
def pool(monkeypatch):
    import sys
    import types
    monkeypatch.setattr(fft_cufft, "_pool", {})
    monkeypatch.setattr(fft_cufft, "_making", {})
    monkeypatch.setattr(fft_cufft, "InPlacePlan", _Plan)
    _Plan.made, _Plan.gate = [], None
    # no GPU here: a CuPy stand-in whose current device is 0
    rt = types.SimpleNamespace(getDevice=lambda: 0, setDevice=lambda d: None)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=rt)))
    yield fft_cufft


def test_prefetched_plans_are_handed_out_once(pool):
    specs = [((16, 24), pool.CUFFT_R2C, 32, 200), ((16, 24), pool.CUFFT_C2R, 64, 200)]
    t = pool.prefetch_plans(specs, 0)
    t.join(5)
    assert _Plan.made == [((16, 24), pool.CUFFT_R2C, 32, 200), ((16, 24), pool.CUFFT_C2R, 64, 200)]
    a = pool.plan((16, 24), pool.CUFFT_R2C, 32, 200)
    assert a.args == ((16, 24), pool.CUFFT_R2C, 32, 200) and len(_Plan.made) == 2      # the prefetched one
    b = pool.plan((16, 24), pool.CUFFT_R2C, 32, 200)
    assert b is not a and len(_Plan.made) == 3         # a second stream's plan: made anew, never shared
    assert pool.plan((16, 24), pool.CUFFT_C2R, 64, 200).args[1] == pool.CUFFT_C2R and len(_Plan.made) == 3
    assert pool._pool == {} and pool._making == {}


def test_plan_waits_for_the_thread_making_it(pool):
    import threading
    _Plan.gate = threading.Event()
    t = pool.prefetch_plans([((8,), pool.CUFFT_R2C, 4, 5)], 0)
    assert pool.prefetch_plans([((8,), pool.CUFFT_R2C, 4, 5)], 0) is None      # being made: not twice
    got = []
    waiter = threading.Thread(target=lambda: got.append(pool.plan((8,), pool.CUFFT_R2C, 4, 5)))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and not got        # waits rather than making its own
    _Plan.gate.set()
    waiter.join(5)
    t.join(5)
    assert len(got) == 1 and _Plan.made == [((8,), pool.CUFFT_R2C, 4, 5)]


def test_other_arguments_or_device_make_their_own(pool):
    pool.prefetch_plans([((8,), pool.CUFFT_R2C, 4, 5)], 1).join(5)      # another device's
    assert pool.plan((8,), pool.CUFFT_R2C, 4, 5) is not None and len(_Plan.made) == 2
    assert pool.plan((8,), pool.CUFFT_R2C, 8, 5) is not None and len(_Plan.made) == 3
    assert list(pool._pool) == [(1, (8,), pool.CUFFT_R2C, 4, 5)]


def test_a_failed_plan_leaves_the_key_to_the_caller(pool, monkeypatch):
    class Broken(_Plan):
        def __init__(self, *a):
            raise RuntimeError("cufftMakePlanMany64 failed: CUFFT_INVALID_SIZE (8)")

    monkeypatch.setattr(pool, "InPlacePlan", Broken)
    pool.prefetch_plans([((8,), pool.CUFFT_R2C, 4, 5)], 0).join(5)
    assert pool._pool == {} and pool._making == {}
    with pytest.raises(RuntimeError, match="CUFFT_INVALID_SIZE"):      # met and reported where the plan is needed
        pool.plan((8,), pool.CUFFT_R2C, 4, 5)


def test_the_pool_keeps_at_most_its_keys(pool, monkeypatch):
    monkeypatch.setattr(pool, "PLAN_POOL_KEYS", 3)
    pool.prefetch_plans([((8 * i,), pool.CUFFT_R2C, 4, 5) for i in range(1, 6)], 0).join(5)
    assert [k[1] for k in pool._pool] == [(24,), (32,), (40,)]         # the oldest dropped


def test_the_fft_solvers_prefetch_their_solutions_plans(pool, monkeypatch):
    """FFTBase.prefetch asks for exactly the two plans its solution's factory makes (fft_base.plan_specs), and a
    find's prefetch_solvers starts it for the FFT candidates alone; MIOFIND_FFT_PREFETCH=0 starts nothing."""
    from miofind import find
    from miofind.solvers import fft_base
    p = ProblemDescription.make("F", n=16, c=160, k=160, in_size=(17, 17), filter_size=(1, 7), pads=(0, 3))
    cands, _ = candidates(p)
    fft = [s for s in cands if s.family == "fft"]
    assert fft and [s.id for s in fft] == ["ConvFFTFwd"]
    asked = []
    monkeypatch.setattr(pool, "prefetch_plans", lambda specs, dev: (asked.append((list(specs), dev)), object())[1])
    assert find.prefetch_solvers(p, cands) == ["ConvFFTFwd"]
    geo = fft_base.geometry(p)
    assert asked == [([(geo.fft_dims, pool.CUFFT_R2C, 16 * geo.a_ch, geo.FP),
                       (geo.fft_dims, pool.CUFFT_C2R, 16 * geo.o_ch, geo.FP)], 0)]
    monkeypatch.setenv("MIOFIND_FFT_PREFETCH", "0")
    assert find.prefetch_solvers(p, cands) == [] and len(asked) == 1
    monkeypatch.setenv("MIOFIND_FFT_PREFETCH", "yes")
    with pytest.raises(ValueError, match=r"^MIOFIND_FFT_PREFETCH='yes': expected 1"):
        find.prefetch_solvers(p, cands)
