"""The FFT candidate's cuFFT plans made ahead (solvers/fft_cufft.prefetch, plan; fft_base.prefetch_plans;
find.prefetch_fft): a find's miss makes them in a thread, the candidate's preparation takes them. CPU tests with a
stand-in plan class; on the GPU a find that takes them and verifies."""

from __future__ import annotations

import threading

import pytest

from miofind import find
from miofind.problem import ProblemDescription
from miofind.solvers import fft_base, fft_cufft


class _Plan:
    """An InPlacePlan stand-in: records what it was made for; ``gate`` (an Event) holds its making; ``fail`` raises."""

    made: list = []
    gate: threading.Event | None = None
    fail = False

    def __init__(self, dims, kind, batch, plane):
        if _Plan.gate is not None:
            _Plan.gate.wait(10)
        if _Plan.fail:
            raise RuntimeError("cufftMakePlanMany64 failed: CUFFT_ALLOC_FAILED (2)")
        self.spec = (tuple(dims), kind, batch, plane)
        self.thread = threading.current_thread().name
        _Plan.made.append(self)


@pytest.fixture
def pool(monkeypatch):
    monkeypatch.setattr(fft_cufft, "InPlacePlan", _Plan)
    monkeypatch.setattr(fft_cufft, "_device", lambda: 0)
    monkeypatch.setattr(fft_cufft, "_thread_setup", lambda dev: None)
    monkeypatch.setattr(fft_cufft, "_spare", {})
    monkeypatch.setattr(fft_cufft, "_making", {})
    monkeypatch.setattr(fft_cufft, "_pool_threads", [])
    monkeypatch.setattr(fft_cufft, "stats", {"prefetched": 0, "taken": 0})
    monkeypatch.setattr(_Plan, "made", [])
    monkeypatch.setattr(_Plan, "gate", None)
    monkeypatch.setattr(_Plan, "fail", False)
    return fft_cufft


R2C, C2R = fft_cufft.CUFFT_R2C, fft_cufft.CUFFT_C2R
SPECS = [([24, 40], R2C, 64, 24 * 21), ([24, 40], C2R, 96, 24 * 21)]


def test_a_solution_takes_the_plans_made_ahead(pool):
    t = pool.prefetch(SPECS)
    t.join(10)
    assert [p.thread for p in _Plan.made] == ["miofind-cufft-prefetch"] * 2
    got = pool.plan(*SPECS[1])
    assert got is _Plan.made[1] and pool.stats == {"prefetched": 2, "taken": 1}
    assert pool.plan(*SPECS[0]) is _Plan.made[0]
    again = pool.plan(*SPECS[0])           # a second stream's plan: none left, made here
    assert again is _Plan.made[2] and again.thread == threading.current_thread().name
    assert pool._spare == {} and pool._making == {}


def test_a_solution_waits_for_the_plan_being_made(pool):
    _Plan.gate = threading.Event()
    t = pool.prefetch(SPECS[:1])
    got = {}
    taker = threading.Thread(target=lambda: got.setdefault("plan", pool.plan(*SPECS[0])))
    taker.start()
    taker.join(0.2)
    assert taker.is_alive() and _Plan.made == []       # waiting on the prefetch, not making its own
    _Plan.gate.set()
    taker.join(10)
    t.join(10)
    assert len(_Plan.made) == 1 and got["plan"] is _Plan.made[0]


def test_nothing_made_twice_ahead(pool):
    _Plan.gate = threading.Event()
    t = pool.prefetch(SPECS)
    assert pool.prefetch(SPECS) is None                 # being made
    _Plan.gate.set()
    t.join(10)
    assert pool.prefetch(SPECS) is None                 # made, not taken
    assert len(_Plan.made) == 2
    other = pool.prefetch([([24, 40], R2C, 65, 24 * 21)])   # another batch is another plan
    other.join(10)
    assert len(_Plan.made) == 3


def test_a_plan_that_fails_ahead_is_made_and_reported_by_the_solution(pool):
    _Plan.fail = True
    pool.prefetch(SPECS[:1]).join(10)
    assert pool._spare == {} and pool._making == {}
    with pytest.raises(RuntimeError, match="CUFFT_ALLOC_FAILED"):
        pool.plan(*SPECS[0])
    _Plan.fail = False
    assert pool.plan(*SPECS[0]) is _Plan.made[0]


def test_spare_plans_are_bounded(pool, monkeypatch):
    monkeypatch.setattr(fft_cufft, "SPARE_LIMIT", 2)
    specs = [([16, 16], R2C, b, 16 * 9) for b in (1, 2, 3)]
    pool.prefetch(specs).join(10)
    left = [p.spec[2] for made in pool._spare.values() for p in made]
    assert left == [2, 3]                               # the oldest went


P = ProblemDescription.make("F", n=4, c=6, k=10, in_size=(17, 17), filter_size=(1, 7), pads=(0, 3))


@pytest.mark.parametrize("direction", "FB")
def test_plan_specs_are_the_solutions(direction):
    p = ProblemDescription.make(direction, n=4, c=6, k=10, in_size=(17, 17), filter_size=(1, 7), pads=(0, 3))
    geo = fft_base.geometry(p)
    a_ch, o_ch = (6, 10) if direction == "F" else (10, 6)
    assert fft_base.plan_specs(p) == [(geo.fft_dims, R2C, 4 * a_ch, geo.FP), (geo.fft_dims, C2R, 4 * o_ch, geo.FP)]


class _Cand:
    def __init__(self, family):
        self.family = family


def test_a_find_starts_it_for_an_fft_candidate_only(monkeypatch):
    started = []
    monkeypatch.setattr(fft_base, "prefetch_plans", lambda p: started.append(p) or object())
    monkeypatch.delenv("MIOFIND_FFT_PREFETCH", raising=False)
    assert not find.prefetch_fft(P, [_Cand("gemm"), _Cand("cudnn")]) and started == []
    assert find.prefetch_fft(P, [_Cand("gemm"), _Cand("fft")]) and started == [P]
    monkeypatch.setenv("MIOFIND_FFT_PREFETCH", "0")
    assert not find.prefetch_fft(P, [_Cand("fft")]) and started == [P]
    monkeypatch.setenv("MIOFIND_FFT_PREFETCH", "yes")
    with pytest.raises(ValueError, match="MIOFIND_FFT_PREFETCH='yes'"):
        find.prefetch_fft(P, [_Cand("fft")])


def test_a_failing_start_leaves_the_plans_to_the_candidate(monkeypatch):
    def broken(p):
        raise RuntimeError("no libcufft")

    monkeypatch.setattr(fft_base, "prefetch_plans", broken)
    monkeypatch.delenv("MIOFIND_FFT_PREFETCH", raising=False)
    assert find.prefetch_fft(P, [_Cand("fft")]) is False


@pytest.mark.gpu
@pytest.mark.parametrize("direction", "FB")
def test_a_find_takes_the_plans_and_verifies(direction, tmp_path):
    """A find of an FFT candidate on a transform size no other test uses: its plans are made ahead and taken, and
    the solution is verified against the float64 reference."""
    from miofind import find_solutions

    p = ProblemDescription.make(direction, n=3, c=5, k=7, in_size=(19, 23), filter_size=(1, 7), pads=(0, 3))
    sid = "ConvFFTFwd" if direction == "F" else "ConvFFTBwd"
    taken = fft_cufft.stats["taken"]
    res = find_solutions(p, solvers=[sid], db=f"sqlite:///{tmp_path / 'user.sqlite'}", mode="benchmark")
    assert res.timing["fft_prefetch"] is True
    assert len(res) == 1 and res[0].solver_id == sid and res[0].verified, (res.failures, list(res))
    assert fft_cufft.stats["taken"] == taken + 2
